"""Case walkthrough page: loads, steps through rounds beside the charts with the reason of each action,
filters, reveals the truth, warns of agents at chance level."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from studio.views.decision_view import DECISION_COLUMNS, HIGH_RISK_MARK
from studio.views.walkthrough import case_list, case_trace
from dcem.store.database import Store
from studio.charts import threshold_labels

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "pages" / "walkthrough.py")


@pytest.fixture()
def page(run_db: Path, monkeypatch: pytest.MonkeyPatch) -> AppTest:
    monkeypatch.setenv("DCEM_DB", str(run_db))
    return AppTest.from_file(PAGE, default_timeout=60)


def test_steps_through_rounds_with_buttons_and_slider(page: AppTest) -> None:
    at = page.run()
    assert not at.exception
    assert at.subheader[0].value.startswith("Round 1 of ")
    last = int(at.subheader[0].value.split(" of ")[1].split(":")[0])
    if last > 1:
        at.button[1].click().run()  # Next
        assert at.subheader[0].value.startswith("Round 2 of ")
        at.button[0].click().run()  # Previous
        assert at.subheader[0].value.startswith("Round 1 of ")
        at.slider(key="walk_round").set_value(last).run()
        assert at.subheader[0].value.startswith(f"Round {last} of {last}")
    assert len(at.metric) == 2 and any("Agent 1" in m.value for m in at.markdown)
    assert sum("round-label" in m.value for m in at.markdown) == 2  # decision and runner-up, wrapping
    assert any("not clinical advice" in c.value for c in at.caption)


def test_filters_and_teaching_mode(page: AppTest, run_db: Path) -> None:
    with Store(run_db) as db:
        cases = case_list(db, "ui-run")
    escalated = cases[cases["escalated"]]
    at = page.run()
    at.checkbox[1].check().run()  # escalated only
    assert not at.exception
    assert f"{len(escalated)} of {len(cases)} cases match." in [c.value for c in at.caption]
    assert len(escalated) > 0  # S3b escalates in this run
    assert at.selectbox(key="walk_case").value in set(escalated["case_id"])
    slider = at.slider(key="walk_round")  # an escalation needs at least W + 1 = 3 rounds
    slider.set_value(slider.max).run()
    assert any("human reviewer" in e.value for e in at.error)
    assert not any("True label" in i.value for i in at.info)
    at.toggle(key="walk_reveal").set_value(True).run()
    case = at.selectbox(key="walk_case").value
    truth = cases.set_index("case_id").loc[case, "truth"]
    assert any(f"True label: **{truth}**" in i.value for i in at.info)


def test_ex_post_confusion_tab(page: AppTest) -> None:
    at = page.run()
    at.selectbox(key="conf_scenario").set_value("S3b").run()
    at.slider(key="conf_round").set_value(3).run()
    assert not at.exception


def test_empty_store_says_what_to_do(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DCEM_DB", str(tmp_path / "empty.duckdb"))
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not at.exception
    assert any("No experiment results" in i.value for i in at.info)


def _column_with(at: AppTest, key: str):  # type: ignore[no-untyped-def]
    return next(c for c in at.columns if any(getattr(e, "key", None) == key for e in c))


def test_stepper_sits_beside_the_charts_and_says_why(page: AppTest, run_db: Path) -> None:
    with Store(run_db) as db:
        cases = case_list(db, "ui-run")
    at = page.run()
    at.checkbox[1].check().run()  # escalated only
    slider = at.slider(key="walk_round")
    slider.set_value(slider.max).run()
    stepper, energy, belief = (_column_with(at, k) for k in ("walk_round", "walk_energy", "walk_belief"))
    assert stepper is not energy and energy is not belief
    assert abs(stepper.weight + energy.weight + belief.weight - 1.0) < 1e-9  # one row of columns
    assert any(b.label == "Next ▶" for b in stepper.button)
    why = [m.value for m in stepper.markdown if m.value.startswith("**Why STOP_AND_ESCALATE:**")]
    assert len(why) == 1 and "> eps_low" in why[0] and why[0].endswith("escalate, the case goes to a human reviewer")
    case = at.selectbox(key="walk_case").value
    assert case in set(cases[cases["escalated"]]["case_id"])


def test_energy_chart_labels_the_thresholds_and_the_decision_has_its_loss(page: AppTest, run_db: Path) -> None:
    at = page.run()
    case = at.selectbox(key="walk_case").value
    with Store(run_db) as db:
        cfg = case_trace(db, "ui-run", case).config
    energy = next(c for c in at.get("plotly_chart") if c.key == "walk_energy").proto.spec
    safe, low = threshold_labels(cfg.eps_safe, cfg.eps_low)
    assert safe in energy and low in energy
    table = next(d.value for d in at.dataframe if list(d.value.columns) == DECISION_COLUMNS)
    shown = next(m.value for m in at.markdown if "round-label" in m.value and "Bayes decision" in m.value)
    decision = shown.split("overflow-wrap:break-word'>")[1].split("</span>")[0].replace("<wbr>", "")
    assert table["class"].tolist().count(f"{decision} (decision)") == 1
    assert (table["high-risk"] == HIGH_RISK_MARK).sum() >= 1
    assert not any("chance level" in w.value for w in at.warning)  # the synthetic agents beat chance


def test_clinical_run_warns_of_a_chance_agent_and_draws_horizontal_bars(clinical_db: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DCEM_DB", str(clinical_db))
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert not at.exception
    assert any(w.value.startswith("Agent B is at chance level on calibration") for w in at.warning)
    charts = {c.key: json.loads(c.proto.spec) for c in at.get("plotly_chart")}
    for key in ("walk_belief", "walk_turns_probs"):
        bars = [t for t in charts[key]["data"] if t["type"] == "bar"]
        assert bars and all(t["orientation"] == "h" for t in bars), key
        assert "Pulmonary<br>embolism" in bars[0]["y"]
