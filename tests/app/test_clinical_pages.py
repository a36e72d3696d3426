"""The walkthrough, what-if, review and overview pages on a clinical LLM run."""
from __future__ import annotations

import re

import shutil
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dcem.store.reviews import review_history
from dcem.store.database import Store
from dcem.store.case_reads import case_text
from studio.views.metric_tables import CLINICAL_TITLES

ROOT = Path(__file__).resolve().parents[2]


def _page(name: str, db: Path, monkeypatch: pytest.MonkeyPatch) -> AppTest:
    monkeypatch.setenv("DCEM_DB", str(db))
    return AppTest.from_file(str(ROOT / "pages" / f"{name}.py"), default_timeout=120)


def _facts(db: Path) -> tuple[str, str, str]:
    """(run id, a case steered in round 1, an escalated case) of the clinical run."""
    with Store(db) as store:
        run = store.latest_run("clinical")
        steered = store.con.execute(
            "SELECT min(case_id) FROM traces WHERE run_id = ? AND method = 'dcem' AND round = 1 "
            "AND action = 'DIFFERENTIAL_STEER'", [run]).fetchone()[0]
        escalated = store.con.execute(
            "SELECT min(case_id) FROM outcomes WHERE run_id = ? AND method = 'dcem' "
            "AND action = 'STOP_AND_ESCALATE'", [run]).fetchone()[0]
    assert steered and escalated, "the scripted run should steer and escalate some cases"
    return run, steered, escalated


def _text_of(db: Path, run: str, case: str) -> str:
    with Store(db) as store:
        text = case_text(store, run, case)
    assert text
    return text


def _no_tracebacks(at: AppTest) -> None:
    assert not at.exception
    assert not any("Traceback" in e.value for e in at.error)


