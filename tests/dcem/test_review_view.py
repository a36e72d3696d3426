"""What the Escalation review page shows, computed without Streamlit."""
from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from studio.views.review_view import (
    ANSWER_TABLE_COLUMNS,
    QUEUE_TABLE_COLUMNS,
    escalation_why,
    history_view,
    last_answers_view,
    played_rounds_table,
    queue_view,
    reviewed_calibration_set,
)
from studio.views.walkthrough import case_trace
from dcem.calibration.sets import rows_to_set
from common.errors import ProjectError
from dcem.store.database import Store
from dcem.store.reviews import (
    escalation_queue,
    last_answers,
    record_review,
    review_history,
    reviewed_as_calibration_rows,
)

from .small_run import RUN_ID, small_run_file, small_run_store  # noqa: F401


def test_queue_table_caption_and_reason(small_run_store: Store) -> None:
    queue = escalation_queue(small_run_store, RUN_ID)
    assert len(queue) > 1
    shown = queue_view(queue)
    assert list(shown.table.columns) == QUEUE_TABLE_COLUMNS and "truth_label" not in shown.table
    assert shown.case_ids == queue["case_id"].tolist()
    assert shown.caption.startswith(f"{len(queue)} escalated cases, 0 reviewed; worst first")
    assert list(queue_view(queue, show_truth=True).table.columns) == QUEUE_TABLE_COLUMNS + ["truth_label"]
    first = queue.iloc[0]
    assert escalation_why(queue, first["case_id"]) == f"Why it escalated: {first['why']}"

    labels = list(case_trace(small_run_store, RUN_ID, first["case_id"], "dcem").labels)
    record_review(small_run_store, run_id=RUN_ID, case_id=first["case_id"], method="dcem", reviewer="ana",
                  final_label=labels[0], comment="")
    again = queue_view(escalation_queue(small_run_store, RUN_ID))
    assert "1 reviewed" in again.caption


def test_played_rounds_end_at_the_escalation(small_run_store: Store) -> None:
    case_id = escalation_queue(small_run_store, RUN_ID)["case_id"].iloc[0]
    trace = case_trace(small_run_store, RUN_ID, case_id, "dcem")
    table = played_rounds_table(trace)
    assert table["round"].tolist() == list(range(1, trace.outcome_round + 1))
    assert table["action"].iloc[-1] == "STOP_AND_ESCALATE"
    assert set(table["decision"]) <= set(trace.labels)
    assert all(len(r.split(", ")) == 2 for r in table["reports"])


def test_last_answers_without_turns(small_run_store: Store) -> None:
    case_id = escalation_queue(small_run_store, RUN_ID)["case_id"].iloc[0]
    trace = case_trace(small_run_store, RUN_ID, case_id, "dcem")
    view = last_answers_view(last_answers(small_run_store, RUN_ID, case_id, "dcem"), trace)
    assert view.empty and view.errors == [] and view.table.empty
    assert f"(round {trace.outcome_round}," in view.heading
    assert list(view.table.columns) == ["agent", "model", "answer", "probability", "runner_up",
                                        "runner_up_probability", "error"]


def test_last_answers_of_a_language_model_run(clinical_db: Path, tmp_path: Path) -> None:
    path = tmp_path / "c.duckdb"
    shutil.copy(clinical_db, path)
    with Store(path) as store:
        run_id = store.latest_run("clinical")
        queue = escalation_queue(store, run_id)
        if queue.empty:
            pytest.fail("the clinical fixture run escalates no case")
        case_id = queue["case_id"].iloc[0]
        trace = case_trace(store, run_id, case_id, "dcem")
        answers = last_answers(store, run_id, case_id, "dcem")
    view = last_answers_view(answers, trace)
    assert not view.empty and len(view.table) == len(answers) == 2
    assert f"(round {int(answers['round'].max())}," in view.heading
    assert view.names == answers["agent_name"].tolist() and view.answers == answers["label"].tolist()
    broken = answers.copy()
    broken.loc[broken.index[0], "error"] = "reply was not parsable\nsecond line"
    errors = last_answers_view(broken, trace).errors
    assert errors == [f"⚠ {answers['agent_name'].iloc[0]}: reply was not parsable second line"]
    assert set(ANSWER_TABLE_COLUMNS) <= set(answers.columns)


def test_history_view(small_run_store: Store) -> None:
    case_id = escalation_queue(small_run_store, RUN_ID)["case_id"].iloc[0]
    assert history_view(review_history(small_run_store, RUN_ID, case_id)) is None
    labels = list(case_trace(small_run_store, RUN_ID, case_id, "dcem").labels)
    record_review(small_run_store, run_id=RUN_ID, case_id=case_id, method="dcem", reviewer="ana",
                  final_label=labels[0], comment="first")
    record_review(small_run_store, run_id=RUN_ID, case_id=case_id, method="dcem", reviewer="ben",
                  final_label=labels[1], comment="")
    view = history_view(review_history(small_run_store, RUN_ID, case_id))
    assert view is not None
    assert view.summary == "History of this case: 2 review(s), oldest first; by ana, ben"
    assert list(view.table.columns) == ["created_at", "reviewer", "final_label", "comment"]
    assert view.table["final_label"].tolist() == labels[:2]


def test_reviewed_cases_join_the_calibration_set(small_run_store: Store) -> None:
    queue = escalation_queue(small_run_store, RUN_ID)
    labels = list(case_trace(small_run_store, RUN_ID, queue["case_id"].iloc[0], "dcem").labels)
    for case_id in queue["case_id"].iloc[:2]:
        record_review(small_run_store, run_id=RUN_ID, case_id=case_id, method="dcem", reviewer="ana",
                      final_label=labels[0], comment="")
    rows = reviewed_as_calibration_rows(small_run_store, RUN_ID, "dcem")
    alone = reviewed_calibration_set(rows, labels, run_id=RUN_ID)
    assert alone.added == 2 and alone.calibration_set.n_cases == 2
    assert alone.labelled == 0
    assert alone.message.startswith("2 reviewed cases joined the set as new rows. The calibration set has 2 "
                                    "labelled of 2 cases")
    earlier = rows.assign(case_id=["earlier-" + str(c) for c in rows["case_id"]])
    current = rows_to_set(earlier, labels, "earlier")
    merged = reviewed_calibration_set(rows, labels, run_id=RUN_ID, current=current)
    assert merged.added == 2 and merged.calibration_set.n_cases == 4
    renamed = {lab: f"x{i}" for i, lab in enumerate(labels)}
    relabelled = earlier.assign(reported_label=earlier["reported_label"].map(renamed),
                                true_label=earlier["true_label"].map(renamed))
    other = rows_to_set(relabelled, list(renamed.values()), "other labels")
    with pytest.raises(ProjectError):
        reviewed_calibration_set(rows, labels, run_id=RUN_ID, current=other)
