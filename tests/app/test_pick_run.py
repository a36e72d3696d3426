"""The run picker: named runs, and every page opening on the session's current run
(the one the last launch made or resumed) unless the person picked another one there."""
from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dcem.store.database import Store

ROOT = Path(__file__).resolve().parents[2]


def _picker_page() -> None:
    import streamlit as st

    from studio.widgets import pick_run, store

    db = store()
    st.write(f"picked {pick_run(db, key='overview_run') if db else None}")


def _picked(at: AppTest) -> str:
    return next(m.value for m in at.markdown if m.value.startswith("picked "))[len("picked "):]


@pytest.fixture
def runs(clinical_db: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """(newest run, older run): the clinical run and the synthetic ui-run."""
    monkeypatch.setenv("DCEM_DB", str(clinical_db))
    with Store(clinical_db) as store:
        return store.latest_run(), "ui-run"


def test_runs_are_named_and_the_newest_opens_without_a_current_run(runs: tuple[str, str]) -> None:
    newest, _ = runs
    at = AppTest.from_function(_picker_page, default_timeout=60).run()
    assert not at.exception and _picked(at) == newest
    options = at.selectbox(key="overview_run").options
    assert options[0].startswith(f"{newest} · clinical, ddxplus8, S2 × 1 seed, fake-a + fake-b · 20")
    assert options[1].startswith("ui-run · synthetic, S1/S3b × 1 seed · 20")


def test_a_page_opens_on_the_current_run_and_keeps_a_pick_until_the_next_launch(runs: tuple[str, str]) -> None:
    newest, older = runs
    at = AppTest.from_function(_picker_page, default_timeout=60)
    at.session_state["current_run"] = older  # a launch elsewhere in the session made it current
    at.run()
    assert _picked(at) == older
    at.selectbox(key="overview_run").set_value(newest).run()
    assert _picked(at) == newest
    at.run()
    assert _picked(at) == newest  # the person's own pick stays
    at.session_state["current_run"] = newest
    at.run()
    at.selectbox(key="overview_run").set_value(older).run()
    at.session_state["current_run"] = "syn-unstored"  # a launch that stored nothing yet
    at.run()
    assert _picked(at) == newest  # not listed: the newest run opens


def test_the_experiments_page_opens_on_the_current_run(runs: tuple[str, str]) -> None:
    _, older = runs
    at = AppTest.from_file(str(ROOT / "pages" / "experiments.py"), default_timeout=60)
    at.session_state["current_run"] = older
    at.run()
    assert not at.exception
    assert at.selectbox(key="exp_view_run").value == older


def test_a_run_preset_before_the_picker_counts_as_a_pick(runs: tuple[str, str]) -> None:
    """A deep link (the walkthrough's ?run=...) sets the picker's key before it is drawn."""
    newest, older = runs
    at = AppTest.from_function(_picker_page, default_timeout=60)
    at.session_state["current_run"] = newest
    at.run()
    assert _picked(at) == newest
    at.session_state["overview_run"] = older
    at.run()
    assert _picked(at) == older
    at.run()
    assert _picked(at) == older
