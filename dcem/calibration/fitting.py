"""Offline calibration: confusion matrices, prior and mediator thresholds.

Everything here uses labelled calibration data only; nothing reads evaluation cases.

Confusion smoothing (diagonal-biased Laplace, alpha = 0.5 as in Appendix H.1).  With
``n_ij`` the number of calibration cases of truth i reported as j and ``n_i = sum_j n_ij``:

    C[i, j] = (n_ij + alpha * (1 + [i == j])) / (n_i + alpha * (K + 1))

Every row is strictly positive and sums to 1; a class never seen in calibration gets
the row ``(1 + [i == j]) / (K + 1)``, which leans toward a correct report.

Empirical prior: ``pi[k] = (n_k + alpha) / (N + alpha * K)`` (plain Laplace smoothing
of the base rates, positive for every class).

Thresholds: ``eps_safe``, ``eps_low``, ``m_safe`` and ``delta`` are chosen to minimise
the costed objective of eq. (1) on recorded calibration trajectories,

    J = mean_i [ 1{DEC} L(d_i, y_i) + 1{ESC} c_esc + c * tau_i ],

where the outcome (action, decision, round tau) of each trajectory is recomputed by
:func:`dcem.core.replay.score_reports` for every candidate (for probability-vector reports,
by the policy over the mediator states of :func:`dcem.core.state.assess_probabilities`,
computed once: the states do not depend on the thresholds).  Defaults: ``c = 0.01`` per
round and ``c_esc = 0.5``.  Why 0.5: an escalation can only beat a decision when its
cost is below the Bayes decision's expected loss, and under the synthetic loss
(K = 3, l_high = 3) that expected loss never exceeds 6/7 (reached at Q = (1/7, 3/7,
3/7)); ``c_esc >= 6/7`` would make escalation useless, ``c_esc = 0`` would make it
free.  0.5 (half an ordinary error) sits inside that range.  The search is coordinate-wise
over small data-driven grids (see :func:`fit_thresholds`).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from dcem.core.config import MediatorConfig
from dcem.core.panel import Panel
from dcem.core.policy import Action
from dcem.core.replay import Trajectory, score_reports, score_states
from dcem.core.soft import check_probabilities
from dcem.calibration.stopping_cost import eq14_delta
from dcem.core.state import RoundState, assess_probabilities
from common.errors import InputError

__all__ = [
    "ALPHA", "C_ESC", "C_ROUND", "DELTA_RULES", "estimate_confusion", "estimate_prior", "costed_objective",
    "ThresholdGrid", "ThresholdFit", "fit_thresholds", "soft_states",
]

log = logging.getLogger(__name__)

ALPHA = 0.5
C_ESC = 0.5
C_ROUND = 0.01
DELTA_RULES = ("fitted", "eq14")


def _labels(values: np.ndarray, n_labels: int, field_name: str) -> np.ndarray:
    arr = np.asarray(values)
    if arr.size and (not np.issubdtype(arr.dtype, np.integer) or arr.min() < 0 or arr.max() >= n_labels):
        raise InputError(field_name, f"must be integer label indices in 0..{n_labels - 1}")
    return arr.astype(np.intp, copy=False)


def estimate_confusion(truth: np.ndarray, reports: np.ndarray, n_labels: int, *,
                       alpha: float = ALPHA) -> np.ndarray:
    """Smoothed confusion matrices ``C[a, i, j] ≈ Pr(report j | truth i)``.

    truth : int (n,); reports : int (n, A) or (n,).  Returns (A, K, K) (A = 1 for 1-D
    reports), rows strictly positive and summing to 1 (formula in the module docstring).
    """
    if alpha <= 0:
        raise InputError("alpha", f"smoothing must be > 0, got {alpha}")
    y = _labels(truth, n_labels, "truth")
    r = _labels(reports, n_labels, "reports")
    if r.ndim == 1:
        r = r[:, None]
    if r.ndim != 2 or r.shape[0] != y.shape[0]:
        raise InputError("reports", f"expected shape ({y.shape[0]}, A), got {r.shape}")
    n_agents = r.shape[1]
    counts = np.zeros((n_agents, n_labels, n_labels))
    for a in range(n_agents):
        np.add.at(counts[a], (y, r[:, a]), 1.0)
    smooth = alpha * (1.0 + np.eye(n_labels))
    return (counts + smooth) / (counts.sum(axis=2, keepdims=True) + alpha * (n_labels + 1))


def estimate_prior(truth: np.ndarray, n_labels: int, mode: str = "uniform", *,
                   alpha: float = ALPHA) -> np.ndarray:
    """Prior of shape (K,): ``"uniform"`` or ``"empirical"`` smoothed base rates."""
    if mode == "uniform":
        return np.full(n_labels, 1.0 / n_labels)
    if mode != "empirical":
        raise InputError("prior", f"must be 'uniform' or 'empirical', got {mode!r}")
    y = _labels(truth, n_labels, "truth")
    counts = np.bincount(y, minlength=n_labels).astype(float)
    return (counts + alpha) / (counts.sum() + alpha * n_labels)


def costed_objective(scored: Trajectory, truth: np.ndarray, loss: np.ndarray, *,
                     c_esc: float = C_ESC, c_round: float = C_ROUND) -> float:
    """Empirical eq. (1): ``mean[1{DEC} L(d, y) + 1{ESC} c_esc + c * tau]``."""
    y = np.asarray(truth, dtype=np.intp)
    dec = scored.outcome_action == Action.STOP_AND_DECIDE
    esc = scored.outcome_action == Action.STOP_AND_ESCALATE
    cost = dec * loss[scored.outcome_decision, y] + esc * c_esc + c_round * scored.outcome_round
    return float(cost.mean())


@dataclass(frozen=True)
class ThresholdGrid:
    """Size of the search grid.

    max_levels : at most this many energy cut points (eps_safe / eps_low candidates)
    max_margins : at most this many margin cut points (m_safe candidates, plus 0)
    deltas : delta candidates
    sweeps : rounds of coordinate search (each: (eps_safe, m_safe) then (eps_low, delta))
    delta_rule : ``fitted`` (delta searched over ``deltas``) or ``eq14`` (delta fixed to
        c / kappa_1 of eq. 14, :mod:`dcem.calibration.stopping_cost`; the fitted search is
        kept, and the report says so, when kappa_1 is not positive on CAL)
    """

    max_levels: int = 6
    max_margins: int = 4
    deltas: tuple[float, ...] = (0.0, 0.05, 0.2)
    sweeps: int = 1
    delta_rule: str = "fitted"

    def __post_init__(self) -> None:
        if self.delta_rule not in DELTA_RULES:
            raise InputError("delta_rule", f"must be one of {', '.join(DELTA_RULES)}, got {self.delta_rule!r}")


@dataclass(frozen=True)
class ThresholdFit:
    """A fitted configuration and how it was found.

    config : the fitted MediatorConfig; report : JSON-ready details (objective before
    and after, candidates, number of evaluations).
    """

    config: MediatorConfig
    report: dict[str, Any] = field(default_factory=dict)


def _cuts(values: np.ndarray, limit: int) -> np.ndarray:
    """Midpoints between consecutive distinct values, thinned to ``limit`` by quantile.

    Any threshold between two consecutive observed values acts the same on the data,
    so midpoints are the only candidates worth trying.
    """
    u = np.unique(np.round(values[np.isfinite(values)], 9))
    if u.size < 2:
        return u.copy()
    mids = (u[:-1] + u[1:]) / 2.0
    if mids.size > limit:
        mids = np.unique(np.quantile(mids, np.linspace(0.0, 1.0, limit), method="nearest"))
    return mids


def soft_states(panel: Panel, probabilities: np.ndarray, cfg: MediatorConfig) -> RoundState:
    """Mediator states of probability reports (N, T, A, K), cut to ``min(T, cfg.t_max)``.

    They depend on the panel and the non-threshold fields of ``cfg`` only, so
    ``score_states(soft_states(panel, p, base), cand)`` equals
    ``score_probabilities(panel, p, cand)`` for every ``cand`` that differs from ``base``
    in eps_safe, eps_low, m_safe or delta alone.
    """
    probs = check_probabilities(probabilities, panel.n_agents, panel.n_labels, ndim=4)
    if probs.shape[1] < 1:
        raise InputError("probabilities", "at least one round of reports is required")
    return assess_probabilities(panel, probs[:, : min(probs.shape[1], cfg.t_max)], cfg)


def _trajectory_inputs(panel: Panel, reports: np.ndarray | None, probabilities: np.ndarray | None,
                       base: MediatorConfig) -> tuple[RoundState | None, int]:
    """Soft states (None for label reports) and the number of trajectories N_cal.

    reports : int (N_cal, T, A) or None; probabilities : (N_cal, T, A, K) or None.
    Raises :class:`InputError` when neither is given or their shapes disagree.
    """
    if probabilities is not None:
        states = soft_states(panel, probabilities, base)
        shape = np.shape(probabilities)[:3]
        if reports is not None and np.shape(reports) != shape:
            raise InputError("reports", f"shape {np.shape(reports)} does not match probabilities {shape}")
        return states, shape[0]
    if reports is None:
        raise InputError("reports", "reports (or probabilities) are required")
    return None, reports.shape[0]


def _observed_energy_margin(panel: Panel, reports: np.ndarray | None, states: RoundState | None,
                            base: MediatorConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every observed energy, margin and pooled decision, (N_cal, T) each.

    From the soft ``states`` when given, else from replaying ``reports`` under ``base``.
    """
    if states is None:
        detail = score_reports(panel, reports, base, detail=True)
        assert detail.state is not None
        return detail.energy, detail.margin, detail.decision
    return states.energy, states.margin, states.decision


