"""delta from eq. (14): the per-round cost of deliberation on the energy's scale.

Theorem 4.4 bounds the expected loss of the pooled decision by an affine function of the
energy, ``E[L(d1, y) | F_t] <= kappa_0 + kappa_1 * eps_diag`` (eq. 13), and eq. (14)
turns a per-round cost ``c`` into the escalation gate's threshold ``delta = c / kappa_1``.
The seed gives no estimator of kappa_1.  Here it is the slope of the least-squares line
of the realised loss ``L(d1^(t), y)`` on the energy ``eps_diag^(t)`` over every (case,
round) of the calibration trajectories: the mean loss the energy predicts, which is what
the bound's slope scales.  A slope that is not positive (energy that does not track the
loss on CAL) leaves delta undefined, and :func:`eq14_delta` says so instead of returning
a number.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from common.errors import InputError

__all__ = ["Eq14", "eq14_delta"]


@dataclass(frozen=True)
class Eq14:
    """delta = c / kappa_1 (None when kappa_1 is not positive), the fitted line and its data size."""

    delta: float | None
    kappa_0: float
    kappa_1: float
    c_round: float
    n_points: int
    note: str = ""

    def to_dict(self) -> dict[str, object]:
        return {"delta": self.delta, "kappa_0": self.kappa_0, "kappa_1": self.kappa_1, "c_round": self.c_round,
                "n_points": self.n_points, "note": self.note}


def eq14_delta(energy: np.ndarray, decision: np.ndarray, truth: np.ndarray, loss: np.ndarray,
               c_round: float) -> Eq14:
    """eq. (14)'s delta from calibration trajectories.

    energy, decision : (N, T) per case and round; truth : (N,); loss : (K, K) with
    ``loss[decision, truth]``; c_round : the per-round cost c.
    """
    e = np.asarray(energy, dtype=float)
    d = np.asarray(decision, dtype=np.intp)
    y = np.asarray(truth, dtype=np.intp)
    if e.shape != d.shape or e.ndim != 2 or e.shape[0] != y.shape[0]:
        raise InputError("energy", f"energy {e.shape}, decision {d.shape} and truth {y.shape} do not match")
    if not np.isfinite(c_round) or c_round <= 0:
        raise InputError("c_round", f"must be a positive number, got {c_round}")
    lost = np.asarray(loss, dtype=float)[d, y[:, None]]
    x, v = e.ravel(), lost.ravel()
    keep = np.isfinite(x) & np.isfinite(v)
    x, v = x[keep], v[keep]
    if x.size < 2 or np.ptp(x) == 0:
        return Eq14(None, float(v.mean()) if v.size else 0.0, 0.0, c_round, int(x.size),
                    "the energy does not vary on CAL, so its slope is undefined")
    slope, intercept = np.polyfit(x, v, 1)
    if slope <= 0:
        return Eq14(None, float(intercept), float(slope), c_round, int(x.size),
                    "the loss does not rise with the energy on CAL (slope <= 0), so c / kappa_1 is undefined")
    return Eq14(float(c_round / slope), float(intercept), float(slope), c_round, int(x.size))
