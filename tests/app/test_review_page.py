"""Escalation review page: queue, recording reviews, history, export, calibration hand-off."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
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
    assert any(s.value.startswith("1 reviewed case joined the set as new rows. The calibration set has 1 labelled "
                                  "of 1 cases") for s in at.success)
    assert at.session_state["calib_set"].n_cases == 1


def _queue(at: AppTest) -> pd.DataFrame:
    return next(d.value for d in at.dataframe if "why" in d.value.columns)


def _progress(at: AppTest) -> str:
    return str(at.get("progress")[0].proto.text)


def _click(at: AppTest, button: str) -> AppTest:
    return at.button(key=f"FormSubmitter:rv_form-{button}").click().run()


def test_queue_and_count_show_a_save_at_once(page: tuple[AppTest, Path]) -> None:
    at, _ = page
    at.run()
    total = len(_queue(at))
    assert _progress(at) == f"0 of {total} escalated cases reviewed"
    assert _queue(at)["review_label"].isna().all()  # not reviewed yet: shown as a dash, not "None"
    assert all(d.proto.placeholder == "—" for d in at.dataframe)
    queue = next(d for d in at.dataframe if "review_label" in d.value.columns)
    titles = {c: v.get("label") for c, v in json.loads(queue.proto.columns).items()}
    assert titles["case_id"] == "Case" and titles["review_label"] == "Latest review"
    assert titles["why"] == "Why escalated"
    case = at.selectbox(key="rv_case").value
    _submit(at, "k1", "looks like k1", "dr a")
    assert not at.exception and not at.error
    assert _progress(at) == f"1 of {total} escalated cases reviewed"  # not the count from before the save
    assert any(f"{total} escalated cases, 1 reviewed" in c.value for c in at.caption)
    row = _queue(at).set_index("case_id").loc[case]
    assert bool(row["reviewed"]) and row["review_label"] == "k1"
    assert any(f"Review of {case} recorded." in s.value for s in at.success)
    assert at.selectbox(key="rv_label").value is None and at.text_area(key="rv_comment").value == ""
    assert at.text_input(key="rv_reviewer").value == "dr a"  # kept for the next case


def test_save_and_next_moves_to_the_next_unreviewed_case(page: tuple[AppTest, Path]) -> None:
    at, db = page
    at.run()
    ids = list(_queue(at)["case_id"])
    assert at.selectbox(key="rv_case").value == ids[0]
    at.selectbox(key="rv_label").set_value("k0")
    at.text_input(key="rv_reviewer").set_value("dr a")
    _click(at, "Save and next")
    assert not at.exception and not at.error
    assert at.selectbox(key="rv_case").value == ids[1]
    assert any(f"Review of {ids[0]} recorded. Next unreviewed case: {ids[1]}." in s.value for s in at.success)
    at.selectbox(key="rv_case").set_value(ids[-1]).run()  # the last case: the next one wraps past the reviewed first
    at.selectbox(key="rv_label").set_value("k2")
    _click(at, "Save and next")
    assert at.selectbox(key="rv_case").value == ids[1]
    assert _progress(at) == f"2 of {len(ids)} escalated cases reviewed"
    with Store(db) as store:
        history = review_history(store, "ui-run")
    assert dict(zip(history["case_id"], history["final_label"])) == {ids[0]: "k0", ids[-1]: "k2"}


def test_no_final_label_is_preselected_and_none_is_refused(page: tuple[AppTest, Path]) -> None:
    at, db = page
    at.run()
    label = at.selectbox(key="rv_label")
    assert label.value is None and label.placeholder == "choose the final label"
    at.text_input(key="rv_reviewer").set_value("dr a")
    at.text_area(key="rv_comment").set_value("forgot the label")
    for button in ("Record review", "Save and next"):
        _click(at, button)
        assert not at.exception
        assert [e.value for e in at.error] == ["Not saved: final label: choose the final label before saving "
                                               "(no label is pre-selected)"]
    assert at.text_area(key="rv_comment").value == "forgot the label"  # nothing typed is lost
    assert _progress(at).startswith("0 of ")
    with Store(db) as store:
        assert review_history(store, "ui-run").empty
