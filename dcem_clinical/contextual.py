"""Contextual calibration of scored answers (Zhao et al. 2021, "Calibrate before use").

A small model's letter scores carry a bias of the prompt itself (a favourite letter, the
last category, the label of the last example).  Contextual calibration measures that bias
once per model and prompt setup: the agent's scored distribution over the letters for
content-free cases (:data:`CONTENT_FREE_INPUTS`: "N/A", "[MASK]" and an empty case, each
with the agent's own system prompt, categories and, with few-shot on, the examples
retrieved for that text -- none of these texts shares a word with a case, so those are the
first k CAL cases of the seed), averaged and renormalised (:func:`content_free_distribution`).
It uses no case of the data set, so nothing of TEST goes into it.

Every scored answer is then divided elementwise by that distribution and renormalised
(:func:`calibrate`; the W = diag(p_cf)^-1, b = 0 correction of the paper).  The divisor is
floored at :data:`FLOOR` so a letter the model almost never writes cannot blow up, and
the result stays finite with positive total mass.  The same distribution serves every
round (the mediator notes of round 2 on are not part of it).
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from common.errors import InputError

__all__ = ["CONTENT_FREE_INPUTS", "FLOOR", "calibrate", "content_free_distribution"]

CONTENT_FREE_INPUTS = ("N/A", "[MASK]", "")
FLOOR = 1e-3


def _vector(values: Sequence[float] | np.ndarray, field: str) -> np.ndarray:
    v = np.asarray(values, dtype=float)
    if v.ndim != 1 or v.size < 2 or not np.all(np.isfinite(v)) or np.any(v < 0) or v.sum() <= 0:
        raise InputError(field, "must be a finite, non-negative vector of at least two entries with positive mass")
    return v


def content_free_distribution(vectors: Sequence[Sequence[float]] | np.ndarray) -> np.ndarray:
    """Mean of the content-free probability vectors, renormalised to sum 1."""
    rows = [_vector(v, "content_free") for v in vectors]
    if not rows or len({r.size for r in rows}) != 1:
        raise InputError("content_free", "needs at least one vector, all of the same length")
    mean = np.mean([r / r.sum() for r in rows], axis=0)
    return mean / mean.sum()


def calibrate(probabilities: Sequence[float] | np.ndarray, content_free: Sequence[float] | np.ndarray,
              floor: float = FLOOR) -> np.ndarray:
    """``probabilities / max(content_free, floor)``, renormalised to sum 1."""
    p, cf = _vector(probabilities, "probabilities"), _vector(content_free, "content_free")
    if p.shape != cf.shape:
        raise InputError("content_free", f"has {cf.size} entries for {p.size} categories")
    if not 0.0 < floor <= 1.0:
        raise InputError("floor", f"must lie in (0, 1], got {floor}")
    q = (p / p.sum()) / np.maximum(cf / cf.sum(), floor)
    return q / q.sum()