def _threshold_candidates(energies: np.ndarray, margins: np.ndarray,
                          grid: ThresholdGrid) -> tuple[np.ndarray, np.ndarray]:
    """Sorted candidates: eps (E,) for eps_safe / eps_low and m (M,) for m_safe.

    eps: energy cut points plus one below all (never certify) and one above all
    (never escalate); m: margin cut points plus 0.
    """
    e_cuts = _cuts(energies, grid.max_levels)
    lo, hi = float(energies.min()), float(energies.max())
    eps_cands = np.unique(np.concatenate([[max(lo / 2.0, 0.0)] if lo > 0 else [0.0], e_cuts, [hi + 1.0]]))
    m_cands = np.unique(np.concatenate([[0.0], _cuts(margins, grid.max_margins)]))
    return eps_cands, m_cands


class _CachedObjective:
    """Costed objective J of a candidate config, memoised on its four thresholds.

    ``evaluations`` counts the distinct candidates actually scored.
    """

    def __init__(self, panel: Panel, reports: np.ndarray | None, states: RoundState | None,
                 truth: np.ndarray, c_esc: float, c_round: float) -> None:
        self.panel, self.reports, self.states, self.truth = panel, reports, states, truth
        self.c_esc, self.c_round = c_esc, c_round
        self.evaluations = 0
        self._cache: dict[tuple[float, float, float, float], float] = {}

    def _run(self, cfg: MediatorConfig) -> Trajectory:
        # thresholds are policy-only fields: the soft states are reused for every candidate
        if self.states is None:
            return score_reports(self.panel, self.reports, cfg)
        return score_states(self.states, cfg)

    def __call__(self, cfg: MediatorConfig) -> float:
        key = (cfg.eps_safe, cfg.eps_low, cfg.m_safe, cfg.delta)
        if key not in self._cache:
            self.evaluations += 1
            self._cache[key] = costed_objective(self._run(cfg), self.truth, self.panel.loss,
                                                c_esc=self.c_esc, c_round=self.c_round)
        return self._cache[key]


