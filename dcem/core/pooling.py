"""Reliabilities, clipped pooling weights and the log pool (eq. 5-7, Assumption B.4).

Shapes: posteriors ``P`` of shape (..., A, K); reports of shape (..., A).
"""
from __future__ import annotations

import numpy as np

__all__ = ["reliability", "pool_weights", "log_pool", "LOG_FLOOR"]

# Posteriors are strictly positive under Assumption B.2; this floor only protects the
# logarithm against underflow for extreme but valid inputs (a posterior that underflows
# to exactly 0).  The symmetric KL of the energy floors its logarithms the same way.
LOG_FLOOR = 1e-300
_EPS = LOG_FLOOR


def reliability(posteriors: np.ndarray, reports: np.ndarray) -> np.ndarray:
    """``rho_a = P_a(ŷ_a)``: posterior mass on the agent's own report (eq. 5)."""
    idx = np.expand_dims(np.asarray(reports, dtype=np.intp), -1)
    return np.take_along_axis(posteriors, idx, axis=-1)[..., 0]


def pool_weights(rho: np.ndarray, *, lambda_pool: float, rho_min: float,
                 omega_min: float) -> np.ndarray:
    """Pooling weights ``omega_a ∝ max(rho_a, rho_min) ** lambda_pool`` (eq. 5-6).

    When ``omega_min > 0`` each weight is clipped to ``[omega_min, 1 - omega_min]`` and
    the weights are renormalised to sum to 1 (Assumption B.4).  Shape (..., A).
    """
    rho_bar = np.maximum(rho, rho_min)
    raw = rho_bar ** lambda_pool
    total = raw.sum(axis=-1, keepdims=True)
    if not np.all(total > 0):  # every power underflowed (large lambda_pool): in log space
        logs = np.log(rho_bar)
        shifted = np.exp((logs - logs.max(axis=-1, keepdims=True)) * lambda_pool)
        raw = np.where(total > 0, raw, shifted)
        total = raw.sum(axis=-1, keepdims=True)
    omega = raw / total
    if omega_min > 0:
        omega = np.clip(omega, omega_min, 1.0 - omega_min)
        omega = omega / omega.sum(axis=-1, keepdims=True)
    return omega


def log_pool(posteriors: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Weighted geometric pool ``Q ∝ prod_a P_a ** omega_a`` (eq. 6-7).

    Computed in log space with a max shift, because a product of small probabilities
    raised to fractional powers underflows quickly.  Returns shape (..., K).
    """
    logs = np.log(np.maximum(posteriors, _EPS))
    pooled = np.einsum("...a,...ak->...k", weights, logs)
    pooled -= pooled.max(axis=-1, keepdims=True)
    q = np.exp(pooled)
    return q / q.sum(axis=-1, keepdims=True)
