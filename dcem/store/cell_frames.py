"""Rows of every store table for one finished (scenario, seed) cell.

:func:`cell_frames` turns a :class:`~dcem.core.results.ScenarioResult` into one DataFrame per
table (cases, traces, outcomes, metrics, ablation, and for language-model runs
case_texts and agent_turns).  The mediated methods' traces are re-scored here in
detail (posteriors, weights, energy terms ...), from the probability vectors when the
agents reported vectors, else from the labels; replay gives the same actions the live
run took.
"""
from __future__ import annotations

from typing import Any, Iterable

import numpy as np
import pandas as pd

from dcem.core.policy import NO_TARGET, Action
from dcem.core.replay import Trajectory, score_probabilities, score_reports
from dcem.core.results import MethodRun, ScenarioResult
from dcem.core.state import RoundState
from dcem.core.vocabulary import mediated_methods

__all__ = ["cell_frames"]


def _nan_to_none(values: Iterable[float]) -> list[float | None]:
    return [None if v is None or (isinstance(v, float) and np.isnan(v)) else float(v) for v in values]


def cell_frames(run_id: str, result: ScenarioResult) -> dict[str, pd.DataFrame]:
    """Rows of every table for one cell, as DataFrames keyed by table name."""
    panel = result.panel
    n = len(result.case_ids)
    cases = pd.DataFrame({
        "run_id": run_id, "case_id": list(result.case_ids), "scenario": result.scenario,
        "seed": int(result.seed), "truth": result.truth.astype(int).tolist(),
        "features": [list(map(int, row)) for row in np.asarray(result.features).reshape(n, -1)]
        if np.asarray(result.features).size else [[] for _ in range(n)],
    })
    trace_frames, outcome_frames, metric_rows = [], [], []
    for method, run in result.methods.items():
        trace_frames.append(_trace_frame(run_id, result, run))
        outcome_frames.append(pd.DataFrame({
            "run_id": run_id, "case_id": list(result.case_ids), "method": method,
            "action": [Action(int(a)).name for a in run.outcome_action],
            "decision": run.outcome_decision.astype(int).tolist(),
            "rounds": run.outcome_round.astype(int).tolist(),
            "certified": run.certified.astype(bool).tolist(), "budget": run.budget.astype(bool).tolist(),
            "truth": result.truth.astype(int).tolist(),
            "loss": panel.loss[run.outcome_decision.astype(int), result.truth.astype(int)].tolist(),
        }))
        metric_rows += [(run_id, result.scenario, int(result.seed), method, k, v)
                        for k, v in run.metrics.items()]
    metrics = pd.DataFrame(metric_rows, columns=["run_id", "scenario", "seed", "method", "metric", "value"])
    metrics["value"] = _nan_to_none(metrics["value"])
    ablation = pd.DataFrame(
        [(run_id, result.scenario, int(result.seed), float(row["xi"]), int(row["horizon"]), k, v)
         for row in result.ablation for k, v in row.items() if k not in ("xi", "horizon")],
        columns=["run_id", "scenario", "seed", "xi", "horizon", "metric", "value"])
    ablation["value"] = _nan_to_none(ablation["value"])
    out = {"cases": cases, "traces": pd.concat(trace_frames, ignore_index=True),
           "outcomes": pd.concat(outcome_frames, ignore_index=True), "metrics": metrics,
           "ablation": ablation}
    if result.texts:
        out["case_texts"] = pd.DataFrame({
            "run_id": run_id, "case_id": list(result.case_ids),
            "source_id": list(result.source_ids) if result.source_ids else None, "text": list(result.texts)})
    turns = [_turn_row(run_id, result, method, turn) for method, run in result.methods.items()
             for turn in run.turns]
    if turns:
        out["agent_turns"] = pd.DataFrame(turns)
    return out


def _turn_row(run_id: str, result: ScenarioResult, method: str, turn: dict[str, Any]) -> dict[str, Any]:
    probs = turn.get("probabilities")
    return {"run_id": run_id, "case_id": result.case_ids[int(turn["case"])], "method": method,
            "round": int(turn["round"]), "agent": int(turn["agent"]), "note": turn.get("note"),
            "reply": turn.get("reply"), "label": None if turn.get("label") is None else int(turn["label"]),
            "probabilities": None if probs is None else [float(p) for p in probs],
            "error": turn.get("error"), "cached": bool(turn.get("cached", False)),
            "cache_key": turn.get("cache_key")}


def _flat_rows(a: np.ndarray, flat: int) -> list[Any]:
    """(N, T, ...) as a list of ``flat`` = N * T per-round rows (nested lists)."""
    return a.reshape(flat, *a.shape[2:]).tolist()


