"""Reading stored episodes for the walkthrough."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dcem.store import Store, StoreError
from dcem.synthetic_experiment import run_cell
from dcem.walkthrough import case_list, case_trace, ex_post_confusion, filter_cases, steer_message


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Store, object]:
    cell = run_cell("S3b", 1, n_train=2000, n_eval=30, ablation=False)
    store = Store(tmp_path_factory.mktemp("walk") / "w.duckdb")
    store.ensure_run("w", kind="synthetic", spec={}, config=cell.config, seeds=[1])
    store.save_cell("w", cell)
    yield store, cell
    store.close()


def test_case_list_flags_match_the_metrics(stored: tuple[Store, object]) -> None:
    store, cell = stored
    cases = case_list(store, "w")
    metrics = cell.methods["dcem"].metrics
    assert len(cases) == 30
    assert cases["harmful_consensus"].mean() == pytest.approx(metrics["harmful_consensus"])
    assert cases["escalated"].mean() == pytest.approx(metrics["escalation_rate"])
    assert cases["correct"].mean() == pytest.approx(metrics["accuracy"])
    only = filter_cases(cases, escalated_only=True, truths=["k0"])
    assert set(only["truth"]) <= {"k0"} and only["escalated"].all()
    assert len(filter_cases(cases)) == 30


def test_case_trace_marks_rounds_after_the_outcome(stored: tuple[Store, object]) -> None:
    store, cell = stored
    trace = case_trace(store, "w", cell.case_ids[0])
    run = cell.methods["dcem"]
    assert trace.outcome_round == int(run.outcome_round[0])
    assert trace.rounds["after_outcome"].sum() == 12 - trace.outcome_round
    assert trace.truth == cell.panel.labels[int(cell.truth[0])] and trace.n_agents == 2
    with pytest.raises(StoreError, match="no case"):
        case_trace(store, "w", "nope")


def test_ex_post_confusion_counts_every_case_each_round(stored: tuple[Store, object]) -> None:
    store, cell = stored
    counts = ex_post_confusion(store, "w", "S3b")
    assert counts.shape == (12, 2, 3, 3)
    assert (counts.sum(axis=(2, 3)) == 30).all()
    reports = cell.methods["dcem"].reports
    np.testing.assert_array_equal(counts[0, 0].sum(axis=0), np.bincount(reports[:, 0, 0], minlength=3))
    with pytest.raises(StoreError):
        ex_post_confusion(store, "w", "S1")


def test_steer_message_names_both_labels_and_cues() -> None:
    msg = steer_message("URTI", "Pulmonary_embolism", ["pleuritic pain", "tachycardia"])
    assert "URTI" in msg and "Pulmonary_embolism" in msg and "pleuritic pain, tachycardia" in msg
    assert "evidence that separates" in steer_message("a", "b", [])
