"""The coarse three-level loss matrix of D-CEM's Appendix E, shared by the mediator and
the clinical datasets (each dataset names its high-cost classes)."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from common.errors import InputError

__all__ = ["three_level_loss", "three_level_form"]


def three_level_loss(n_labels: int, high_risk: Sequence[int], l_high: float) -> np.ndarray:
    """The coarse loss of Appendix E: 0 on the diagonal, ``l_high`` for missing a
    high-cost truth, 1 otherwise.  Returns ``L`` of shape (K, K) indexed ``L[d, y]``."""
    if not np.isfinite(l_high) or l_high < 0:
        raise InputError("l_high", f"must be finite and >= 0, got {l_high}")
    loss = np.ones((n_labels, n_labels))
    for y in high_risk:
        if not 0 <= int(y) < n_labels:
            raise InputError("high_risk", f"label index {y} outside 0..{n_labels - 1}")
        loss[:, int(y)] = l_high
    np.fill_diagonal(loss, 0.0)
    return loss


def three_level_form(loss: np.ndarray) -> tuple[list[int], float | None] | None:
    """``(high_risk, l_high)`` when ``loss`` is ``three_level_loss(K, high_risk, l_high)``
    (``l_high`` None when no class is high-risk: every miss costs 1), else None (a matrix
    edited cell by cell)."""
    arr = np.asarray(loss, dtype=float)
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1] or np.any(np.diag(arr) != 0.0):
        return None
    k = arr.shape[0]
    high: list[int] = []
    l_high: float | None = None
    for y in range(k):
        column = np.delete(arr[:, y], y)
        if column.size == 0 or np.all(column == 1.0):
            continue
        if not np.all(column == column[0]) or (l_high is not None and column[0] != l_high):
            return None
        high.append(y)
        l_high = float(column[0])
    return high, l_high
