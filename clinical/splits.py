"""Class-stratified, disjoint CAL/TEST splits (Appendix H.1: 80/160 on DDXPlus, 70/140 on MedQA-Tri).

Allocation, for ``K`` classes with ``a_k`` available items each:

1. The total ``n = n_cal + n_test`` (or everything, if fewer items exist) is shared
   out as equally as the data allow (water-filling): every class gets the same count
   unless it runs out, and the shortfall goes to classes that still have items.
   Leftover units that cannot be shared equally go to classes in label order.
2. Inside each class the CAL count is its proportional share ``t_k * n_cal / n``,
   rounded by largest remainder (ties in label order) so CAL has exactly
   ``round(total * n_cal / n)`` items; the rest of the class goes to TEST.
3. Which items of a class are chosen, and the order of the returned lists, come from
   the ``numpy.random.Generator`` passed in - the same seed gives the same split.

Whenever a class cannot reach its equal share, or the pool is smaller than requested,
a plain-English note says so; the notes are meant to be shown to users.
"""
from __future__ import annotations

from typing import Callable, Sequence, TypeVar

import numpy as np

from common.errors import InputError
from common.fields import Instance, Whole, check

__all__ = ["stratified_split", "equal_allocation", "apportion"]

T = TypeVar("T")


def equal_allocation(n: int, available: Sequence[int]) -> list[int]:
    """Share ``n`` units over classes as equally as possible, capped by ``available``."""
    alloc = [0] * len(available)
    left = min(n, sum(available))
    while left > 0:
        open_ = [k for k, a in enumerate(available) if alloc[k] < a]
        share = left // len(open_)
        if share == 0:
            for k in open_[:left]:
                alloc[k] += 1
            break
        for k in open_:
            add = min(share, available[k] - alloc[k])
            alloc[k] += add
            left -= add
    return alloc


def apportion(n: int, weights: Sequence[int]) -> list[int]:
    """Largest-remainder split of ``n`` proportional to ``weights`` (ties in index order)."""
    total = sum(weights)
    if total == 0:
        return [0] * len(weights)
    quotas = [n * w / total for w in weights]
    base = [int(np.floor(q)) for q in quotas]
    order = sorted(range(len(weights)), key=lambda k: (-(quotas[k] - base[k]), k))
    for k in order[: n - sum(base)]:
        base[k] += 1
    return base


def stratified_split(items: Sequence[T], label_of: Callable[[T], int], label_names: Sequence[str],
                     n_cal: int, n_test: int,
                     rng: np.random.Generator) -> tuple[list[T], list[T], list[str]]:
    """Return ``(cal, test, notes)``: disjoint, class-stratified samples of ``items``.

    ``label_of(item)`` must return an index into ``label_names``.  See the module
    docstring for the allocation rule.
    """
    check("rng", rng, Instance(np.random.Generator, msg="pass a numpy.random.Generator, e.g. "
                                                       "numpy.random.default_rng(seed)"), error=InputError)
    for field, value in (("n_cal", n_cal), ("n_test", n_test)):
        check(field, value, Whole(0, numpy=True), error=InputError)
    k_count = len(label_names)
    by_class: list[list[int]] = [[] for _ in range(k_count)]
    for i, item in enumerate(items):
        label = int(label_of(item))
        if not 0 <= label < k_count:
            raise InputError("label", f"item {i} has label {label} outside 0..{k_count - 1}")
        by_class[label].append(i)
    available = [len(idx) for idx in by_class]
    n_want = int(n_cal) + int(n_test)
    totals = equal_allocation(n_want, available)
    n_have = sum(totals)
    cal_n = int(n_cal) if n_have == n_want else int(round(n_have * n_cal / n_want)) if n_want else 0
    cal_counts = apportion(cal_n, totals)

    notes: list[str] = []
    if n_have < n_want:
        notes.append(f"Only {n_have} cases are available, fewer than the {n_want} requested "
                     f"({n_cal} CAL + {n_test} TEST); using CAL {cal_n} and TEST {n_have - cal_n}.")
    equal_share = n_want // k_count if k_count else 0
    for k, name in enumerate(label_names):
        if available[k] < equal_share:
            notes.append(f"{name}: only {available[k]} cases available, fewer than the "
                         f"{equal_share} per class an equal split needs; using all of them "
                         f"(CAL {cal_counts[k]}, TEST {totals[k] - cal_counts[k]}), other classes "
                         "are topped up.")

    cal_idx: list[int] = []
    test_idx: list[int] = []
    for k, idx in enumerate(by_class):
        chosen = [idx[j] for j in rng.permutation(len(idx))[: totals[k]]]
        cal_idx.extend(chosen[: cal_counts[k]])
        test_idx.extend(chosen[cal_counts[k]:])
    cal = [items[cal_idx[j]] for j in rng.permutation(len(cal_idx))]
    test = [items[test_idx[j]] for j in rng.permutation(len(test_idx))]
    return cal, test, notes
