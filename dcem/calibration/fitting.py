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
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dcem.core.config import MediatorConfig
from dcem.errors import InputError
from dcem.core.panel import Panel
from dcem.core.policy import Action
from dcem.core.replay import Scored, score_reports, score_states
from dcem.core.soft import check_probabilities
from dcem.core.state import RoundState, assess_probabilities

__all__ = [
    "ALPHA", "C_ESC", "C_ROUND", "estimate_confusion", "estimate_prior", "costed_objective",
    "ThresholdGrid", "ThresholdFit", "fit_thresholds", "soft_states",
]

log = logging.getLogger(__name__)

ALPHA = 0.5
C_ESC = 0.5
C_ROUND = 0.01


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


def costed_objective(scored: Scored, truth: np.ndarray, loss: np.ndarray, *,
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
    """

    max_levels: int = 6
    max_margins: int = 4
    deltas: tuple[float, ...] = (0.0, 0.05, 0.2)
    sweeps: int = 1


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
    states: RoundState | None = None
    if probabilities is not None:
        states = soft_states(panel, probabilities, base)
        shape = np.shape(probabilities)[:3]
        if reports is not None and np.shape(reports) != shape:
            raise InputError("reports", f"shape {np.shape(reports)} does not match probabilities {shape}")
        n_traj = shape[0]
    elif reports is None:
        raise InputError("reports", "reports (or probabilities) are required")
    else:
        n_traj = reports.shape[0]
    if n_traj != y.shape[0]:
        raise InputError("truth", f"{y.shape[0]} labels for {n_traj} trajectories")

    def run(cfg: MediatorConfig) -> Scored:
        # thresholds are policy-only fields: the soft states are reused for every candidate
        return score_reports(panel, reports, cfg) if states is None else score_states(states, cfg)

    if states is None:
        detail = score_reports(panel, reports, base, detail=True)
        assert detail.state is not None
        energies, margins = detail.energy.ravel(), detail.margin.ravel()
    else:
        energies, margins = states.energy.ravel(), states.margin.ravel()
    e_cuts = _cuts(energies, grid.max_levels)
    lo, hi = float(energies.min()), float(energies.max())
    eps_cands = np.unique(np.concatenate([[max(lo / 2.0, 0.0)] if lo > 0 else [0.0], e_cuts, [hi + 1.0]]))
    m_cands = np.unique(np.concatenate([[0.0], _cuts(margins, grid.max_margins)]))
    evals = 0
    cache: dict[tuple[float, float, float, float], float] = {}

    def score(cfg: MediatorConfig) -> float:
        nonlocal evals
        key = (cfg.eps_safe, cfg.eps_low, cfg.m_safe, cfg.delta)
        if key not in cache:
            evals += 1
            cache[key] = costed_objective(run(cfg), y, panel.loss, c_esc=c_esc, c_round=c_round)
        return cache[key]

    best = base
    best_j = start_j = score(base)
    for _ in range(grid.sweeps):
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
        for el in eps_cands:
            for d in grid.deltas:
                if el <= best.eps_safe:
                    continue
                cand = best.with_changes(eps_low=float(el), delta=float(d))
                j = score(cand)
                if j < best_j:
                    best, best_j = cand, j
    log.debug("threshold fit: J %.4f -> %.4f in %d evaluations", start_j, best_j, evals)
    report = {
        "objective_base": start_j, "objective": best_j, "evaluations": evals,
        "c_esc": c_esc, "c_round": c_round, "n_cases": int(y.shape[0]),
        "reports": "labels" if states is None else "probabilities",
        "eps_candidates": [float(v) for v in eps_cands],
        "m_candidates": [float(v) for v in m_cands], "delta_candidates": list(grid.deltas),
        "fitted": {k: getattr(best, k) for k in ("eps_safe", "eps_low", "m_safe", "delta")},
    }
    return ThresholdFit(best, report)
