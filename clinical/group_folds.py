"""The DDXPlus-8 parts a view group is trained, fitted and measured on.

A group whose members read different views of a case is trained in stages
(``docs/group_views.md``): each member first learns its own view, then the members learn
to use one another's messages and the judge learns to weigh them.  A later stage must see
the members answer cases they were not trained on, or it learns to trust answers that are
better than they will be on new cases.  So the TRAIN part of DDXPlus-8
(:mod:`clinical.training_split`, 495 cases) is cut once more, class by class:

- ``members``: 60 % of each class's TRAIN cases (297), the only cases a member learns its
  view on;
- ``debate``: the other 198 TRAIN cases, the only cases the debate stage and the judge
  learn on.

HELD-OUT (330 cases) is cut for the measurement:

- ``test``: the 200 cases ``python -m sag run --benchmark ddxplus8 --items 200 --seed 0``
  draws (every ``sag run`` on DDXPlus-8 leaves TRAIN out), only ever measured;
- ``cal``: the other 130, for everything fitted (D-CEM's confusion matrices, pool weights).

The TRAIN cut uses ``numpy.random.default_rng([20261201, 99, 0])``; :data:`RECORDED_FOLD_HASH`
holds the hash of the four id lists, and a test fails if a draw changes.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np

from clinical.training_split import SEED, training_split

if TYPE_CHECKING:
    from clinical.questions import QuestionItem

__all__ = ["GroupFolds", "group_folds", "fold_items", "RECORDED_FOLD_HASH", "MEMBERS_SHARE", "N_CAL", "N_HELDOUT_TEST", "FOLD_NAMES"]

MEMBERS_SHARE = 0.6
N_HELDOUT_TEST = 200
N_CAL = 130
FOLD_NAMES = ("members", "debate", "cal", "test")
RECORDED_FOLD_HASH = "27af71f9cc572edd789e4bc0820fc9235eff92b4566d6a4dbd0c14b658fc573a"


@dataclass(frozen=True)
class GroupFolds:
    """The four id lists (each in a fixed random order) and their hash."""

    members: tuple[str, ...]
    debate: tuple[str, ...]
    cal: tuple[str, ...]
    test: tuple[str, ...]

    def ids(self, fold: str) -> tuple[str, ...]:
        if fold not in FOLD_NAMES:
            raise ValueError(f"unknown fold {fold!r}; folds: {', '.join(FOLD_NAMES)}")
        return getattr(self, fold)

    @property
    def fold_hash(self) -> str:
        blob = json.dumps({f: sorted(self.ids(f)) for f in FOLD_NAMES}, separators=(",", ":"))
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _cut(ids: tuple[str, ...], label_of: dict[str, int], share: float,
         rng: np.random.Generator) -> tuple[list[str], list[str]]:
    """(first, rest): ``share`` of each class's ids (rounded half up), each list shuffled."""
    classes = sorted({label_of[i] for i in ids})
    by_class = {c: [i for i in ids if label_of[i] == c] for c in classes}
    take = np.array([int(np.floor(share * len(by_class[c]) + 0.5)) for c in classes])
    first: list[str] = []
    for c, k in zip(classes, take):
        members = by_class[c]
        first += [members[j] for j in rng.permutation(len(members))[:k]]
    chosen = set(first)
    rest = [i for i in ids if i not in chosen]
    return [first[j] for j in rng.permutation(len(first))], [rest[j] for j in rng.permutation(len(rest))]


@lru_cache(maxsize=1)
def group_folds() -> GroupFolds:
    """The DDXPlus-8 folds (see the module docstring)."""
    from clinical.questions import load_benchmark

    split = training_split("ddxplus8")
    letters = {it.item_id: ord(it.answer) - ord("A") for it in load_benchmark("ddxplus8")}
    from clinical.questions import sample_items

    members, debate = _cut(split.train_ids, letters, MEMBERS_SHARE, np.random.default_rng([SEED, 99, 0]))
    heldout = set(split.heldout_ids)
    pool = [it for it in load_benchmark("ddxplus8") if it.item_id in heldout]  # what sag run draws from
    test = [it.item_id for it in sample_items(pool, N_HELDOUT_TEST, np.random.default_rng(0))]
    chosen = set(test)
    cal = [it.item_id for it in pool if it.item_id not in chosen]
    return GroupFolds(tuple(members), tuple(debate), tuple(cal), tuple(test))


def fold_items(fold: str) -> tuple["QuestionItem", ...]:
    """The DDXPlus-8 questions (benchmark ``ddxplus8``) of one fold, in the fold's order."""
    from clinical.questions import load_benchmark

    by_id = {it.item_id: it for it in load_benchmark("ddxplus8")}
    return tuple(by_id[i] for i in group_folds().ids(fold))
