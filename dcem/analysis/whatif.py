"""What-if re-scoring of a stored run under new thresholds or a new loss.

The dashboard's "Loss and thresholds (what-if)" page loads a run once
(:func:`load_run_replay`) and then re-scores every stored trajectory of one mediated
method under the user's settings (:func:`rescore`, :func:`sweep`) without calling any
agent: the recorded label reports are replayed through the mediator exactly as
:func:`dcem.core.replay.score_reports` does (same per-tuple table, same policy kernel, same
outcomes bit for bit), so a change of thresholds moves the stopping round and the
action of each case.  Replay assumes the recorded reports: it does not re-simulate how
agents would have answered a different steer.

Probability reports: when a cell's agents reported probability vectors (language-model
runs store one vector per agent and round in ``traces.probabilities``), those vectors,
not the argmax labels, are re-scored, as :func:`dcem.core.replay.score_probabilities` does
(the per-round mediator states depend only on the vectors, the loss and the
threshold-free settings, so they are memoised and a threshold change re-runs the policy
alone); the models are never asked again, so a changed steer cannot change what they said.

Settings (:func:`rescore`):

* ``config=None``: every cell keeps its original (fitted) configuration;
* ``config`` given: it REPLACES every cell's configuration (the user's sliders), so the
  per-cell fitted thresholds are dropped; with ``per_cell_thresholds=True`` each cell
  keeps its own fitted ``eps_safe, eps_low, m_safe, delta`` and takes every other field
  from ``config``;
* ``changes`` given (instead of ``config``): each cell keeps its own configuration with
  these fields set in every cell (:func:`dcem.analysis.whatif_controls.changed_configs`);
  ``changes={}`` is the run's own settings -- the dashboard's model: a parameter the user
  has not moved stays per cell;
* ``loss`` given: replaces every cell's loss (shape K x K, finite, >= 0);
* method ``"dcem_noesc"`` always runs with escalation disabled, as it was recorded;
* another calibration: re-score ``with_calibration(replay, calibration_set)``
  (:mod:`dcem.analysis.whatif_calibration`), the run with every cell's confusion matrices
  (and empirical prior) estimated from a calibration set.

Speed: each cell's mediator table (one row per report tuple, ``K ** A`` rows) is built
once per (loss, non-threshold settings) and memoised on the :class:`RunReplay`, so moving
a threshold only re-runs the gathers (per cell) and the policy kernel, which cells
sharing the policy's scalar settings go through in one call.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from dcem.core.metrics import METRIC_NAMES
from dcem.analysis.run_replay import ReplayCell, RunReplay, load_run_replay
from dcem.analysis.run_scoring import (
    ROUND_ACTIONS,
    THRESHOLD_FIELDS,
    RunOutcomes,
    cell_configs,
    cell_losses,
    check_loss,
    pooled_metrics,
    score_run,
)
from dcem.analysis.whatif_controls import changed_configs
from dcem.core.config import MediatorConfig
from dcem.core.policy import Action
from common.errors import ConfigError, InputError
from common.fields import Instance, check

__all__ = ["ReplayCell", "RunReplay", "WhatIfResult", "THRESHOLD_FIELDS", "SWEEP_PARAMETERS",
           "SWEEP_COLUMNS", "PAIR_GAP", "load_run_replay", "rescore", "baseline_metrics", "sweep", "sweep_grid",
           "pair_moves"]

SWEEP_PARAMETERS = ("eps_safe", "eps_low", "m_safe", "delta", "s_asym", "window", "t_max",
                    "alpha", "beta", "gamma", "lambda_pool", "rho_min", "omega_min")
SWEEP_COLUMNS = ("value", "escalation_rate", "harmful_consensus", "system_risk", "risk", "accuracy",
                 "certified_rate", "avg_rounds", "valid")
_ACTION_NAMES = np.array([a.name for a in sorted(Action)], dtype=object)
_OUTCOME_ACTIONS = (Action.STOP_AND_DECIDE, Action.STOP_AND_ESCALATE, Action.PENDING)


@dataclass(frozen=True, eq=False)
class WhatIfResult:
    """Re-scored outcomes of every case of a run.

    outcomes : one row per case: case_id, scenario, seed, truth, truth_label, action (name),
        decision, decision_label, rounds, certified, budget, loss (L[decision, truth]),
        energy (at the outcome round), lowest_energy (of the played rounds), and the case's
        cell's eps_safe and eps_low
    metrics : Appendix E metrics pooled over all cases (:func:`dcem.core.metrics.episode_metrics`)
    per_scenario : one row per scenario: scenario, n_cases and every metric
    outcome_mix : share of cases per terminal action (STOP_AND_DECIDE, STOP_AND_ESCALATE,
        PENDING = no terminal action within the stored rounds)
    round_mix : share of the played rounds (round 1 to each case's outcome round) per
        action (CONTINUE, DIFFERENTIAL_STEER, STOP_AND_DECIDE, STOP_AND_ESCALATE)
    """

    outcomes: pd.DataFrame
    metrics: dict[str, float]
    per_scenario: pd.DataFrame
    outcome_mix: dict[str, float]
    round_mix: dict[str, float]


def _per_scenario(replay: RunReplay, sc: RunOutcomes, losses: list[np.ndarray]) -> pd.DataFrame:
    rows = []
    for scenario in replay.scenarios:
        mask = replay.scenario == scenario
        rows.append({"scenario": scenario, "n_cases": int(mask.sum()),
                     **pooled_metrics(replay, sc, losses, mask)})
    return pd.DataFrame(rows, columns=["scenario", "n_cases", *METRIC_NAMES])


def _outcome_frame(replay: RunReplay, sc: RunOutcomes, losses: list[np.ndarray],
                   cfgs: list[MediatorConfig]) -> pd.DataFrame:
    lost = np.empty(replay.n_cases)
    eps_safe = np.concatenate([np.full(c.n_cases, cfg.eps_safe) for c, cfg in zip(replay.cells, cfgs)])
    eps_low = np.concatenate([np.full(c.n_cases, cfg.eps_low) for c, cfg in zip(replay.cells, cfgs)])
    truth_label = np.empty(replay.n_cases, dtype=object)
    decision_label = np.empty(replay.n_cases, dtype=object)
    start = 0
    for cell, loss in zip(replay.cells, losses):
        rows = slice(start, start + cell.n_cases)
        start += cell.n_cases
        labels = np.asarray(cell.panel.labels, dtype=object)
        lost[rows] = loss[sc.decision[rows], cell.truth]
        truth_label[rows], decision_label[rows] = labels[cell.truth], labels[sc.decision[rows]]
    return pd.DataFrame({
        "case_id": replay.case_id, "scenario": replay.scenario, "seed": replay.seed,
        "truth": replay.truth, "truth_label": truth_label, "action": _ACTION_NAMES[sc.action],
        "decision": sc.decision, "decision_label": decision_label, "rounds": sc.rounds,
        "certified": sc.certified, "budget": sc.budget, "loss": lost, "energy": sc.energy,
        "lowest_energy": sc.lowest, "eps_safe": eps_safe, "eps_low": eps_low,
    })


def _configs(replay: RunReplay, config: MediatorConfig | None, per_cell_thresholds: bool,
             changes: Mapping[str, Any] | None) -> list[MediatorConfig]:
    if changes is None:
        return cell_configs(replay, config, per_cell_thresholds)
    if config is not None:
        raise InputError("changes", "give either a configuration for every cell or changes, not both")
    return changed_configs(replay, changes)


def rescore(replay: RunReplay, *, config: MediatorConfig | None = None, loss: object | None = None,
            per_cell_thresholds: bool = False, changes: Mapping[str, Any] | None = None) -> WhatIfResult:
    """Re-score every stored trajectory of the run under new settings (no agent calls).

    config : None keeps each cell's original (fitted) configuration; a MediatorConfig
        replaces every cell's configuration (the dashboard's sliders) -- with
        ``per_cell_thresholds=True`` each cell keeps its fitted eps_safe, eps_low, m_safe
        and delta and takes every other field from ``config``.
    changes : instead of ``config``, fields set in every cell while every other field keeps
        each cell's own value (``{}``: the run's own settings, bit for bit).
    loss : None keeps each cell's loss; a K x K array (finite, >= 0) replaces it
        (:class:`InputError` naming ``loss`` otherwise).
    """
    loss_arr = check_loss(replay, loss)
    cfgs = _configs(replay, config, per_cell_thresholds, changes)
    sc = score_run(replay, cfgs, loss_arr)
    losses = cell_losses(replay, loss_arr)
    n = replay.n_cases
    outcome_mix = {a.name: float(np.count_nonzero(sc.action == a)) / n for a in _OUTCOME_ACTIONS}
    played = max(int(sc.round_counts.sum()), 1)
    round_mix = {a.name: float(c) / played for a, c in zip(ROUND_ACTIONS, sc.round_counts)}
    return WhatIfResult(_outcome_frame(replay, sc, losses, cfgs), pooled_metrics(replay, sc, losses),
                        _per_scenario(replay, sc, losses), outcome_mix, round_mix)


def baseline_metrics(replay: RunReplay) -> dict[str, float]:
    """Metrics pooled over all cases under each cell's original configuration and loss
    (``rescore(replay).metrics``; the per-scenario values are in ``rescore(replay)``)."""
    cfgs = cell_configs(replay, None, False)
    return pooled_metrics(replay, score_run(replay, cfgs, None), cell_losses(replay, None))


def _swept_configs(replay: RunReplay, config: MediatorConfig | None, changes: Mapping[str, Any],
                   parameter: str, value: float) -> list[MediatorConfig] | None:
    """Every cell's configuration with ``parameter = value`` (set in every cell), or None
    when that makes some cell's configuration invalid."""
    new: float | int = float(value)  # numpy scalars too
    if parameter in ("window", "t_max"):
        if not float(new).is_integer():
            return None
        new = int(new)
    try:
        if config is not None:
            return cell_configs(replay, config.with_changes(**{parameter: new}), False)
        if parameter in _PAIRED and _PAIRED[parameter] not in changes:
            others = {k: v for k, v in changes.items() if k != parameter}
            return _ordered_pair(changed_configs(replay, others), parameter, float(new))
        return changed_configs(replay, {**changes, parameter: new})
    except (ConfigError, TypeError, ValueError, OverflowError):
        return None


