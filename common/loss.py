"""The coarse three-level loss matrix of D-CEM's Appendix E, shared by the mediator and
the clinical datasets (each dataset names its high-cost classes)."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from common.errors import InputError

__all__ = ["three_level_loss"]


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
