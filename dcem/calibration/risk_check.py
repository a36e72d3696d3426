"""Checking the Learn-then-Test promise on data: many random CAL/TEST splits of one pool.

For each split the risk-controlled setting is chosen on the CAL cases
(:func:`dcem.calibration.risk_control.select_setting`) and its rate measured on the TEST
cases; the promise holds when the share of splits whose TEST rate exceeds alpha is at
most delta.  Beside it, the eq. (1) fit (:func:`dcem.calibration.fitting.fit_thresholds`)
on the same CAL cases, scored the same way on TEST: what the guarantee costs in decided
(certified) share, and how often the unguaranteed fit breaks the same bound.

Cases are replayed under each setting once for the whole pool (the outcome of a case
does not depend on which split it falls in), so a split costs index sums only, plus one
eq. (1) fit when ``compare_eq1`` is on.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from common.errors import InputError
from dcem.calibration.fitting import fit_thresholds
from dcem.calibration.risk_control import (RiskTarget, SettingOutcomes, config_outcomes, empirical_risks, outcome_rate,
                                           mediator_states, select_setting, setting_outcomes, subset_states)
from dcem.core.config import MediatorConfig
from dcem.core.panel import Panel
from dcem.core.state import RoundState

__all__ = ["SplitRecord", "GuaranteeCheck", "check_guarantee"]


@dataclass(frozen=True)
class SplitRecord:
    """One split: the rate and decided share on TEST of the LTT choice (and of the eq. 1
    fit when compared), and whether LTT found a passing setting."""

    guaranteed: bool
    ltt_rate: float
    ltt_decided: float
    eq1_rate: float | None
    eq1_decided: float | None


@dataclass(frozen=True)
class GuaranteeCheck:
    target: RiskTarget
    n_cal: int
    n_test: int
    splits: tuple[SplitRecord, ...]

    def summary(self) -> dict[str, Any]:
        """Violation shares (TEST rate above alpha), mean TEST rates and decided shares."""
        alpha = self.target.alpha
        ltt_rate = np.array([s.ltt_rate for s in self.splits])
        out: dict[str, Any] = {
            **self.target.to_dict(), "lambdas": len(self.target.lambdas), "n_cal": self.n_cal,
            "n_test": self.n_test, "splits": len(self.splits),
            "guaranteed_share": float(np.mean([s.guaranteed for s in self.splits])),
            "ltt_violation_share": float(np.mean(ltt_rate > alpha)),
            "ltt_mean_rate": float(ltt_rate.mean()),
            "ltt_mean_decided": float(np.mean([s.ltt_decided for s in self.splits])),
        }
        if self.splits and self.splits[0].eq1_rate is not None:
            eq1 = np.array([s.eq1_rate for s in self.splits], dtype=float)
            out.update(eq1_violation_share=float(np.mean(eq1 > alpha)), eq1_mean_rate=float(eq1.mean()),
                       eq1_mean_decided=float(np.mean([s.eq1_decided for s in self.splits])))
        return out


def _eq1_on_test(panel: Panel, reports: np.ndarray | None, probabilities: np.ndarray | None,
                 truth: np.ndarray, states: RoundState, base: MediatorConfig, high_risk: tuple[int, ...],
                 cal: np.ndarray, test: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(decided, harmful, loss) on TEST of the eq. (1) fit on CAL."""
    fit = fit_thresholds(panel, None if reports is None else reports[cal], truth[cal], base,
                         probabilities=None if probabilities is None else probabilities[cal])
    return config_outcomes(panel, subset_states(states, test), truth[test], high_risk, fit.config)


def _ltt_on_test(outcomes: SettingOutcomes, base: MediatorConfig, target: RiskTarget, cal: np.ndarray,
                 test: np.ndarray) -> tuple[bool, float, float]:
    fit = select_setting(outcomes, base, target, cal)
    if fit.chosen_lambda is None:  # everything escalated: nothing decided, nothing harmful, no loss
        return False, 0.0, 0.0
    chosen = target.lambdas.index(fit.chosen_lambda)
    scale = outcomes.loss_bound if target.risk == "system_risk" else 1.0
    rate = float(empirical_risks(outcomes, target.risk, test)[0][chosen] * scale)
    return True, rate, float(outcomes.decided[chosen, test].mean())


def check_guarantee(panel: Panel, reports: np.ndarray | None, truth: np.ndarray, base: MediatorConfig,
                    targets: Sequence[RiskTarget], high_risk: tuple[int, ...], *, n_cal: int, splits: int,
                    rng: np.random.Generator, probabilities: np.ndarray | None = None,
                    compare_eq1: bool = True) -> list[GuaranteeCheck]:
    """``splits`` random splits of the pool into ``n_cal`` CAL cases and the rest as TEST;
    one :class:`GuaranteeCheck` per target (the targets share the grid of the first), the
    eq. (1) fit made once per split."""
    y = np.asarray(truth, dtype=np.intp)
    if not 1 <= n_cal < y.shape[0]:
        raise InputError("n_cal", f"must leave TEST cases: 1 to {y.shape[0] - 1}, got {n_cal}")
    if splits < 1:
        raise InputError("splits", f"must be at least 1, got {splits}")
    if not targets or any(t.lambdas != targets[0].lambdas for t in targets):
        raise InputError("targets", "give at least one target, all on the same grid of settings")
    all_states = mediator_states(panel, reports, probabilities, base)
    outcomes = setting_outcomes(panel, reports, y, base, targets[0].lambdas, high_risk, states=all_states)
    states = all_states if compare_eq1 else None
    records: list[list[SplitRecord]] = [[] for _ in targets]
    for _ in range(splits):
        order = rng.permutation(y.shape[0])
        cal, test = order[:n_cal], order[n_cal:]
        eq1 = None if states is None else _eq1_on_test(panel, reports, probabilities, y, states, base, high_risk,
                                                       cal, test)
        for target, out in zip(targets, records):
            eq1_rate = None if eq1 is None else outcome_rate(*eq1, target.risk)
            out.append(SplitRecord(*_ltt_on_test(outcomes, base, target, cal, test), eq1_rate,
                                   None if eq1 is None else float(eq1[0].mean())))
    return [GuaranteeCheck(t, n_cal, y.shape[0] - n_cal, tuple(r)) for t, r in zip(targets, records)]
