"""Thresholds refitted for a changed loss (the what-if page's offer after a loss change).

A run's thresholds (eps_safe, eps_low, m_safe, delta) were fitted per cell by eq. (1)
(:func:`dcem.calibration.fitting.fit_thresholds`) under the run's own loss matrix.  The
energy includes the agents' expected risk under the loss, so a new loss moves every
energy, and the fitted thresholds no longer mean what they meant: raising l_high can
send most cases above eps_low and escalate them.  :func:`refit_thresholds` fits them
again under the new loss.

Which cases: the fit should use the cell's CAL trajectories, but a stored run keeps only
the TEST trajectories (a cell stores its CAL counts and the fit's report, not the CAL
reports).  So each cell's stored cases are split at random (seeded; the same split as the
guarantee check, :mod:`dcem.analysis.whatif_risk`) into a fitting half, on which eq. (1)
is minimised under the new loss, and a held-out half, on which the refitted thresholds
and the run's own are both measured.  The costs of eq. (1) (c_esc, c_round) and the
delta rule are the ones the cell was fitted with when its stored fit report names them
(:func:`stored_fit_costs`), else the defaults.  The search starts from the cell's own
thresholds; every other setting is the cell's own with the page's changes applied.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from common.errors import InputError
from dcem.analysis.run_replay import ReplayCell, RunReplay
from dcem.analysis.run_scoring import THRESHOLD_FIELDS, check_loss
from dcem.analysis.whatif import rescore
from dcem.analysis.whatif_calibration import own_replay
from dcem.analysis.whatif_controls import changed_configs
from dcem.calibration.fitting import C_ESC, C_ROUND, DELTA_RULES, ThresholdGrid, fit_thresholds
from dcem.store.database import Store
from dcem.store.run_reads import cell_confusions

__all__ = ["FitCosts", "CellRefit", "Refit", "MIN_CASES", "HELD_METRICS", "stored_fit_costs", "refit_thresholds"]

MIN_CASES = 4  # two cases to fit on and two held out
HELD_METRICS = ("escalation_rate", "decided_rate", "harmful_consensus", "system_risk", "risk", "avg_rounds")


@dataclass(frozen=True)
class FitCosts:
    """The costs of eq. (1) a cell was fitted with, and whether its report named them
    (``stored``: False when the defaults stand in, e.g. for Learn-then-Test thresholds)."""

    c_esc: float = C_ESC
    c_round: float = C_ROUND
    delta_rule: str = "fitted"
    stored: bool = False


@dataclass(frozen=True)
class CellRefit:
    """One cell: how many cases the fit used and held out, the thresholds before and after."""

    scenario: str
    seed: int
    n_fit: int
    n_held: int
    before: dict[str, float]
    after: dict[str, float]


@dataclass(frozen=True, eq=False)
class Refit:
    """The run with refitted thresholds (``replay``: every cell's config has them; its
    ``base`` is the run's own replay), each cell's refit, and the pooled metrics of the
    held-out halves under the run's thresholds (``held_own``) and the refitted ones
    (``held_refit``), both with the new loss and the page's changes; ``costs`` are the
    eq. (1) costs when every cell shares them (None otherwise)."""

    replay: RunReplay
    cells: tuple[CellRefit, ...]
    held_own: dict[str, float]
    held_refit: dict[str, float]
    n_held: int
    costs: FitCosts | None

    def objective(self, metrics: Mapping[str, float]) -> float | None:
        """Eq. (1)'s cost of pooled ``metrics`` (the system risk, c_esc per escalation,
        c_round per round), or None when the cells' costs differ."""
        if self.costs is None:
            return None
        return (metrics["system_risk"] + self.costs.c_esc * metrics["escalation_rate"]
                + self.costs.c_round * metrics["avg_rounds"])


