"""The mediator-state columns a run export leaves out, recomputed for an import.

A run export (:mod:`dcem.store.run_export`) keeps each round's reports, probability
vectors, decision, energy terms and action, but not the per-agent posteriors, the pooling
weights, the pooled belief, each agent's risk and dangerous miss.  The walkthrough shows
them, so :func:`state_columns` replays every mediated method's stored reports through the
cell's panel and settings (as :mod:`dcem.store.cell_frames` does when a cell is first
stored) and returns them, one row per stored (case, method, round).  A replay whose
decisions differ from the stored ones means the export does not belong to its cells:
:class:`~common.errors.InputError`.
"""
from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd

from dcem.core.config import MediatorConfig
from dcem.core.panel import Panel
from dcem.core.replay import Trajectory, score_probabilities, score_reports
from dcem.core.vocabulary import mediated_methods
from common.errors import InputError

__all__ = ["STATE_COLUMNS", "state_columns"]

STATE_COLUMNS = ("posteriors", "weights", "pooled", "agent_risk", "dangerous_miss")
_KEYS = ["run_id", "case_id", "method", "round"]


def _panel(cell: Any) -> Panel:
    return Panel(tuple(str(x) for x in cell.labels), np.array([np.stack(list(m)) for m in cell.confusion]),
                 np.asarray(cell.prior, dtype=float), np.stack(list(cell.loss)).astype(float))


def _probabilities(group: pd.DataFrame, shape: tuple[int, int, int]) -> np.ndarray | None:
    column = group["probabilities"] if "probabilities" in group else None
    if column is None or column.isna().any():
        return None
    rows = [np.stack(list(p)).astype(float) for p in column]
    return np.stack(rows).reshape(*shape, -1)


def _replay(cell: Any, method: str, group: pd.DataFrame) -> Trajectory:
    """Detailed replay of one cell's method; ``group`` is its traces sorted by case, round."""
    n, rounds = group["case_id"].nunique(), int(group["round"].max())
    if n * rounds != len(group):
        raise InputError("export", f"{cell.run_id} {cell.scenario}/seed {cell.seed} {method}: "
                                   "the traces do not have the same rounds for every case")
    reports = np.stack([np.asarray(r, dtype=np.int64) for r in group["reports"]]).reshape(n, rounds, -1)
    cfg = MediatorConfig.from_mapping(json.loads(cell.config_json))
    cfg = cfg.with_changes(escalation=mediated_methods()[method], t_max=max(cfg.t_max, rounds))
    panel = _panel(cell)
    probs = _probabilities(group, reports.shape)
    if probs is not None:
        return score_probabilities(panel, probs, cfg)
    return score_reports(panel, reports, cfg, detail=True)


def _detail(cell: Any, method: str, group: pd.DataFrame) -> pd.DataFrame:
    sc = _replay(cell, method, group)
    st = sc.state
    assert st is not None
    flat = len(group)
    stored = group["decision"].to_numpy(dtype=float, na_value=np.nan)
    if not np.array_equal(sc.decision.reshape(flat), stored):
        raise InputError("export", f"{cell.run_id} {cell.scenario}/seed {cell.seed} {method}: a replay of "
                                   "the stored reports gives other decisions than the traces record")
    out = group[_KEYS].reset_index(drop=True)
    for name in STATE_COLUMNS:
        values = getattr(st, name)
        out[name] = list(values.reshape(flat, *values.shape[2:]).tolist())
    return out


def state_columns(cells: pd.DataFrame, cases: pd.DataFrame, traces: pd.DataFrame) -> pd.DataFrame:
    """Columns run_id, case_id, method, round and :data:`STATE_COLUMNS` for every stored
    round of a mediated method (no rows for the other methods)."""
    mediated = traces[traces["method"].isin(list(mediated_methods()))]
    if mediated.empty:
        return pd.DataFrame(columns=[*_KEYS, *STATE_COLUMNS])
    where = cases[["run_id", "case_id", "scenario", "seed"]]
    rows = mediated.merge(where, on=["run_id", "case_id"], how="left")
    if rows["scenario"].isna().any():
        raise InputError("export", "the traces name cases the cases table does not hold")
    rows = rows.sort_values(["run_id", "scenario", "seed", "method", "case_id", "round"])
    by_cell = {(c.run_id, c.scenario, int(c.seed)): c for c in cells.itertuples(index=False)}
    parts = []
    for (run_id, scenario, seed, method), group in rows.groupby(["run_id", "scenario", "seed", "method"],
                                                                sort=False):
        cell = by_cell.get((run_id, scenario, int(seed)))
        if cell is None:
            raise InputError("export", f"{run_id}: traces of {scenario}/seed {seed} have no cell")
        parts.append(_detail(cell, str(method), group))
    return pd.concat(parts, ignore_index=True)
