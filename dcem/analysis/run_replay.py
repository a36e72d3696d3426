"""A stored run, loaded once for re-scoring: every cell's panel, config and reports.

:func:`load_run_replay` reads every (scenario, seed) cell of a run and keeps, per cell, the panel, the configuration the
method ran with, the high-risk classes, the truth, the case ids and the method's recorded
label reports (N, T, A), plus the probability-vector reports (N, T, A, K) when the agents
reported distributions (every trace row of the method in the cell has a non-null
``probabilities`` column; the column is optional, older stores lack it).  The result is
plain data (no database handle), so a dashboard can cache it and re-score it many times
(:mod:`dcem.analysis.whatif`).
"""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dcem.core.config import MediatorConfig
from dcem.core.panel import Panel
from dcem.core.replay import TABLE_LIMIT
from dcem.core.replay_kernel import Targets
from dcem.core.soft import check_probabilities
from dcem.core.state import RoundState, check_reports
from dcem.core.vocabulary import mediated_methods
from common.errors import InputError
from dcem.store.database import Store, StoreError
from dcem.store.run_reads import (probability_summary, probability_values, probability_widths, replay_cases,
                                  replay_cell_heads, replay_reports, traces_have_probabilities)

__all__ = ["ReplayCell", "RunReplay", "load_run_replay"]

log = logging.getLogger(__name__)


def _frozen(arr: np.ndarray) -> np.ndarray:
    arr = np.array(arr)
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True, eq=False)
class ReplayCell:
    """One stored (scenario, seed) cell of a run, as plain data.

    config is the configuration the method ran with (fitted thresholds; escalation off
    for ``dcem_noesc``); reports are int (N, T, A); truth int (N,); case_ids length N.
    ``codes`` (N, T) are the report-tuple indices (None when ``K ** A`` is too large for
    the table path, or when the cell has probabilities).  ``probabilities`` (N, T, A, K)
    are the probability-vector reports (finite, >= 0, positive mass; kept as given) or
    None; when present they, not ``reports``, are scored
    (:func:`dcem.core.replay.score_probabilities`), and ``reports`` are the labels shown.
    """

    scenario: str
    seed: int
    panel: Panel
    config: MediatorConfig
    high_risk: tuple[int, ...]
    truth: np.ndarray
    case_ids: tuple[str, ...]
    reports: np.ndarray
    probabilities: np.ndarray | None = field(default=None, repr=False)
    codes: np.ndarray | None = field(init=False, repr=False)

    def __post_init__(self) -> None:
        reports = check_reports(self.panel, self.reports)
        if reports.ndim != 3 or reports.shape[1] < 1:
            raise InputError("reports", f"expected shape (cases, rounds, agents), got {reports.shape}")
        truth = np.asarray(self.truth, dtype=np.int64)
        if truth.shape != (reports.shape[0],) or len(self.case_ids) != reports.shape[0]:
            raise InputError("reports", f"{self.scenario}/seed {self.seed}: {reports.shape[0]} "
                             f"trajectories for {truth.shape[0]} truths and {len(self.case_ids)} case ids")
        k, n_agents = self.panel.n_labels, self.panel.n_agents
        codes = None
        if self.probabilities is not None:
            probs = check_probabilities(self.probabilities, n_agents, k, ndim=4)
            if probs.shape[:3] != reports.shape:
                raise InputError("probabilities", f"{self.scenario}/seed {self.seed}: shape {probs.shape} does "
                                 f"not match reports {reports.shape}")
            object.__setattr__(self, "probabilities", _frozen(probs))
        elif k ** n_agents <= TABLE_LIMIT:
            codes = reports[..., 0] * 1
            for a in range(1, n_agents):
                codes *= k
                codes += reports[..., a]
            codes = _frozen(codes)
        object.__setattr__(self, "reports", _frozen(reports))
        object.__setattr__(self, "truth", _frozen(truth))
        object.__setattr__(self, "case_ids", tuple(self.case_ids))
        object.__setattr__(self, "high_risk", tuple(int(h) for h in self.high_risk))
        object.__setattr__(self, "codes", codes)

    @property
    def n_cases(self) -> int:
        return int(self.reports.shape[0])


@dataclass(frozen=True, eq=False)
class RunReplay:
    """Every cell of one run for one mediated method; no database handle is kept.

    Per-case columns over all cells, in cell order (scenario, seed) then case order:
    case_id, scenario (object arrays), seed (int), truth (int).

    ``calibration`` is '' for the run's own panels, else where substituted panels came
    from (a calibration set's source, :func:`dcem.analysis.whatif_calibration.with_calibration`);
    ``base`` is then the run's own replay, so results can be compared with the run's.
    """

    run_id: str
    method: str
    cells: tuple[ReplayCell, ...]
    calibration: str = ""
    base: RunReplay | None = field(default=None, repr=False)
    case_id: np.ndarray = field(init=False, repr=False)
    scenario: np.ndarray = field(init=False, repr=False)
    seed: np.ndarray = field(init=False, repr=False)
    truth: np.ndarray = field(init=False, repr=False)
    # memo of per-cell mediator tables (see _table); plain data, bounded, safe to drop
    _tables: dict[tuple[Any, ...], tuple[RoundState, Targets]] = field(
        init=False, repr=False, default_factory=dict)

    def __post_init__(self) -> None:
        cells = tuple(self.cells)
        if not cells:
            raise InputError("run", f"run {self.run_id!r} has no stored cells")
        object.__setattr__(self, "cells", cells)
        cols = {
            "case_id": np.concatenate([np.asarray(c.case_ids, dtype=object) for c in cells]),
            "scenario": np.concatenate([np.full(c.n_cases, c.scenario, dtype=object) for c in cells]),
            "seed": np.concatenate([np.full(c.n_cases, c.seed, dtype=np.int64) for c in cells]),
            "truth": np.concatenate([c.truth for c in cells]),
        }
        for name, arr in cols.items():
            object.__setattr__(self, name, _frozen(arr))

    @property
    def n_cases(self) -> int:
        return int(self.case_id.shape[0])

    @property
    def max_rounds(self) -> int:
        """The longest recorded trajectory (a larger t_max cannot change any outcome)."""
        return max(int(c.reports.shape[1]) for c in self.cells)

    @property
    def scenarios(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(c.scenario for c in self.cells))