# eps_safe < eps_low in every cell: sweeping one moves the other, per cell, only where needed
_PAIRED = {"eps_safe": "eps_low", "eps_low": "eps_safe"}
PAIR_GAP = 1e-6


def _ordered_pair(cfgs: list[MediatorConfig], parameter: str, value: float) -> list[MediatorConfig]:
    """``parameter = value`` in every cell; a cell whose other threshold would break
    eps_safe < eps_low gets it moved to :data:`PAIR_GAP` beyond ``value`` (ConfigError
    when that is impossible, e.g. eps_low = 0)."""
    out = []
    for cfg in cfgs:
        if parameter == "eps_safe":
            low = cfg.eps_low if cfg.eps_low > value else value + PAIR_GAP
            out.append(cfg.with_changes(eps_safe=value, eps_low=low))
        else:
            safe = cfg.eps_safe if cfg.eps_safe < value else value - PAIR_GAP
            out.append(cfg.with_changes(eps_low=value, eps_safe=safe))
    return out


def pair_moves(replay: RunReplay, changes: Mapping[str, Any], parameter: str, values: Sequence[float]) -> int:
    """How many of the swept ``values`` move the other threshold of the eps_safe < eps_low
    pair in some cell (0 for other parameters, or when ``changes`` set the other one)."""
    if parameter not in _PAIRED or _PAIRED[parameter] in changes:
        return 0
    try:
        own = changed_configs(replay, {k: v for k, v in changes.items() if k != parameter})
    except ConfigError:
        return 0
    if parameter == "eps_safe":
        lowest = min(cfg.eps_low for cfg in own)
        return sum(1 for v in values if float(v) >= lowest)
    highest = max(cfg.eps_safe for cfg in own)
    return sum(1 for v in values if float(v) <= highest)


