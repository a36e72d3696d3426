"""Diagnostic-risk energy (eq. 10, eq. 20 for N agents) and its windowed descent (eq. 11)."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from dcem.core.pooling import LOG_FLOOR

__all__ = ["EnergyTerms", "symmetric_kl_sum", "energy_terms", "windowed_descent"]


class EnergyTerms(NamedTuple):
    """Weighted energy contributions; they add up to ``total``.

    disagreement = alpha * sum_{a<b} D_sym(P_a, P_b); risk = beta * sum_a r_a;
    margin = gamma * exp(-Δ).
    """

    disagreement: np.ndarray
    risk: np.ndarray
    margin: np.ndarray
    total: np.ndarray


def symmetric_kl_sum(posteriors: np.ndarray) -> np.ndarray:
    """``sum_{a<b} KL(P_a||P_b) + KL(P_b||P_a)`` in nats; posteriors (..., A, K).

    Uses the identity ``D_sym(P, R) = sum_y (P(y) - R(y)) (log P(y) - log R(y))``, with
    the logarithms floored at ``LOG_FLOOR`` as in the log pool, so a posterior entry that
    underflowed to 0 gives a large but finite divergence (and none between equal rows).
    """
    logs = np.log(np.maximum(posteriors, LOG_FLOOR))
    n_agents = posteriors.shape[-2]
    total = np.zeros(posteriors.shape[:-2])
    for a in range(n_agents):
        for b in range(a + 1, n_agents):
            diff = posteriors[..., a, :] - posteriors[..., b, :]
            total = total + np.sum(diff * (logs[..., a, :] - logs[..., b, :]), axis=-1)
    return total


def energy_terms(posteriors: np.ndarray, agent_risks: np.ndarray, margin: np.ndarray, *,
                 alpha: float, beta: float, gamma: float) -> EnergyTerms:
    """Energy of eq. (10)/(20) with its three weighted terms.

    posteriors : (..., A, K); agent_risks : (..., A); margin : (...).
    """
    dis = alpha * symmetric_kl_sum(posteriors)
    risk = beta * agent_risks.sum(axis=-1)
    mar = gamma * np.exp(-margin)
    return EnergyTerms(dis, risk, mar, dis + risk + mar)


def windowed_descent(energy: np.ndarray, window: int) -> np.ndarray:
    """Windowed energy descent ``ĝ(t) = (ε(t-W) - ε(t)) / W`` along the last axis.

    Rounds are 1-based: position ``i`` of the last axis is round ``t = i + 1`` and the
    descent is defined only when ``t > W``; undefined entries are NaN.  This is the
    telescoped form of the window average in eq. (11).
    """
    energy = np.ascontiguousarray(energy, dtype=float)
    out = np.empty(energy.shape)
    if energy.shape[-1] > window:
        # Replay calls this on large (N, T) batches with small T: work on the flat
        # C-ordered buffer, where element i - W is round t - W of the same case whenever
        # t > W; the other positions are overwritten with NaN below.
        flat, res = energy.reshape(-1), out.reshape(-1)
        np.subtract(flat[:-window], flat[window:], out=res[window:])
        res[window:] /= window
    out[..., :window] = np.nan
    return out
