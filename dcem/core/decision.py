"""Bayes decision, runner-up and risk margin under the pooled belief (eq. 8-9)."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from dcem.core.posterior import expected_risk

__all__ = ["Decision", "bayes_decision"]


class Decision(NamedTuple):
    """Result of :func:`bayes_decision`; every field has the batch shape ``...``.

    risks has shape (..., K).
    """

    best: np.ndarray
    runner_up: np.ndarray
    margin: np.ndarray
    risks: np.ndarray


def bayes_decision(loss: np.ndarray, pooled: np.ndarray) -> Decision:
    """Lowest-risk decision d1, the next one d2 and the margin R(d2) - R(d1).

    Decisions are ordered by (risk, label index), so ties go to the lowest index: the
    first ``argmin`` is d1 and, with d1 masked out, the next ``argmin`` is d2.
    """
    risks = expected_risk(loss, pooled)
    best = np.argmin(risks, axis=-1)
    masked = risks.copy()
    np.put_along_axis(masked, best[..., None], np.inf, axis=-1)
    runner = np.argmin(masked, axis=-1)
    r1 = np.take_along_axis(risks, best[..., None], axis=-1)[..., 0]
    r2 = np.take_along_axis(risks, runner[..., None], axis=-1)[..., 0]
    return Decision(best, runner, r2 - r1, risks)