def sweep(replay: RunReplay, *, parameter: str, values: Sequence[float], config: MediatorConfig | None = None,
          loss: object | None = None, changes: Mapping[str, Any] | None = None) -> pd.DataFrame:
    """Metrics of ``rescore(replay, config=config with parameter=value, loss=loss)`` for each
    value, one row per value (columns :data:`SWEEP_COLUMNS`).  With ``changes`` instead of
    ``config``: ``rescore(replay, changes={**changes, parameter: value}, loss=loss)`` (the
    swept parameter set in every cell, the unchanged ones per cell).

    A value that makes the configuration invalid gives a row with ``valid=False`` and NaN
    metrics instead of an error.  Sweeping eps_safe (or eps_low) with ``changes`` that leave
    the other per cell keeps eps_safe < eps_low cell by cell: where a cell's eps_low is not
    above the swept eps_safe it is raised to :data:`PAIR_GAP` above it (where its eps_safe
    is not below a swept eps_low it is lowered), so the sweep covers the whole range rather
    than stopping at the lowest eps_low of the run's cells (:func:`pair_moves` counts such
    values).  The per-tuple tables are
    reused across values when the parameter is read only by the policy.
    """
    if parameter not in SWEEP_PARAMETERS:
        raise InputError("parameter", f"cannot sweep {parameter!r} (choose one of {', '.join(SWEEP_PARAMETERS)})")
    if config is not None and changes is not None:
        raise InputError("changes", "give either a configuration for every cell or changes, not both")
    if changes is None:
        check("config", config, Instance(MediatorConfig, msg="expected a MediatorConfig, got {type}"), error=InputError)
    loss_arr = check_loss(replay, loss)
    losses = cell_losses(replay, loss_arr)
    rows = []
    for value in values:
        try:
            shown = float(value)
        except (TypeError, ValueError):
            raise InputError("values", f"sweep values must be numbers, got {value!r}") from None
        cfgs = _swept_configs(replay, config, changes or {}, parameter, value)
        row: dict[str, Any] = {"value": shown, "valid": cfgs is not None}
        if cfgs is None:
            row.update({name: float("nan") for name in SWEEP_COLUMNS[1:-1]})
        else:
            m = pooled_metrics(replay, score_run(replay, cfgs, loss_arr), losses)
            row.update({name: m[name] for name in SWEEP_COLUMNS[1:-1]})
        rows.append(row)
    frame = pd.DataFrame(rows, columns=list(SWEEP_COLUMNS))
    return frame.astype({"value": float, "valid": bool})


def sweep_grid(replay: RunReplay, parameter: str, changes: Mapping[str, Any], low: float, high: float,
               n: int = 20, scan: int = 201) -> np.ndarray:
    """``n`` values of ``parameter`` spread over the part of [low, high] that every cell
    accepts with ``changes`` (eps_safe and eps_low keep their order per cell, see
    :func:`sweep`), so a sweep leaves none out; for ``t_max`` and ``window`` every accepted whole number.  Empty when
    no value in the range is accepted."""
    if parameter in ("t_max", "window"):
        candidates = np.arange(max(int(math.ceil(low)), 1), int(high) + 1, dtype=float)
    else:
        candidates = np.linspace(float(low), float(high), scan)
    ok = [v for v in candidates if _swept_configs(replay, None, changes, parameter, v) is not None]
    if not ok or parameter in ("t_max", "window"):
        return np.asarray(ok, dtype=float)
    values = np.linspace(ok[0], ok[-1], n)
    return np.asarray([v for v in values if _swept_configs(replay, None, changes, parameter, v) is not None])
