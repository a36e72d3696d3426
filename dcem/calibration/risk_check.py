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

The promise is per cell (:data:`PROMISE`): one panel on one kind of case, over random
draws of its CAL cases.  A share of splits pooled over several cells averages a cell that
breaks it with cells that keep it, and a cell in which no level ever passes escalates every
case, so its 0 % above alpha says nothing.  :func:`per_cell` orders the cells' summaries
worst first and keeps those apart.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np

from common.errors import InputError
from dcem.calibration.fitting import fit_thresholds
from dcem.calibration.risk_control import (RiskTarget, SettingOutcomes, config_outcomes, empirical_risks, outcome_rate,
                                           mediator_states, select_setting, setting_outcomes, subset_states)
from dcem.core.config import MediatorConfig
from dcem.core.panel import Panel
from dcem.core.state import RoundState

__all__ = ["PROMISE", "SplitRecord", "GuaranteeCheck", "check_guarantee", "per_cell", "per_cell_markdown"]

PROMISE = ("per cell: for one panel on one kind of case, over random draws of the CAL cases, the chosen level's "
           "rate on new cases exceeds alpha in at most a share delta of the draws")


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


def per_cell(summaries: Sequence[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Cells' :meth:`GuaranteeCheck.summary` rows (each with a ``cell`` name) as
    ``(tested, nothing_passed)``: the rows in which some level passed in at least one
    split, worst first (share of splits above alpha, largest first; then the name), and
    the rows in which no level ever passed (every case escalated, 0 % above alpha by
    construction), by name.  Each row gains ``kept``: its share above alpha is at most
    delta."""
    rows = [{**row, "kept": row["ltt_violation_share"] <= row["delta"]} for row in summaries]
    missing = [i for i, row in enumerate(rows) if "cell" not in row]
    if missing:
        raise InputError("summaries", f"row {missing[0]} names no cell")
    tested = sorted((r for r in rows if r["guaranteed_share"] > 0),
                    key=lambda r: (-r["ltt_violation_share"], str(r["cell"]), str(r["risk"]), r["alpha"]))
    nothing = sorted((r for r in rows if r["guaranteed_share"] == 0),
                     key=lambda r: (str(r["cell"]), str(r["risk"]), r["alpha"]))
    return tested, nothing


_RISK_NAMES = {"system_risk": "system risk", "harmful_consensus": "harmful consensus",
               "harmful_among_decided": "harmful among decided"}


def _target(row: Mapping[str, Any]) -> str:
    return f"{_RISK_NAMES.get(row['risk'], row['risk'])} ≤ {row['alpha']:g}"


def per_cell_markdown(lines: Sequence[Mapping[str, Any]]) -> str:
    """BENCHMARKS.md's per-cell table of ``risk_control_cell`` lines (the benchmark's
    :func:`GuaranteeCheck.summary` per cell and target, with ``pool`` and ``cell``): every
    row in which a level passed and some split was above alpha, worst first; then, counted
    per pool and target, the rows in which a level passed and no split was above alpha, and
    apart from them the rows in which no level ever passed (every case escalated)."""
    rows = [r for r in lines if r.get("benchmark") == "risk_control_cell"]
    tested, nothing = per_cell(rows)
    above = [r for r in tested if r["ltt_violation_share"] > 0]
    out = ["| cell (CAL / TEST cases, splits) | target (delta 0.1) | a level passed | LTT: TEST above alpha | "
           "LTT: TEST rate | LTT: decided | eq. (1): TEST above alpha | eq. (1): decided |",
           "|---|---|---|---|---|---|---|---|"]
    for r in above:
        share = f"{r['ltt_violation_share']:.1%}" + ("" if r["kept"] else " (over delta)")
        out.append(f"| {r['cell']} ({r['n_cal']} / {r['n_test']}, {r['splits']:,}) | {_target(r)} | "
                   f"{r['guaranteed_share']:.0%} | {share} | {r['ltt_mean_rate']:.3f} | {r['ltt_mean_decided']:.0%} | "
                   f"{r['eq1_violation_share']:.1%} | {r['eq1_mean_decided']:.0%} |")
    broken = sum(not r["kept"] for r in tested)
    deltas = ", ".join(f"{d:g}" for d in sorted({float(r["delta"]) for r in rows}))
    out += ["", f"{len(tested)} cell-target rows in which a level passed in at least one split: {len(above)} with "
            f"some split above alpha, in the table worst first ({broken} of them above delta, {deltas}), and "
            f"{len(tested) - len(above)} with none:", "", *_counted(r for r in tested if r["ltt_violation_share"] == 0),
            "",
            f"{len(nothing)} rows in which no level passed in any split (every case escalated, 0 % above alpha by "
            "construction):", "", *_counted(nothing)]
    return "\n".join(out) + "\n"


def _counted(rows: Any) -> list[str]:
    """One line per target: how many rows, by pool."""
    by_target: dict[str, dict[str, int]] = {}
    for r in rows:
        pools = by_target.setdefault(_target(r), {})
        pools[str(r.get("pool", "?"))] = pools.get(str(r.get("pool", "?")), 0) + 1
    return [f"- {target}: {sum(pools.values())} ({', '.join(f'{p} {n}' for p, n in pools.items())})"
            for target, pools in by_target.items()]