def stored_fit_costs(store: Store, run_id: str) -> dict[tuple[str, int], FitCosts]:
    """``{(scenario, seed): FitCosts}`` from each stored cell's fit report (``info_json``'s
    ``threshold_fit``); a cell whose report does not name c_esc gets the defaults."""
    out: dict[tuple[str, int], FitCosts] = {}
    for scenario, seed, _, info_json in cell_confusions(store, run_id):
        try:
            report = json.loads(info_json).get("threshold_fit") or {}
        except (TypeError, ValueError, AttributeError):
            report = {}
        costs = FitCosts()
        if isinstance(report, dict) and _number(report.get("c_esc")) and _number(report.get("c_round")):
            rule = report.get("delta_rule") if report.get("delta_rule") in DELTA_RULES else "fitted"
            costs = FitCosts(float(report["c_esc"]), float(report["c_round"]), str(rule), True)
        out[(str(scenario), int(seed))] = costs
    return out


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and bool(np.isfinite(value)) and value >= 0


def _subset(cell: ReplayCell, rows: np.ndarray) -> ReplayCell:
    probs = None if cell.probabilities is None else cell.probabilities[rows]
    return dataclasses.replace(cell, truth=cell.truth[rows], case_ids=tuple(cell.case_ids[i] for i in rows),
                               reports=cell.reports[rows], probabilities=probs)


def _halves(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    order = rng.permutation(n)
    return np.sort(order[: n // 2]), np.sort(order[n // 2:])


def refit_thresholds(replay: RunReplay, loss: object, changes: Mapping[str, Any] | None = None, *,
                     costs: Mapping[tuple[str, int], FitCosts] | None = None, seed: int = 0) -> Refit:
    """Each cell's thresholds fitted by eq. (1) under ``loss`` on half its stored cases
    (see the module docstring); ``changes`` are the page's settings applied in every cell
    (a threshold among them still overrides the refitted one when the result is re-scored).
    Raises :class:`InputError` for a bad loss or a cell with fewer than :data:`MIN_CASES`."""
    loss_arr = check_loss(replay, loss)
    if loss_arr is None:
        raise InputError("loss", "give the loss matrix to refit the thresholds for")
    small = [f"{c.scenario}/seed {c.seed}" for c in replay.cells if c.n_cases < MIN_CASES]
    if small:
        raise InputError("cases", f"{small[0]} has fewer than {MIN_CASES} cases to split into a fitting half "
                         "and a held-out half")
    settings = dict(changes or {})
    others = {k: v for k, v in settings.items() if k not in THRESHOLD_FIELDS}
    bases = changed_configs(replay, others)
    fitted, refits, fit_parts, held_parts = [], [], [], []
    for i, (cell, base) in enumerate(zip(replay.cells, bases)):
        fit_rows, held_rows = _halves(cell.n_cases, np.random.default_rng([seed, i]))
        cost = (costs or {}).get((cell.scenario, cell.seed), FitCosts())
        part = _subset(cell, fit_rows)
        fit = fit_thresholds(part.panel.with_loss(loss_arr), part.reports, part.truth, base, c_esc=cost.c_esc,
                             c_round=cost.c_round, grid=ThresholdGrid(delta_rule=cost.delta_rule),
                             probabilities=part.probabilities)
        new = {name: float(getattr(fit.config, name)) for name in THRESHOLD_FIELDS}
        config = cell.config.with_changes(**new)
        fitted.append(dataclasses.replace(cell, config=config))
        refits.append(CellRefit(cell.scenario, cell.seed, len(fit_rows), len(held_rows),
                                {name: float(getattr(cell.config, name)) for name in THRESHOLD_FIELDS}, new))
        held_parts.append(_subset(cell, held_rows))
        fit_parts.append(_subset(fitted[-1], held_rows))
    own = own_replay(replay)
    out = RunReplay(replay.run_id, replay.method, tuple(fitted), calibration=replay.calibration, base=own)
    held_own = RunReplay(replay.run_id, replay.method, tuple(held_parts))
    held_new = RunReplay(replay.run_id, replay.method, tuple(fit_parts))
    metrics_own = rescore(held_own, loss=loss_arr, changes=settings).metrics
    metrics_new = rescore(held_new, loss=loss_arr, changes=settings).metrics
    used = {(costs or {}).get((c.scenario, c.seed), FitCosts()) for c in replay.cells}
    return Refit(out, tuple(refits), {k: metrics_own[k] for k in HELD_METRICS},
                 {k: metrics_new[k] for k in HELD_METRICS}, held_own.n_cases, used.pop() if len(used) == 1 else None)
