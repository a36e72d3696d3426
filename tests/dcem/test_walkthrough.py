"""Reading stored episodes for the walkthrough."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from studio.views.walkthrough import case_list, case_trace, ex_post_confusion, filter_cases, probability_table, steer_message
from dcem.store.case_reads import (AGENT_COLUMNS, TURN_COLUMNS, agent_turns, case_agents, case_text,
                                   longest_escalated_case)
from dcem.store.database import Store, StoreError
from dcem.core.policy import Action
from dcem.synthetic.experiment import run_cell


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


def test_the_longest_escalated_case_is_found_among_the_runs_of_its_kind(stored: tuple[Store, object]) -> None:
    store, cell = stored
    run = cell.methods["dcem"]
    escalated = [(-int(run.outcome_round[i]), case) for i, case in enumerate(cell.case_ids)
                 if run.outcome_action[i] == Action.STOP_AND_ESCALATE]
    assert escalated, "the fixture's cell escalates no case"
    rounds, case = min(escalated)
    assert longest_escalated_case(store, "synthetic", "dcem") == ("w", case, -rounds)
    assert longest_escalated_case(store, "clinical", "dcem") is None


def test_synthetic_cases_have_no_text_agents_or_turns(stored: tuple[Store, object]) -> None:
    store, cell = stored
    case = cell.case_ids[0]
    assert case_text(store, "w", case) is None
    assert list(case_agents(store, "w", case).columns) == AGENT_COLUMNS and case_agents(store, "w", case).empty
    turns = agent_turns(store, "w", case, "dcem")
    assert list(turns.columns) == TURN_COLUMNS and turns.empty
    with pytest.raises(StoreError, match="no case"):
        agent_turns(store, "w", "nope", "dcem")


def test_llm_case_text_agents_and_turns(clinical_db: Path) -> None:
    with Store(clinical_db) as store:
        run = store.latest_run("clinical")
        steer = store.con.execute(
            "SELECT case_id, round, steer_agent FROM traces WHERE run_id = ? AND method = 'dcem' "
            "AND action = 'DIFFERENTIAL_STEER' ORDER BY case_id, round LIMIT 1", [run]).fetchone()
        case, t, target = steer
        stored_text = store.con.execute("SELECT text FROM case_texts WHERE run_id = ? AND case_id = ?",
                                        [run, case]).fetchone()[0]
        assert case_text(store, run, case) == stored_text and case_text(store, run, "nope") is None
        agents = case_agents(store, run, case)
        assert list(agents["name"]) == ["Agent A", "Agent B"] and list(agents["model"]) == ["oracle-a", "oracle-b"]
        assert "walk-in clinic" in agents["role"].iloc[1] and agents["calibration_accuracy"].between(0, 1).all()
        labels = case_trace(store, run, case).labels
        turns = agent_turns(store, run, case, "dcem")
        single = agent_turns(store, run, case, "single")
        free = agent_turns(store, run, case, "free")
    assert list(turns.columns) == TURN_COLUMNS and len(turns) == 4 * 2
    assert turns[turns["round"] == 1]["note"].isna().all() and turns[turns["round"] > 1]["note"].notna().all()
    note = turns[(turns["round"] == t + 1) & (turns["agent"] == target)]["note"].iloc[0]
    assert "finding one" in note and "costlier miss" in note  # the steer note with the agent's own cues
    assert set(turns["label"]) <= set(labels) and not turns["error"].notna().any()
    assert all(abs(sum(p) - 1.0) < 1e-9 for p in turns["probabilities"])
    assert len(single) == 1 and set(free["round"]) == {1, 2, 3}
    assert free[free["round"] == 2]["note"].str.contains("The other agent answered").all()
    table = probability_table(turns[turns["round"] == 1], labels)
    assert table.shape == (8, 2) and list(table.columns) == ["Agent A", "Agent B"] and list(table.index) == list(labels)
