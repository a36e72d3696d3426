"""Escalation review page: queue, recording reviews, history, export, calibration hand-off."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dcem.store.reviews import review_history
from dcem.store.database import Store

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "pages" / "review.py")


@pytest.fixture()
def page(run_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[AppTest, Path]:
    db = tmp_path / "rv.duckdb"
    shutil.copy(run_db, db)
    monkeypatch.setenv("DCEM_DB", str(db))
    return AppTest.from_file(PAGE, default_timeout=120), db


def _submit(at: AppTest, label: str, comment: str, reviewer: str) -> AppTest:
    at.selectbox(key="rv_label").set_value(label)
    at.text_area(key="rv_comment").set_value(comment)
    at.text_input(key="rv_reviewer").set_value(reviewer)
    return at.button(key="FormSubmitter:rv_form-Record review").click().run()


def test_reviews_append_and_never_overwrite(page: tuple[AppTest, Path]) -> None:
    at, db = page
    at.run()
    assert not at.exception
    case = at.selectbox(key="rv_case").value
    assert any("Why it escalated" in w.value for w in at.warning)
    _submit(at, "k1", "first look", "dr a")
    assert any(f"Review of {case} recorded." in s.value for s in at.success)
    _submit(at, "k0", "second opinion", "dr b")
    with Store(db) as store:
        history = review_history(store, "ui-run", case)
    assert list(history["final_label"]) == ["k1", "k0"]
    assert list(history["reviewer"]) == ["dr a", "dr b"]


def test_missing_reviewer_is_refused(page: tuple[AppTest, Path]) -> None:
    at, _ = page
    at.run()
    _submit(at, "k1", "no name", "")
    assert not at.exception
    assert any("reviewer" in e.value for e in at.error)


def test_truth_hidden_until_asked_and_reviews_feed_calibration(page: tuple[AppTest, Path]) -> None:
    at, _ = page
    at.run()
    queue = next(d.value for d in at.dataframe if "why" in d.value.columns)
    assert "truth_label" not in queue.columns
    at.toggle(key="rv_truth").set_value(True).run()
    queue = next(d.value for d in at.dataframe if "why" in d.value.columns)
    assert "truth_label" in queue.columns
    _submit(at, "k2", "", "dr c")
    next(b for b in at.button if b.label.startswith("Add reviewed")).click().run()
    assert any("1 reviewed cases are now in the calibration set" in s.value for s in at.success)
    assert at.session_state["calib_set"].n_cases == 1