def _search_safe(best: MediatorConfig, best_j: float, eps_cands: np.ndarray, m_cands: np.ndarray,
                 score: _CachedObjective) -> tuple[MediatorConfig, float]:
    """One pass over (eps_safe, m_safe) in E x M, eps_low lifted above eps_safe when needed."""
    for es in eps_cands:
        above = eps_cands[eps_cands > es]
        if above.size == 0:
            continue
        # keep eps_safe < eps_low: lift eps_low to the next candidate when needed
        el = best.eps_low if best.eps_low > es else float(above[0])
        for ms in m_cands:
            cand = best.with_changes(eps_safe=float(es), eps_low=el, m_safe=float(ms))
            j = score(cand)
            if j < best_j:
                best, best_j = cand, j
    return best, best_j


def _search_low(best: MediatorConfig, best_j: float, eps_cands: np.ndarray,
                deltas: tuple[float, ...], score: _CachedObjective) -> tuple[MediatorConfig, float]:
    """One pass over (eps_low, delta) in E x D, skipping eps_low <= eps_safe."""
    for el in eps_cands:
        for d in deltas:
            if el <= best.eps_safe:
                continue
            cand = best.with_changes(eps_low=float(el), delta=float(d))
            j = score(cand)
            if j < best_j:
                best, best_j = cand, j
    return best, best_j


