"""Validation of probability-vector reports (agents that report a distribution over labels).

An agent that reports a probability vector ``p`` (length K) instead of one label is
scored with the soft posterior of :func:`dcem.core.posterior.soft_report_posteriors`; its
reported label is ``argmax p`` (ties to the lowest index).  The same checks as
:func:`dcem.core.state.assess_probabilities` apply everywhere such reports enter the library
(baselines, threshold fitting, stored-run replay).
"""
from __future__ import annotations

import numpy as np

from common.errors import InputError

__all__ = ["check_probabilities", "normalised", "argmax_labels"]


def check_probabilities(probs: object, n_agents: int, n_labels: int, *, ndim: int | None = None,
                        field: str = "probabilities") -> np.ndarray:
    """``probs`` as a float64 array of shape (..., A, K), unchanged in value.

    Raises :class:`InputError` naming ``field`` unless the trailing axes are
    (n_agents, n_labels) (and the array has ``ndim`` axes when given), every entry is
    finite and >= 0 and every vector has positive total mass.
    """
    arr = np.asarray(probs, dtype=float)
    if arr.ndim < 2 or arr.shape[-2:] != (n_agents, n_labels) or (ndim is not None and arr.ndim != ndim):
        want = ("..., " if ndim is None else "N, " * (ndim - 2)) + f"{n_agents}, {n_labels}"
        raise InputError(field, f"expected shape ({want}), got {arr.shape}")
    if arr.size and (not np.all(np.isfinite(arr)) or np.any(arr < 0)):
        raise InputError(field, "entries must be finite and >= 0")
    if arr.size and np.any(arr.sum(axis=-1) <= 0):
        raise InputError(field, "each vector needs positive total mass")
    return arr


def normalised(probs: np.ndarray) -> np.ndarray:
    """Each vector divided by its sum (as :func:`dcem.core.state.assess_probabilities` does)."""
    return probs / probs.sum(axis=-1, keepdims=True)


def argmax_labels(probs: np.ndarray) -> np.ndarray:
    """The reported label of each vector: the int64 argmax of the normalised vector (ties
    to the lowest index), exactly the label :func:`dcem.core.state.assess_probabilities` uses."""
    return np.argmax(normalised(np.asarray(probs, dtype=float)), axis=-1).astype(np.int64)
