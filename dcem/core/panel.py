"""The fixed inputs of a mediator: labels, per-agent confusion matrices, prior, loss.

``Panel`` bundles what the mediator holds constant during an episode (section 2.2):
the label set, each agent's confusion matrix ``C[a, i, j] = Pr(report j | truth i)``,
the prior over true labels and the loss ``L[d, y]``.  Construction validates every
array (Assumptions B.2-B.3) and raises :class:`InputError` naming the field.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from common.loss import three_level_loss
from common.errors import InputError
from common.fields import Seq, Text, check

__all__ = ["Panel", "validate_confusion", "validate_loss", "validate_prior", "three_level_loss", "MAX_LOSS"]

_ROW_TOL = 1e-6
MAX_LOSS = 1e12  # larger losses overflow the risks and the energy


def _as_float_array(value: object, field: str) -> np.ndarray:
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InputError(field, f"must be numeric ({exc})") from None
    return arr


def validate_confusion(confusion: object, n_labels: int) -> np.ndarray:
    """Return confusion matrices as a read-only array of shape (A, K, K).

    Rows are indexed by the true label and must be strictly positive and sum to 1.
    """
    arr = _as_float_array(confusion, "confusion")
    if arr.ndim == 2:
        arr = arr[None]
    if arr.ndim != 3 or arr.shape[1:] != (n_labels, n_labels):
        raise InputError(
            "confusion",
            f"expected one {n_labels}x{n_labels} matrix per agent, got shape {arr.shape}",
        )
    if arr.shape[0] < 1:
        raise InputError("confusion", "at least one agent is required")
    if not np.all(np.isfinite(arr)):
        raise InputError("confusion", "contains NaN or infinite entries")
    bad = np.argwhere(arr <= 0)
    if bad.size:
        a, i, j = bad[0]
        raise InputError(
            "confusion",
            f"agent {a} row {i} column {j} is {arr[a, i, j]:g}; entries must be strictly "
            "positive (smooth the counts)",
        )
    sums = arr.sum(axis=2)
    off = np.argwhere(np.abs(sums - 1.0) > _ROW_TOL)
    if off.size:
        a, i = off[0]
        raise InputError(
            "confusion", f"agent {a} row {i} sums to {sums[a, i]:.6g}, rows must sum to 1"
        )
    arr = arr / sums[..., None]
    arr.setflags(write=False)
    return arr


def validate_loss(loss: object, n_labels: int) -> np.ndarray:
    """Return the loss ``L[d, y]`` as a read-only (K, K) array: finite, >= 0 and at
    most ``MAX_LOSS``."""
    arr = _as_float_array(loss, "loss")
    if arr.shape != (n_labels, n_labels):
        raise InputError("loss", f"expected shape ({n_labels}, {n_labels}), got {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise InputError("loss", "contains NaN or infinite entries")
    if np.any(arr < 0):
        d, y = np.argwhere(arr < 0)[0]
        raise InputError("loss", f"entry [{d}][{y}] is {arr[d, y]:g}; losses must be >= 0")
    if np.any(arr > MAX_LOSS):
        d, y = np.argwhere(arr > MAX_LOSS)[0]
        raise InputError("loss", f"entry [{d}][{y}] is {float(arr[d, y])!r}; losses must be at most {MAX_LOSS:g}")
    arr = arr.copy()
    arr.setflags(write=False)
    return arr


def validate_prior(prior: object, n_labels: int) -> np.ndarray:
    """Return a strictly positive prior of shape (K,) that sums to 1."""
    arr = _as_float_array(prior, "prior")
    if arr.shape != (n_labels,):
        raise InputError("prior", f"expected {n_labels} entries, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0):
        raise InputError("prior", "entries must be finite and strictly positive")
    if abs(arr.sum() - 1.0) > _ROW_TOL:
        raise InputError("prior", f"must sum to 1, sums to {arr.sum():.6g}")
    arr = arr / arr.sum()
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True, eq=False)
class Panel:
    """Fixed mediator inputs for a panel of A agents over K labels.

    Attributes
    ----------
    labels : tuple of str, length K
    confusion : ndarray of shape (A, K, K)
        ``confusion[a, i, j] = Pr(agent a reports j | truth i)``.
    prior : ndarray of shape (K,)
    loss : ndarray of shape (K, K)
        ``loss[d, y]`` is the cost of deciding d when the truth is y.
    """

    labels: tuple[str, ...]
    confusion: np.ndarray
    prior: np.ndarray
    loss: np.ndarray

    def __post_init__(self) -> None:
        labels = tuple(self.labels)
        if len(labels) < 2:
            raise InputError("labels", "at least two labels are required")
        check("labels", labels, Seq(Text(nonempty=False, min_len=1)), msg="labels must be non-empty strings",
              error=InputError)
        if len(set(labels)) != len(labels):
            raise InputError("labels", "labels must be unique")
        k = len(labels)
        object.__setattr__(self, "labels", labels)
        object.__setattr__(self, "confusion", validate_confusion(self.confusion, k))
        object.__setattr__(self, "prior", validate_prior(self.prior, k))
        object.__setattr__(self, "loss", validate_loss(self.loss, k))

    @property
    def n_labels(self) -> int:
        return len(self.labels)

    @property
    def n_agents(self) -> int:
        return int(self.confusion.shape[0])

    def label_index(self, label: str) -> int:
        """Index of ``label``; raises :class:`InputError` for an unknown label."""
        try:
            return self.labels.index(label)
        except ValueError:
            raise InputError("reports", f"unknown label {label!r} (known: {list(self.labels)})") from None

    def with_loss(self, loss: object) -> "Panel":
        return Panel(self.labels, self.confusion, self.prior, loss)
