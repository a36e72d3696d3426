"""Experiments page: results views, launching a run, comparing runs, downloads."""
from __future__ import annotations

import json

import shutil
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dcem.store.database import Store

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "pages" / "experiments.py")


def test_results_views_and_metric_switch(run_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DCEM_DB", str(run_db))
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not at.exception
    charts = at.get("plotly_chart")
    assert len(charts) == 3  # Fig. 3 bars and the two Fig. 2 curves
    first = charts[0].proto.spec
    at.selectbox(key="exp_metric").set_value("escalation_rate").run()
    assert at.get("plotly_chart")[0].proto.spec != first
    assert len(at.get("download_button")) == 2
    assert any("Pick a different run" in c.value for c in at.caption)


def test_launch_a_run_then_compare(run_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "copy.duckdb"
    shutil.copy(run_db, db)
    monkeypatch.setenv("DCEM_DB", str(db))
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    at.multiselect(key="exp_scen").set_value(["S1"]).run()
    at.number_input(key="exp_seeds").set_value(1).run()
    at.number_input(key="exp_t").set_value(6).run()
    at.radio(key="exp_world").set_value("sharpened").run()
    at.radio(key="exp_comp").set_value("blend").run()
    at.button(key="exp_run").click().run()
    assert not at.exception
    assert any("1 cells computed" in s.value for s in at.success)
    with Store(db) as store:
        assert len(store.runs()) == 2
        spec = json.loads(store.con.execute("SELECT spec_json FROM runs ORDER BY created_at DESC LIMIT 1").fetchone()[0])
    assert spec["sharpness"] == 3.0 and spec["compliance"] == "blend"  # the chosen world was run
    at.selectbox(key="exp_other").set_value(next(o for o in at.selectbox(key="exp_other").options
                                                  if o != at.selectbox(key="exp_view_run").value)).run()
    assert not at.exception
    assert any("cases changed outcome" in m.value for m in at.markdown)


def test_bad_launch_settings_are_refused(run_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "copy2.duckdb"
    shutil.copy(run_db, db)
    monkeypatch.setenv("DCEM_DB", str(db))
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    at.multiselect(key="exp_scen").set_value([]).run()
    at.button(key="exp_run").click().run()
    assert not at.exception
    assert any("scenarios" in e.value for e in at.error)