def load_run_replay(store: Store, run_id: str, method: str = "dcem") -> RunReplay:
    """Load every cell of ``run_id`` once, in a few queries (cells, cases, reports and,
    when the store has them, probabilities).

    Reports are read flat (one row per case, round and agent) and reshaped per cell to
    (N, T, A), which is far cheaper than materialising nested lists per trace row.
    Probability reports are read flat too (one row per case, round, agent and label) and
    reshaped to (N, T, A, K) for the cells whose every trace row of ``method`` has them;
    a cell with only some rows carrying probabilities is replayed from its labels.
    """
    if method not in mediated_methods():
        raise InputError("method", f"only mediated methods can be re-scored ({', '.join(mediated_methods())}), "
                         f"got {method!r}")
    store.check_run(run_id)
    heads = replay_cell_heads(store, run_id)
    if not heads:
        raise StoreError(f"run {run_id!r} has no finished cells yet")
    cases = replay_cases(store, run_id)
    flat = replay_reports(store, run_id, method)
    case_groups = dict(iter(cases.groupby(["scenario", "seed"], sort=False)))
    report_groups = dict(iter(flat.groupby(["scenario", "seed"], sort=False)))
    soft = _stored_probabilities(store, run_id, method)
    cells = []
    for scenario, seed, labels, confusion, prior, loss, high, cfg_json in heads:
        key = (scenario, seed)
        if key not in report_groups:
            raise StoreError(f"run {run_id!r} cell {scenario}/seed {seed} has no {method!r} trajectories")
        group, rep = case_groups[key], report_groups[key]
        n = len(group)
        rounds = int(rep["round"].max())
        reports = rep["report"].to_numpy(dtype=np.int64).reshape(n, rounds, -1)
        panel = Panel(tuple(labels), np.array(confusion), np.array(prior), np.array(loss))
        probs = None
        if key in soft:
            values = soft[key]
            want = reports.shape + (panel.n_labels,)
            if values.size != int(np.prod(want)):
                raise StoreError(f"run {run_id!r} cell {scenario}/seed {seed}: {values.size} stored "
                                 f"probabilities for reports of shape {reports.shape} and {panel.n_labels} labels")
            probs = values.reshape(want)
        cfg = MediatorConfig.from_mapping(json.loads(cfg_json)).with_changes(escalation=mediated_methods()[method])
        cells.append(ReplayCell(str(scenario), int(seed), panel, cfg, tuple(int(h) for h in high),
                                group["truth"].to_numpy(dtype=np.int64), tuple(group["case_id"]), reports,
                                probabilities=probs))
    return RunReplay(run_id, method, tuple(cells))


def _stored_probabilities(store: Store, run_id: str, method: str) -> dict[tuple[Any, Any], np.ndarray]:
    """Flat float64 probabilities per (scenario, seed) cell, in (case, round, agent, label)
    order, for the cells whose every ``method`` trace row has them with rectangular
    (agents x labels) lists; {} when the store has no ``probabilities`` column."""
    if not traces_have_probabilities(store):
        return {}
    summary = probability_summary(store, run_id, method)
    full = {(scenario, seed) for scenario, seed, missing, total, _ in summary if missing == 0 and total > 0}
    partial = [(scenario, seed) for scenario, seed, missing, total, _ in summary if 0 < missing < total]
    misaligned = [(scenario, seed) for scenario, seed, missing, _, bad in summary if missing == 0 and bad]
    if misaligned:
        raise StoreError(f"run {run_id!r}: cells {misaligned} store a probability vector count that differs "
                         "from the number of reports in some round")
    if partial:
        log.warning("run %s method %s: cells %s have probabilities on only some trace rows; replaying labels",
                    run_id, method, partial)
    if not full:
        return {}
    # inner lists must all have one length per cell, or the flat values would not reshape
    widths = probability_widths(store, run_id, method)
    ragged = [(scenario, seed) for scenario, seed, lo, hi in widths if (scenario, seed) in full and lo != hi]
    if ragged:
        raise StoreError(f"run {run_id!r}: stored probability vectors of cells {ragged} differ in length")
    flat = probability_values(store, run_id, method)
    out = {}
    for key, group in flat.groupby(["scenario", "seed"], sort=False):
        if key in full:
            out[key] = group["p"].to_numpy(dtype=float)
    return out