def _report_columns(run_id: str, result: ScenarioResult, method: str, reports: np.ndarray) -> pd.DataFrame:
    """Key and report columns, one row per (case, round); reports : int (N, T, A)."""
    n, rounds, _ = reports.shape
    case_col = np.repeat(np.asarray(result.case_ids, dtype=object), rounds)
    return pd.DataFrame({
        "run_id": run_id, "case_id": case_col, "method": method,
        "round": np.tile(np.arange(1, rounds + 1), n),
        "reports": list(reports.reshape(n * rounds, -1).tolist()),
    })


def _run_probabilities(run: MethodRun, reports: np.ndarray) -> np.ndarray | None:
    """The run's probability reports (N, T, A, K) as floats, or None for label agents.

    Raises ValueError when their leading shape differs from ``reports`` (N, T, A).
    """
    probs = None if run.probabilities is None else np.asarray(run.probabilities, dtype=float)
    if probs is not None and probs.shape[:3] != reports.shape:
        raise ValueError(f"{run.method}: probabilities {probs.shape} do not match reports {reports.shape}")
    return probs


def _replay_detail(result: ScenarioResult, method: str, reports: np.ndarray,
                   probs: np.ndarray | None) -> Trajectory:
    """Detailed replay of a mediated method's trajectories (N, T, A), with its escalation.

    The horizon is raised to T when the cell's config is shorter.  Uses the
    probability vectors (N, T, A, K) when given, else the labels.
    """
    cfg = result.config.with_changes(escalation=mediated_methods()[method])
    if cfg.t_max < reports.shape[1]:
        cfg = cfg.with_changes(t_max=reports.shape[1])
    if probs is not None:
        return score_probabilities(result.panel, probs, cfg)
    return score_reports(result.panel, reports, cfg, detail=True)


def _add_state_columns(frame: pd.DataFrame, st: RoundState, flat: int) -> None:
    """Mediator-state columns (posteriors ... energy terms), one row per (case, round)."""
    frame["posteriors"] = _flat_rows(st.posteriors, flat)
    frame["weights"] = _flat_rows(st.weights, flat)
    frame["pooled"] = _flat_rows(st.pooled, flat)
    frame["decision"] = _flat_rows(st.decision, flat)
    frame["runner_up"] = _flat_rows(st.runner_up, flat)
    frame["margin"] = _flat_rows(st.margin, flat)
    frame["agent_risk"] = _flat_rows(st.agent_risk, flat)
    frame["dangerous_miss"] = _flat_rows(st.dangerous_miss, flat)
    frame["energy"] = _flat_rows(st.energy, flat)
    frame["e_disagreement"] = _flat_rows(st.disagreement, flat)
    frame["e_risk"] = _flat_rows(st.risk_term, flat)
    frame["e_margin"] = _flat_rows(st.margin_term, flat)


def _add_policy_columns(frame: pd.DataFrame, sc: Trajectory, features: dict[tuple[int, int], tuple[str, ...]],
                        n: int, rounds: int) -> None:
    """Descent, action, steer target and S(t), certified and budget columns (N * T rows)."""
    flat = n * rounds
    frame["descent"] = _nan_to_none(_flat_rows(sc.descent, flat))
    frame["action"] = [Action(int(a)).name for a in _flat_rows(sc.action, flat)]
    for name, arr in (("steer_agent", sc.steer_agent), ("steer_current", sc.steer_current),
                      ("steer_alternative", sc.steer_alternative)):
        frame[name] = [None if v == NO_TARGET else int(v) for v in _flat_rows(arr, flat)]
    frame["steer_features"] = [list(features[(i, t)]) if (i, t) in features else None
                               for i in range(n) for t in range(1, rounds + 1)]
    frame["certified"] = _flat_rows(sc.certified, flat)
    frame["budget"] = _flat_rows(sc.budget, flat)


def _trace_frame(run_id: str, result: ScenarioResult, run: MethodRun) -> pd.DataFrame:
    """One row per (case, round) of a method run; mediated methods get the replayed detail."""
    reports = np.asarray(run.reports, dtype=np.int64)
    n, rounds, _ = reports.shape
    frame = _report_columns(run_id, result, run.method, reports)
    probs = _run_probabilities(run, reports)
    if probs is not None:
        frame["probabilities"] = probs.reshape(n * rounds, *probs.shape[2:]).tolist()
    if run.method not in mediated_methods():
        return frame
    sc = _replay_detail(result, run.method, reports, probs)
    st = sc.state
    assert st is not None
    _add_state_columns(frame, st, n * rounds)
    _add_policy_columns(frame, sc, run.steer_features, n, rounds)
    return frame
