"""The DDXPlus-8 folds a view group is trained, fitted and measured on."""
from __future__ import annotations

from collections import Counter

import numpy as np

from clinical.group_folds import MEMBERS_SHARE, RECORDED_FOLD_HASH, group_folds
from clinical.questions import load_benchmark
from clinical.training_split import training_split


def test_folds_cut_train_and_heldout_without_overlap() -> None:
    folds, split = group_folds(), training_split("ddxplus8")
    assert set(folds.members) | set(folds.debate) == set(split.train_ids)
    assert set(folds.cal) | set(folds.test) == set(split.heldout_ids)
    parts = [set(folds.ids(f)) for f in ("members", "debate", "cal", "test")]
    assert sum(len(p) for p in parts) == len(set().union(*parts)) == 825
    assert (len(folds.cal), len(folds.test)) == (130, 200)


def test_members_fold_takes_its_share_of_every_class() -> None:
    folds = group_folds()
    letter = {it.item_id: it.answer for it in load_benchmark("ddxplus8")}
    members, train = Counter(letter[i] for i in folds.members), Counter(
        letter[i] for i in training_split("ddxplus8").train_ids)
    for label, n in train.items():
        assert members[label] == int(np.floor(MEMBERS_SHARE * n + 0.5)), label


def test_test_fold_is_what_sag_run_draws_and_the_hash_is_recorded() -> None:
    from sag.group.config import preset
    from sag.runs.run import SagRunSpec, load_items

    evaluation, _ = SagRunSpec("ddxplus8", preset("single"), 200, 0).split(load_items("ddxplus8"))
    assert tuple(it.item_id for it in evaluation) == group_folds().test
    assert group_folds().fold_hash == RECORDED_FOLD_HASH
