"""Intervals for accuracies: Wilson's score interval of one proportion and a paired
bootstrap interval of the difference of two accuracies on the same items."""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

__all__ = ["Z95", "wilson_interval", "paired_bootstrap"]

Z95 = 1.959963984540054


def wilson_interval(successes: int, n: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a proportion; (0, 1) when n = 0."""
    if n <= 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def paired_bootstrap(right_a: Sequence[bool], right_b: Sequence[bool], rng: np.random.Generator, *,
                     resamples: int = 10_000, level: float = 0.95) -> tuple[float, float, float]:
    """(accuracy of B - accuracy of A, low, high): the difference on the same items and its
    percentile bootstrap interval, items resampled with replacement as pairs."""
    a, b = np.asarray(right_a, dtype=float), np.asarray(right_b, dtype=float)
    if a.shape != b.shape or a.ndim != 1 or a.size == 0:
        raise ValueError("two equally long, non-empty lists of right/wrong per item are needed")
    if resamples < 1 or not 0.0 < level < 1.0:
        raise ValueError("resamples must be >= 1 and level between 0 and 1")
    diff = b - a
    draws = rng.integers(0, diff.size, size=(resamples, diff.size))
    means = diff[draws].mean(axis=1)
    tail = (1.0 - level) / 2.0
    return float(diff.mean()), float(np.quantile(means, tail)), float(np.quantile(means, 1.0 - tail))