# ------------------------------------------------------------------ walkthrough
def test_walkthrough_shows_case_text_turns_and_steer_cues(clinical_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run, steered, _ = _facts(clinical_db)
    at = _page("walkthrough", clinical_db, monkeypatch).run()
    _no_tracebacks(at)
    assert at.selectbox(key="run_id").value == run
    assert "Free discussion" in at.radio[0].options and at.radio[0].value == "dcem"
    at.selectbox(key="walk_case").set_value(steered).run()
    _no_tracebacks(at)
    assert at.expander[0].label.startswith("Case text") and at.expander[0].proto.expanded
    assert any(m.value == _text_of(clinical_db, run, steered) for m in at.markdown)
    agents = next(d.value for d in at.dataframe if "role" in d.value.columns)
    assert list(agents["model"]) == ["oracle-a", "oracle-b"] and "walk-in clinic" in agents["role"].iloc[1]
    assert at.subheader[0].value == "Round 1 of " + at.subheader[0].value.split(" of ")[1]
    assert "DIFFERENTIAL_STEER" in at.subheader[0].value
    assert any("answered **" in m.value and "p = " in m.value for m in at.markdown)
    probs = next(d.value for d in at.dataframe if d.value.index.name == "label")
    assert probs.shape == (8, 2) and ((probs.sum() - 1.0).abs() < 0.01).all()
    assert any(w.value.startswith("Challenge to Agent") and "sent with round 2" in w.value for w in at.warning)
    shown = [re.sub(r"\\(.)", r"\1", m.value) for m in at.markdown]  # the text the escaped Markdown shows
    assert any("Cues S(t)" in m and "`finding one`" in m for m in shown)
    at.button[1].click().run()  # Next: round 2 shows the steer note the agent received
    _no_tracebacks(at)
    assert at.subheader[0].value.startswith("Round 2 of ")
    assert any("costlier miss" in i.value for i in at.info)


@pytest.mark.parametrize("method, rounds", [("single", 1), ("free", 3), ("pool", 1), ("dcem_noesc", None)])
def test_walkthrough_every_method_of_a_clinical_run(clinical_db: Path, monkeypatch: pytest.MonkeyPatch,
                                                    method: str, rounds: int | None) -> None:
    at = _page("walkthrough", clinical_db, monkeypatch).run()
    at.radio[0].set_value(method).run()
    _no_tracebacks(at)
    title = at.subheader[0].value
    assert title.startswith("Round 1 of ")
    if rounds is not None:
        assert title.startswith(f"Round 1 of {rounds}: ")
        assert not any("eps_safe" in c.proto.spec for c in at.get("plotly_chart"))  # no mediator, no energy
    if method == "free":
        at.button[1].click().run()
        assert any("The other agent answered" in i.value for i in at.info)


def test_walkthrough_of_the_synthetic_run_is_unchanged(clinical_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    at = _page("walkthrough", clinical_db, monkeypatch).run()
    at.selectbox(key="run_id").set_value("ui-run").run()
    _no_tracebacks(at)
    assert at.radio[0].options == ["D-CEM", "D-CEM w/o escalation"]
    assert not at.expander and at.subheader[0].value.startswith("Round 1 of ")


# ---------------------------------------------------------------------- what-if
def _metric(at: AppTest, name: str) -> float:
    frame = next(d.value for d in at.dataframe if "current" in d.value.columns)
    return float(frame.loc[name, "current"])


def test_whatif_rescores_the_probability_reports(clinical_db: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "wi.duckdb"
    shutil.copy(clinical_db, db)
    at = _page("whatif", db, monkeypatch).run()
    _no_tracebacks(at)
    assert not at.error
    assert any("probability vectors" in m.value and "not asked again" in m.value for m in at.markdown)
    assert at.session_state["wi_loss"].shape == (8, 8)
    before = _metric(at, "certified_rate")
    assert before > 0.0
    at.slider(key="wi_eps_safe").set_value(0.0).run()
    _no_tracebacks(at)
    assert _metric(at, "certified_rate") < before
    risk = _metric(at, "risk")
    at.text_input(key="wi_lhigh").input("30").run()
    assert _metric(at, "risk") != risk  # an 8 x 8 {0, 1, l_high} loss re-scored every case
    next(t for t in at.text_input if t.label == "Preset name").set_value("clinical strict")
    at.button(key="FormSubmitter:wi_save-Save as preset").click().run()
    assert any("Saved preset" in s.value for s in at.success)
    at.selectbox(key="wi_run").set_value("ui-run").run()  # the 8-label settings do not leak
    _no_tracebacks(at)
    assert not at.error and at.session_state["wi_loss"].shape == (3, 3)
    at.selectbox(key="wi_preset_pick").set_value("clinical strict").run()
    next(b for b in at.button if b.label == "Apply preset").click().run()
    _no_tracebacks(at)
    assert any("loss matrix is for other labels" in i.value for i in at.info)
    assert at.session_state["wi_loss"].shape == (3, 3) and at.slider(key="wi_eps_safe").value == 0.0


# ----------------------------------------------------------------------- review
def test_review_shows_case_text_and_last_answers(clinical_db: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "rv.duckdb"
    shutil.copy(clinical_db, db)
    run, _, escalated = _facts(db)
    at = _page("review", db, monkeypatch).run()
    _no_tracebacks(at)
    at.selectbox(key="rv_case").set_value(escalated).run()
    assert any(m.value == _text_of(db, run, escalated) for m in at.markdown)
    answers = next(d.value for d in at.dataframe if "runner_up" in d.value.columns)
    assert list(answers["agent"]) == ["Agent A", "Agent B"] and answers["probability"].between(0, 1).all()
    assert any("last answer" in m.value for m in at.markdown)
    labels = at.selectbox(key="rv_label").options
    assert len(labels) == 8 and "GERD" in labels
    for label, reviewer in (("GERD", "dr a"), ("Pulmonary_embolism", "dr b")):
        at.selectbox(key="rv_label").set_value(label)
        at.text_input(key="rv_reviewer").set_value(reviewer)
        at.button(key="FormSubmitter:rv_form-Record review").click().run()
        assert any(f"Review of {escalated} recorded." in s.value for s in at.success)
    with Store(db) as store:
        history = review_history(store, run, escalated)
    assert list(history["final_label"]) == ["GERD", "Pulmonary_embolism"]  # appended, not overwritten


# --------------------------------------------------------------------- overview
def test_overview_lists_the_clinical_run(clinical_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run, _, _ = _facts(clinical_db)
    at = _page("overview", clinical_db, monkeypatch).run()
    _no_tracebacks(at)
    runs = at.dataframe[-1].value.set_index("run_id")
    assert runs.loc[run, "kind"] == "clinical" and runs.loc[run, "dataset"] == "ddxplus8"
    assert runs.loc[run, "scenarios"] == "S2" and runs.loc[run, "agents"] == "fake-a, fake-b"
    titles = [m.value.strip("*") for m in at.markdown]
    assert all(t in titles for t in CLINICAL_TITLES) and "ddxplus8" in at.caption[0].value
    at.selectbox(key="overview_run").set_value("ui-run").run()
    _no_tracebacks(at)
    assert "D-CEM" in list(at.dataframe[0].value["method"])
