"""Calibration sets page: built-in, stored and uploaded sets; bad files keep what was loaded."""
from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dcem.calibration.sets import example_csv

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "pages" / "calibration.py")


@pytest.fixture()
def page(run_db: Path, monkeypatch: pytest.MonkeyPatch) -> AppTest:
    monkeypatch.setenv("DCEM_DB", str(run_db))
    return AppTest.from_file(PAGE, default_timeout=60)


def _upload(at: AppTest, name: str, content: bytes) -> AppTest:
    at.file_uploader(key="calib_upload").set_value((name, content, "text/csv")).run()
    return at.button[0].click().run() if at.button else at


def test_synthetic_set_shows_matrices_and_alpha_changes_them(page: AppTest) -> None:
    at = page.run()
    assert not at.exception and any("No calibration set" in i.value for i in at.info)
    at.selectbox[0].set_value("S2").run()
    at.button[0].click().run()
    assert not at.exception
    assert at.subheader[0].value.startswith("Loaded: ")
    assert len(at.get("plotly_chart")) == 3  # two confusion heatmaps and the recall bars
    before = at.get("plotly_chart")[0].proto.spec
    at.number_input[1].set_value(3.0).run()
    assert at.get("plotly_chart")[0].proto.spec != before


def test_upload_good_then_bad_file_keeps_the_good_one(page: AppTest) -> None:
    at = page.run()
    at.radio[0].set_value("Upload CSV").run()
    at = _upload(at, "cal.csv", example_csv().encode())
    assert not at.exception
    assert at.subheader[0].value == "Loaded: cal.csv"
    at = _upload(at, "bad.csv", b"case_id,agent,reported\n1,a,k0\n")
    assert not at.exception
    errors = [e.value for e in at.error]
    assert any("true_label" in e for e in errors), errors
    assert at.subheader[0].value == "Loaded: cal.csv"  # what was loaded before stays
    at.text_input(key="calib_labels").set_value("k0, k1, k2").run()
    at = _upload(at, "labels.csv", b"case_id,agent,reported_label,true_label\n1,a,k0,k9\n")
    assert any("k9" in e.value for e in at.error), [e.value for e in at.error]
    assert at.subheader[0].value == "Loaded: cal.csv"
    assert not any("Traceback" in e.value for e in at.error)


def test_stored_run_source(page: AppTest) -> None:
    at = page.run()
    at.radio[0].set_value("Stored run").run()
    at.button[0].click().run()
    assert not at.exception
    assert at.subheader[0].value.startswith("Loaded: run ui-run S1/seed 0")
    assert "24 cases, 2 agents" in at.caption[-1].value or any("24 cases" in c.value for c in at.caption)
