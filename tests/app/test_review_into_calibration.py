"""Reviewed cases into the calibration set (issue 51, item 14): reviews from another cell
or another agent line-up no longer join the loaded set without a word -- the review page
says what differs and asks (add them anyway, or cancel) -- and the Calibration sets page
neither discards a set holding reviewed cases on a failed upload nor replaces it without
asking; an upload that is not UTF-8 names the file."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from dcem.analysis.calibration_sources import example_csv, stored_run_calibration_set
from dcem.calibration.sets import parse_calibration_csv
from dcem.store.database import Store
from studio.views.review_merge import cell_lineups, plan_reviewed_merge

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture()
def db(run_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "rv.duckdb"
    shutil.copy(run_db, path)
    monkeypatch.setenv("DCEM_DB", str(path))
    monkeypatch.setenv("DCEM_DEMO", "0")
    return path


def _page(name: str) -> AppTest:
    return AppTest.from_file(str(ROOT / "pages" / f"{name}.py"), default_timeout=120)


def _review(at: AppTest, case: str, label: str) -> None:
    at.selectbox(key="rv_case").set_value(case).run()
    at.selectbox(key="rv_label").set_value(label)
    at.text_input(key="rv_reviewer").set_value("dr a")
    at.button(key="FormSubmitter:rv_form-Record review").click().run()
    assert not at.error, [e.value for e in at.error]


def _add(at: AppTest) -> AppTest:
    return next(b for b in at.button if b.label.startswith("Add reviewed")).click().run()


def _queue(at: AppTest) -> pd.DataFrame:
    return next(d.value for d in at.dataframe if "why" in d.value.columns)


def test_reviews_from_another_cell_are_named_and_join_only_when_confirmed(db: Path) -> None:
    with Store(db, read_only=True) as store:
        s1_set = stored_run_calibration_set(store, "ui-run", "S1", 0)
    review = _page("review")
    review.session_state["calib_set"] = s1_set
    review.run()
    queue = _queue(review)
    other = queue.loc[queue["scenario"] == "S3b", "case_id"].iloc[0]
    _review(review, other, "k1")
    _add(review)
    assert not review.exception and not review.error
    warning = next(w.value for w in review.warning if w.value.startswith("Before the reviewed cases join"))
    assert "1 of the 1 reviewed cases come from other cells than the set's cases (S1/seed 0" in warning
    assert "S3b/seed 0 (1 case)" in warning and "Their agents differ: agent 1 is rule agent 1 of scenario S1" in warning
    assert review.session_state["calib_set"] is s1_set  # nothing joined yet
    review.button(key="rv_merge_no").click().run()
    assert any("Nothing was added" in i.value for i in review.info)
    assert review.session_state["calib_set"] is s1_set
    _add(review)
    review.button(key="rv_merge_yes").click().run()
    assert not review.exception and not review.error
    merged = review.session_state["calib_set"]
    assert merged.n_cases == s1_set.n_cases + 1 and other in merged.case_ids
    assert any("1 reviewed case joined the set as new rows" in s.value for s in review.success)
    assert not any(w.value.startswith("Before the reviewed cases join") for w in review.warning)


def test_reviews_from_the_sets_own_cell_join_at_once(db: Path) -> None:
    with Store(db, read_only=True) as store:
        s3b_set = stored_run_calibration_set(store, "ui-run", "S3b", 0)
    review = _page("review")
    review.session_state["calib_set"] = s3b_set
    review.run()
    queue = _queue(review)
    held = [c for c in queue["case_id"] if c in set(s3b_set.case_ids)]
    truth = dict(zip(s3b_set.case_ids, s3b_set.truth.tolist()))
    _review(review, held[0], s3b_set.labels[truth[held[0]]])  # the set's own label for it: no conflict
    _add(review)
    assert not review.error and not any(w.value.startswith("Before the reviewed") for w in review.warning)
    assert any("1 reviewed case of the set now has the reviewer's label" in s.value for s in review.success)


def test_a_set_of_other_agents_is_named_before_it_grows(db: Path) -> None:
    other = example_csv().replace("agent 1", "model-a").replace("agent 2", "model-b")
    example, _ = parse_calibration_csv(other, source="other.csv")
    assert example.agents == ("model-a", "model-b")
    rows = pd.DataFrame({"case_id": ["c9", "c9"], "agent": ["agent 1", "agent 2"], "reported_label": ["k0", "k1"],
                         "true_label": ["k1", "k1"]})
    lineups = {("S1", 0): ("m1", "m2")}
    plan = plan_reviewed_merge(rows, example.labels, run_id="r", current=example, case_cells={"c9": ("S1", 0)},
                               lineups=lineups)
    assert plan.ask_first and plan.merged.calibration_set.n_agents == example.n_agents + 2
    text = " ".join(plan.differences)
    assert "holds none of run r's cases" in text
    assert f"The set names its agents {', '.join(example.agents)}; the reviews name theirs agent 1, agent 2" in text
    assert f"so 2 new agents would join and the set would have {example.n_agents + 2} agents" in text
    mixed = plan_reviewed_merge(pd.concat([rows, rows.assign(case_id="c8")]), example.labels, run_id="r",
                                current=None, case_cells={"c9": ("S1", 0), "c8": ("S3b", 0)},
                                lineups={**lineups, ("S3b", 0): ("m1", "m3")})
    assert mixed.ask_first and "agent 2 is m2 in S1/seed 0 but m3 in S3b/seed 0" in mixed.differences[0]


def test_clinical_line_ups_name_model_view_and_role() -> None:
    info = {"agents": [{"model": "stat:nb-evidence", "view": "complaint"}, {"model": "stat:nb-evidence"}],
            "views": ["complaint", "history"], "roles": ["A neutral clinician.", "A walk-in clinic doctor."]}
    lineup = cell_lineups([("S2", 1, [[[1.0]]] * 2, json.dumps(info))])[("S2", 1)]
    assert lineup == ("stat:nb-evidence reading the complaint ('A neutral clinician.')",
                      "stat:nb-evidence reading the history ('A walk-in clinic doctor.')")


def _upload(at: AppTest, name: str, content: bytes) -> AppTest:
    at.file_uploader(key="calib_upload").set_value((name, content, "text/csv")).run()
    return next(b for b in at.button if b.label == "Load uploaded file").click().run()


def test_a_set_holding_reviews_survives_a_failed_upload_and_is_replaced_only_when_confirmed(db: Path) -> None:
    with Store(db, read_only=True) as store:
        s1_set = stored_run_calibration_set(store, "ui-run", "S1", 0)
    review = _page("review")
    review.session_state["calib_set"] = s1_set
    review.run()
    queue = _queue(review)
    held = [c for c in queue["case_id"] if c in set(s1_set.case_ids)]
    _review(review, held[0], "k2")
    _add(review)
    merged = review.session_state["calib_set"]
    calib = _page("calibration")
    calib.session_state["calib_set"] = merged
    calib.session_state["calib_reviewed"] = review.session_state["calib_reviewed"]
    calib.run()
    calib.radio[0].set_value("Upload CSV").run()
    _upload(calib, "latin.csv", "case_id,agent,reported_label,true_label\nc1,A,caf\xe9,k0\n".encode("latin-1"))
    error = next(e.value for e in calib.error)
    assert "latin.csv is not UTF-8 text" in error and "file: is" not in error  # the file is named
    assert "Nothing was discarded" in error and "1 reviewed case no file holds, so it stays loaded" in error
    assert calib.session_state["calib_set"] is merged
    _upload(calib, "good.csv", example_csv().encode())
    assert calib.session_state["calib_set"] is merged  # not replaced yet: asked first
    warning = next(w.value for w in calib.warning if "would discard" in w.value)
    assert "holds 1 reviewed case added on the Escalation review page" in warning and "good.csv" in warning
    calib.button(key="calib_keep").click().run()
    assert calib.session_state["calib_set"] is merged and not any("would discard" in w.value for w in calib.warning)
    next(b for b in calib.button if b.label == "Load uploaded file").click().run()
    calib.button(key="calib_replace").click().run()
    assert calib.session_state["calib_set"].source == "good.csv"
