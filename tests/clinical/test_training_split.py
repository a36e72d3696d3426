"""The TRAIN / HELD-OUT / reserved partition: recorded hashes, sizes, strata, items."""
from __future__ import annotations

import dataclasses
from collections import Counter

import pytest

from clinical import medqa_tri
from clinical.ddxplus import load_ddxplus8
from clinical.questions import QuestionItem, load_benchmark, load_pubmedqa_train
from clinical.safety_requests import harmful_requests
from clinical.training_reserved import reserved_sources
from clinical.training_split import (BENCHMARKS, DDXPLUS_TRAIN_SHARE, N_HELDOUT, PARTS, RECORDED_HASHES,
                                     TrainingSplit, build_training_split, drop_train, heldout_items,
                                     partition_hash, split_items, train_id_set, train_items, training_split)
from common.errors import InputError


def _all_ids(benchmark: str) -> list[str]:
    if benchmark == "ddxplus8":
        return [c.case_id for c in load_ddxplus8()]
    if benchmark == "medsafetybench":
        return [it.item_id for it in harmful_requests()]
    if benchmark == "pubmedqa":
        return [it.item_id for it in load_benchmark("pubmedqa") + load_pubmedqa_train()]
    return [it.item_id for it in load_benchmark(benchmark)]


@pytest.mark.parametrize("benchmark", BENCHMARKS)
def test_a_rebuild_is_the_recorded_partition(benchmark: str) -> None:
    split = build_training_split(benchmark)
    assert split.split_hash == partition_hash(split.train_ids, split.heldout_ids, split.reserved_ids)
    assert split.split_hash == RECORDED_HASHES[benchmark], "the partition changed; trained models no longer match it"
    assert training_split(benchmark).matches_record
    assert build_training_split(benchmark) == split  # deterministic, order included


@pytest.mark.parametrize("benchmark", BENCHMARKS)
def test_the_parts_cover_every_item_once(benchmark: str) -> None:
    split = training_split(benchmark)
    every = split.train_ids + split.heldout_ids + split.reserved_ids
    assert len(every) == len(set(every))
    assert sorted(every) == sorted(_all_ids(benchmark))
    assert len(split.heldout_ids) >= N_HELDOUT


@pytest.mark.parametrize("benchmark", ["medqa", "medmcqa", "pubmedqa", "medsafetybench"])
def test_reserved_ids_stay_out_of_train_and_heldout(benchmark: str) -> None:
    split = training_split(benchmark)
    listed = set().union(*reserved_sources(benchmark).values()) & set(_all_ids(benchmark))
    assert listed and listed <= set(split.reserved_ids)
    assert len(split.heldout_ids) == N_HELDOUT


def test_medqa_tri_and_pubmedqa_test_questions_are_never_train() -> None:
    medqa = training_split("medqa")
    tri = {it.item_id for it in medqa_tri.load_medqa_tri()}
    assert tri <= set(medqa.reserved_ids) and not tri & set(medqa.train_ids)
    pubmed = training_split("pubmedqa")
    assert set(pubmed.train_ids) == {it.item_id for it in load_pubmedqa_train()}
    assert not set(pubmed.train_ids) & {it.item_id for it in load_benchmark("pubmedqa")}


def test_ddxplus_train_is_sixty_percent_of_every_class_and_heldout_the_rest() -> None:
    split = training_split("ddxplus8")
    label = {c.case_id: c.label_name for c in load_ddxplus8()}
    total, train = Counter(label.values()), Counter(label[i] for i in split.train_ids)
    for name, n in total.items():
        assert abs(train[name] - DDXPLUS_TRAIN_SHARE * n) <= 0.5, name
    assert split.reserved_ids == () and len(split.heldout_ids) == len(label) - len(split.train_ids)


@pytest.mark.parametrize("benchmark", ["medqa", "medmcqa", "pubmedqa", "medsafetybench"])
def test_heldout_is_stratified_like_the_items_it_was_drawn_from(benchmark: str) -> None:
    split = training_split(benchmark)
    by_id = {it.item_id: it for it in split_items(benchmark, "heldout") + split_items(benchmark, "train")}

    def cls(i: str) -> str:
        it = by_id[i]
        assert isinstance(it, QuestionItem)
        return f"{it.meta_value('generator')}{it.meta_value('category')}" if benchmark == "medsafetybench" \
            else it.answer

    drawn_from = [i for i in split.heldout_ids] + ([] if benchmark == "pubmedqa" else list(split.train_ids))
    if benchmark == "pubmedqa":  # drawn from the test questions outside the SAG suite
        suite = reserved_sources("pubmedqa")["sag-suite"]
        drawn_from += [i for i in split.reserved_ids if i not in suite]
        by_id.update({it.item_id: it for it in split_items(benchmark, "reserved")})
    pool, held = Counter(cls(i) for i in drawn_from), Counter(cls(i) for i in split.heldout_ids)
    for name, n in pool.items():
        assert abs(held[name] - N_HELDOUT * n / len(drawn_from)) < 1, name


@pytest.mark.parametrize("benchmark", BENCHMARKS)
def test_items_follow_the_ids(benchmark: str) -> None:
    split = training_split(benchmark)
    for part in PARTS:
        items = split_items(benchmark, part)
        assert tuple(it.item_id for it in items) == split.ids(part)
    assert len(train_items(benchmark)) == len(split.train_ids) and len(heldout_items(benchmark)) == len(split.heldout_ids)
    assert all(isinstance(it, QuestionItem) for it in train_items(benchmark) + heldout_items(benchmark))


def test_medsafetybench_items_are_the_evaluations_requests() -> None:
    requests = {it.item_id: it for it in harmful_requests()}
    for item in train_items("medsafetybench"):
        assert item == requests[item.item_id] and item.answer == "B"


def test_drop_train_keeps_order_and_leaves_other_benchmarks_alone() -> None:
    items = load_benchmark("medqa")
    kept = drop_train("medqa", items, lambda it: it.item_id)
    assert [it.item_id for it in kept] == [it.item_id for it in items if it.item_id not in train_id_set("medqa")]
    assert len(kept) == len(items) - len(training_split("medqa").train_ids)
    other = load_benchmark("mmlu-pro-biology")
    assert drop_train("mmlu-pro-biology", other, lambda it: it.item_id) == other
    assert train_id_set("mmlu-pro-biology") == frozenset()


def test_bad_requests_and_tampered_splits_are_refused() -> None:
    with pytest.raises(InputError, match="no training split for 'gpqa'"):
        training_split("gpqa")
    split = training_split("ddxplus8")
    with pytest.raises(InputError, match="part"):
        split.ids("test")  # type: ignore[arg-type]
    moved = split.heldout_ids[:1]
    with pytest.raises(InputError, match="split_hash"):
        dataclasses.replace(split, train_ids=split.train_ids + moved, heldout_ids=split.heldout_ids[1:])
    with pytest.raises(InputError, match="listed twice"):
        TrainingSplit("ddxplus8", split.train_ids + moved, split.heldout_ids, (), split.split_hash)
