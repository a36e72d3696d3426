"""Re-scoring a stored run with a calibration set's panels: a set built from a cell's own
calibration data reproduces that cell bit for bit; labels in another order are matched by
name; a set whose agents always report the next label moves every agreed decision back
one label; a set with other labels or another agent count is refused, naming them."""
from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from dcem.analysis.whatif import RunReplay, load_run_replay, rescore
from dcem.analysis.whatif_calibration import calibration_match, own_replay, with_calibration
from dcem.analysis.whatif_controls import scope_note
from dcem.analysis.calibration_sources import synthetic_calibration_set
from dcem.calibration.sets import CalibrationSet
from dcem.core.panel import Panel
from common.errors import InputError
from dcem.store.database import Store

from .small_run import RUN_ID, small_run_file, small_run_store  # noqa: F401


@pytest.fixture()
def replay(small_run_store: Store) -> RunReplay:
    return load_run_replay(small_run_store, RUN_ID, "dcem")


def _cell(replay: RunReplay, scenario: str, seed: int) -> RunReplay:
    cell = next(c for c in replay.cells if (c.scenario, c.seed) == (scenario, seed))
    return RunReplay(replay.run_id, replay.method, (cell,))


def _set(labels: tuple[str, ...], truth: np.ndarray, reports: np.ndarray, agents: tuple[str, ...] = ("A", "B"),
         source: str = "test set") -> CalibrationSet:
    n, n_agents = reports.shape
    return CalibrationSet(labels, agents, tuple(f"c{i}" for i in range(n) for _ in range(n_agents)),
                          np.repeat(truth, n_agents), np.tile(np.arange(n_agents), n), reports.reshape(-1), source)


def test_the_cells_own_calibration_data_reproduce_it_exactly(replay: RunReplay) -> None:
    one = _cell(replay, "S1", 0)
    calib = synthetic_calibration_set("S1", 0, 2000)  # the rows run_cell(n_train=2000) estimated from
    calibrated = with_calibration(one, calib)
    ours, theirs = calibrated.cells[0].panel, one.cells[0].panel
    np.testing.assert_array_equal(ours.confusion, theirs.confusion)
    np.testing.assert_array_equal(ours.prior, theirs.prior)  # the cell used the empirical prior
    assert one.cells[0].config.prior == "empirical"
    pd.testing.assert_frame_equal(rescore(calibrated).outcomes, rescore(one).outcomes)
    assert rescore(calibrated).metrics == rescore(one).metrics
    assert calibrated.calibration == calib.source and calibrated.base is one and own_replay(calibrated) is one


def test_every_cell_gets_the_sets_panel_and_only_the_other_cells_change(replay: RunReplay) -> None:
    calibrated = with_calibration(replay, synthetic_calibration_set("S1", 0, 2000))
    first = calibrated.cells[0].panel.confusion
    assert all(np.array_equal(c.panel.confusion, first) for c in calibrated.cells)
    assert all(np.array_equal(a.panel.loss, b.panel.loss) and a.config == b.config
               for a, b in zip(calibrated.cells, replay.cells))
    before, after = rescore(replay).outcomes, rescore(calibrated).outcomes
    mine = (before["scenario"] == "S1") & (before["seed"] == 0)
    pd.testing.assert_frame_equal(after[mine], before[mine])
    assert not after[~mine].equals(before[~mine])  # S3b and seed 1 had other calibration data


def test_labels_in_another_order_are_matched_by_name(replay: RunReplay) -> None:
    calib = synthetic_calibration_set("S3b", 1, 500)
    order = (2, 0, 1)  # the set lists k2, k0, k1
    where = np.argsort(order)
    shuffled = CalibrationSet(tuple(calib.labels[i] for i in order), calib.agents, calib.case_ids,
                              where[calib.truth], calib.agent, where[calib.report], "shuffled")
    match = calibration_match(replay, shuffled)
    assert match.order == (1, 2, 0) and any("matched to the run's (k0, k1, k2) by name" in n for n in match.notes)
    a, b = with_calibration(replay, calib), with_calibration(replay, shuffled)
    np.testing.assert_allclose(b.cells[0].panel.confusion, a.cells[0].panel.confusion, rtol=0, atol=1e-15)
    np.testing.assert_allclose(b.cells[0].panel.prior, a.cells[0].panel.prior, rtol=0, atol=1e-15)


def test_a_set_whose_agents_report_the_next_label_moves_agreed_decisions_back(replay: RunReplay) -> None:
    truth = np.repeat(np.arange(3), 300)
    shifted = _set(("k0", "k1", "k2"), truth, np.stack([(truth + 1) % 3] * 2, axis=1))
    outcomes = rescore(with_calibration(replay, shifted)).outcomes
    reports = np.concatenate([c.reports for c in replay.cells])
    last = reports[np.arange(len(outcomes)), outcomes["rounds"].to_numpy() - 1]
    agreed = last[:, 0] == last[:, 1]
    assert agreed.sum() > 20
    np.testing.assert_array_equal(outcomes["decision"].to_numpy()[agreed], (last[agreed, 0] - 1) % 3)


def test_a_uniform_prior_cell_keeps_its_prior(replay: RunReplay) -> None:
    cell = replay.cells[0]
    uniform = dataclasses.replace(cell, config=cell.config.with_changes(prior="uniform"),
                                  panel=Panel(cell.panel.labels, cell.panel.confusion, np.full(3, 1 / 3),
                                              cell.panel.loss))
    truth = np.array([0] * 10 + [1] * 30 + [2] * 60)
    calib = _set(("k0", "k1", "k2"), truth, np.stack([truth, truth], axis=1))
    out = with_calibration(RunReplay(replay.run_id, "dcem", (uniform, replay.cells[1])), calib)
    np.testing.assert_array_equal(out.cells[0].panel.prior, np.full(3, 1 / 3))
    np.testing.assert_allclose(out.cells[1].panel.prior, (np.array([10, 30, 60]) + 0.5) / 101.5)


def test_other_labels_or_another_agent_count_are_refused_naming_them(replay: RunReplay) -> None:
    truth = np.arange(6) % 3
    other = _set(("k0", "k1", "flu"), truth, np.stack([truth, truth], axis=1), source="flu.csv")
    match = calibration_match(replay, other)
    assert not match.ok and match.order is None
    assert match.reason == ("the labels differ: the set has k0, k1, flu; the run has k0, k1, k2 "
                            "(only in the set: flu; only in the run: k2).")
    with pytest.raises(InputError, match="only in the set: flu; only in the run: k2"):
        with_calibration(replay, other)
    three = _set(("k0", "k1", "k2"), truth, np.stack([truth] * 3, axis=1), agents=("A", "B", "C"))
    assert calibration_match(replay, three).reason == \
        "the set has 3 agents (A, B, C); the run has 2 agents per cell."
    both = _set(("x", "y"), truth % 2, np.stack([truth % 2] * 3, axis=1), agents=("A", "B", "C"))
    reason = calibration_match(replay, both).reason
    assert reason.startswith("the labels differ: the set has x, y; the run has k0, k1, k2") and "3 agents" in reason
    assert calibration_match(replay, "not a set").reason == "expected a calibration set, got str"


def test_the_scope_note_says_the_panels_come_from_the_set() -> None:
    note = scope_note({}, {}, "cal.csv")
    assert "come from the loaded calibration set (cal.csv)" in note and "No parameter changed" in note
    assert not note.startswith("Nothing changed")
    assert scope_note({}, {}).startswith("Nothing changed")
