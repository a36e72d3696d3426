"""Learn-then-Test on a stored run (the what-if page's "Thresholds with a guarantee").

A stored run holds each cell's TEST trajectories only, so each cell's cases are split at
random (seeded, the same split on every call) into a CAL half, on which the
risk-controlled setting is chosen (:func:`dcem.calibration.risk_control.select_setting`),
and a TEST half, on which its rate and decided share are measured; beside it, the
cell's own (eq. 1) thresholds on the same TEST half.  The panel, the loss and every other
setting are the cell's own (or the re-calibrated ones of the page's calibration choice).
Replay keeps the recorded reports, as every what-if does.

The promise is per cell, over random draws of the CAL half: each cell here has one draw,
so a cell whose chosen level is above the bound on its TEST half is one of the draws the
promise allows (at most delta of them), and a cell where no level passed escalates every
case, so its rate of 0 shows nothing.  :func:`cells_worst_first` and
:func:`guarantee_counts` keep those apart instead of pooling them.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from common.errors import InputError
from dcem.analysis.run_replay import ReplayCell, RunReplay
from dcem.calibration.risk_control import (RiskControlFit, RiskTarget, config_outcomes, mediator_states,
                                           outcome_rate, select_setting, setting_outcomes, subset_states)

__all__ = ["CellRiskControl", "risk_control_cells", "pooled_risk_control", "cells_worst_first", "guarantee_counts",
           "MIN_CASES"]

MIN_CASES = 4  # a cell needs at least two CAL and two TEST cases


@dataclass(frozen=True)
class CellRiskControl:
    """One cell: the LTT fit on its CAL half, and rates on its TEST half of the chosen
    setting (``test_rate``, ``test_decided``) and of the cell's own thresholds (``own_*``)."""

    scenario: str
    seed: int
    n_cal: int
    n_test: int
    fit: RiskControlFit
    test_rate: float
    test_decided: float
    own_rate: float
    own_decided: float


def _cell(cell: ReplayCell, target: RiskTarget, rng: np.random.Generator) -> CellRiskControl:
    n = len(cell.truth)
    order = rng.permutation(n)
    cal, test = np.sort(order[: n // 2]), np.sort(order[n // 2:])
    states = mediator_states(cell.panel, cell.reports, cell.probabilities, cell.config)
    outcomes = setting_outcomes(cell.panel, cell.reports, cell.truth, cell.config, target.lambdas, cell.high_risk,
                                states=states)
    fit = select_setting(outcomes, cell.config, target, cal)
    states_test = subset_states(states, test)
    truth = np.asarray(cell.truth, dtype=np.intp)
    chosen = config_outcomes(cell.panel, states_test, truth[test], cell.high_risk, fit.config)
    own = config_outcomes(cell.panel, states_test, truth[test], cell.high_risk, cell.config)
    return CellRiskControl(cell.scenario, cell.seed, len(cal), len(test), fit, outcome_rate(*chosen, target.risk),
                           float(chosen[0].mean()), outcome_rate(*own, target.risk), float(own[0].mean()))


def risk_control_cells(replay: RunReplay, target: RiskTarget, *, seed: int = 0) -> list[CellRiskControl]:
    """Every cell of a D-CEM replay, split and tested as the module docstring says."""
    if replay.method != "dcem":
        raise InputError("method", "risk control chooses between deciding and escalating: pick D-CEM, not "
                         "D-CEM without escalation")
    small = [f"{c.scenario}/seed {c.seed}" for c in replay.cells if len(c.truth) < MIN_CASES]
    if small:
        raise InputError("cases", f"{small[0]} has fewer than {MIN_CASES} cases to split into CAL and TEST")
    return [_cell(cell, target, np.random.default_rng([seed, i])) for i, cell in enumerate(replay.cells)]


def pooled_risk_control(cells: list[CellRiskControl]) -> dict[str, Any]:
    """Over every cell: how many passed, and the TEST rates and decided shares weighted by
    each cell's TEST cases (the chosen setting's, and the cells' own thresholds')."""
    weights = np.array([c.n_test for c in cells], dtype=float)

    def mean(values: list[float]) -> float:
        return float(np.dot(values, weights) / weights.sum()) if weights.sum() else float("nan")

    return {"cells": len(cells), "guaranteed": sum(c.fit.guaranteed for c in cells),
            "test_rate": mean([c.test_rate for c in cells]), "test_decided": mean([c.test_decided for c in cells]),
            "own_rate": mean([c.own_rate for c in cells]), "own_decided": mean([c.own_decided for c in cells])}


def cells_worst_first(cells: list[CellRiskControl]) -> list[CellRiskControl]:
    """The cells in which a level passed, worst first (largest rate on the TEST half; ties
    in the given order), then the cells in which none passed (every case escalated)."""
    passed = [c for c in cells if c.fit.guaranteed]
    return sorted(passed, key=lambda c: -c.test_rate) + [c for c in cells if not c.fit.guaranteed]


def guarantee_counts(cells: list[CellRiskControl], target: RiskTarget) -> dict[str, Any]:
    """Per cell, not pooled: how many cells there are, in how many a level passed, in how
    many of those the TEST half's rate is above ``target.alpha``, and the worst such cell
    (None when no level passed anywhere)."""
    passed = cells_worst_first(cells)[:sum(c.fit.guaranteed for c in cells)]
    above = [c for c in passed if c.test_rate > target.alpha]
    return {"cells": len(cells), "passed": len(passed), "none_passed": len(cells) - len(passed),
            "above": len(above), "worst": passed[0] if passed else None}