def _coordinate_search(base: MediatorConfig, eps_cands: np.ndarray, m_cands: np.ndarray,
                       grid: ThresholdGrid, score: _CachedObjective) -> tuple[MediatorConfig, float, float]:
    """``grid.sweeps`` sweeps of coordinate search from ``base``: (best, J(best), J(base))."""
    best = base
    best_j = start_j = score(base)
    for _ in range(grid.sweeps):
        best, best_j = _search_safe(best, best_j, eps_cands, m_cands, score)
        best, best_j = _search_low(best, best_j, eps_cands, grid.deltas, score)
    return best, best_j, start_j


def fit_thresholds(panel: Panel, reports: np.ndarray | None, truth: np.ndarray,
                   base: MediatorConfig, *, c_esc: float = C_ESC, c_round: float = C_ROUND,
                   grid: ThresholdGrid | None = None,
                   probabilities: np.ndarray | None = None) -> ThresholdFit:
    """Fit eps_safe, eps_low, m_safe and delta on calibration trajectories.

    Parameters
    ----------
    panel : Panel estimated on calibration data
    reports : int (N_cal, T, A), recorded reports of calibration cases; with
        ``probabilities`` they are only checked against its shape (may be None)
    truth : int (N_cal,)
    base : starting configuration; every other field is kept
    probabilities : optional (N_cal, T, A, K) probability-vector reports; when given,
        candidates (and the energy and margin cut points) come from the soft path
        (:func:`soft_states` once, then :func:`dcem.core.replay.score_states` per candidate,
        identical to :func:`dcem.core.replay.score_probabilities`)

    Candidates: energy cut points between the distinct energies observed in
    ``reports`` (plus one below all, "never certify", and one above all, "never
    escalate"), margin cut points plus 0, and ``grid.deltas``.  One sweep searches
    (eps_safe, m_safe) jointly with eps_low fixed (lifted to the next candidate when
    it would not exceed eps_safe), then (eps_low, delta) jointly with the others fixed,
    keeping ``eps_safe < eps_low``.  Ties keep the earlier candidate
    (the base values are tried first).  Returns a :class:`ThresholdFit`.
    """
    grid = grid or ThresholdGrid()
    y = np.asarray(truth, dtype=np.intp)
    states, n_traj = _trajectory_inputs(panel, reports, probabilities, base)
    if n_traj != y.shape[0]:
        raise InputError("truth", f"{y.shape[0]} labels for {n_traj} trajectories")
    energies, margins, decisions = _observed_energy_margin(panel, reports, states, base)
    eq14 = eq14_delta(energies, decisions, y, panel.loss, c_round)
    if grid.delta_rule == "eq14" and eq14.delta is not None:
        base, grid = base.with_changes(delta=eq14.delta), replace(grid, deltas=(eq14.delta,))
    eps_cands, m_cands = _threshold_candidates(energies.ravel(), margins.ravel(), grid)
    score = _CachedObjective(panel, reports, states, y, c_esc, c_round)
    best, best_j, start_j = _coordinate_search(base, eps_cands, m_cands, grid, score)
    evals = score.evaluations
    log.debug("threshold fit: J %.4f -> %.4f in %d evaluations", start_j, best_j, evals)
    report = {
        "objective_base": start_j, "objective": best_j, "evaluations": evals,
        "c_esc": c_esc, "c_round": c_round, "n_cases": int(y.shape[0]),
        "reports": "labels" if states is None else "probabilities",
        "eps_candidates": [float(v) for v in eps_cands],
        "m_candidates": [float(v) for v in m_cands], "delta_candidates": list(grid.deltas),
        "fitted": {k: getattr(best, k) for k in ("eps_safe", "eps_low", "m_safe", "delta")},
        "delta_rule": grid.delta_rule if grid.delta_rule == "fitted" or eq14.delta is not None else "fitted",
        "eq14": eq14.to_dict(),
    }
    return ThresholdFit(best, report)
