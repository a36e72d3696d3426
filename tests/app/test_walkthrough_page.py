"""Case walkthrough page: loads, steps through rounds, filters, reveals the truth."""
from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dcem.store.database import Store
from dcem.analysis.walkthrough import case_list

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
    assert len(at.metric) == 4 and any("Agent 1" in m.value for m in at.markdown)
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
