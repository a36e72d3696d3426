"""TRAIN, HELD-OUT and reserved: a fixed partition of every benchmark the project trains on.

``training_split(benchmark)`` gives the three disjoint id sets of one of :data:`BENCHMARKS`:

* **TRAIN**: the only items a trained model may see.
* **HELD-OUT**: :data:`N_HELDOUT` items (DDXPlus-8: every case outside TRAIN) for comparing
  trained and untrained models.  No other evaluation of the project reads them, except
  that D-CEM's clinical CAL/TEST splits on DDXPlus-8 draw from them.
* **reserved**: what the existing evaluations read (:mod:`clinical.training_reserved`).

How each is chosen (``rng = numpy.random.default_rng([SEED, index in BENCHMARKS])``):

``medqa``, ``medmcqa``, ``medsafetybench``
    reserved = the evaluations' ids; HELD-OUT = :data:`N_HELDOUT` of the other items drawn
    class-stratified; TRAIN = everything else.  Classes: the answer letter (MedQA,
    MedMCQA), the generator and category (MedSafetyBench, ``gpt4-c3``).  MedMCQA counts
    only its 2,736 text-only questions (:func:`~clinical.questions.load_benchmark`).
``pubmedqa``
    TRAIN = the 500 PQA-L questions outside the official test split
    (:func:`~clinical.questions.load_pubmedqa_train`; nothing in the project evaluates on
    them); HELD-OUT = :data:`N_HELDOUT` test questions outside the SAG suite, stratified by
    yes/no/maybe; reserved = the other 300 test questions.
``ddxplus8``
    TRAIN = ``round(0.6 * n)`` cases of each diagnosis (:data:`DDXPLUS_TRAIN_SHARE`);
    HELD-OUT = the other 330; nothing reserved: D-CEM's clinical splits draw their CAL and
    TEST from HELD-OUT (:meth:`clinical.datasets.ClinicalDataset.split`).  The items are
    the eight-option questions of benchmark ``ddxplus8`` (:mod:`clinical.ddxplus_questions`),
    whose ids are the case ids; their classes are the diagnoses' label names.

Stratified draws share ``n`` over the classes in proportion to their sizes (largest
remainder, ties in the order of the sorted class names) and pick inside each class with ``rng``.  ``train_ids``
and ``reserved_ids`` keep the benchmark's order; ``heldout_ids`` is in a random order, so
its first ``n`` are a random sample.  ``split_hash`` is the SHA-256 of
``{"heldout": [...], "reserved": [...], "train": [...]}`` (each list sorted, JSON without
spaces); :data:`RECORDED_HASHES` holds the values of the partition as shipped, and a test
fails when a rebuild differs.
"""
from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Literal, Sequence, TypeVar

import numpy as np

from clinical.ddxplus_questions import diagnosis_of_letter
from clinical.questions import QuestionItem, load_benchmark, load_pubmedqa_train
from clinical.safety_requests import harmful_requests
from clinical.splits import apportion
from clinical.training_reserved import reserved_sources
from common.errors import InputError

__all__ = ["BENCHMARKS", "SEED", "N_HELDOUT", "DDXPLUS_TRAIN_SHARE", "RECORDED_HASHES", "PARTS", "TrainingSplit",
           "partition_hash", "build_training_split", "training_split", "train_id_set", "drop_train",
           "split_items", "train_items", "heldout_items"]

log = logging.getLogger(__name__)

BENCHMARKS: tuple[str, ...] = ("medqa", "medmcqa", "pubmedqa", "medsafetybench", "ddxplus8")
SEED = 20261201
N_HELDOUT = 200
DDXPLUS_TRAIN_SHARE = 0.6
RECORDED_HASHES: dict[str, str] = {
    "medqa": "f296ff96073b570aca4179ecaf432e3fbf48ee3411a51866e1f5c159ea07f7c5",
    "medmcqa": "44d74ab034cc0f7138aed3df8474251eee74c4f6f849901e2e88cb30bb4086c3",
    "pubmedqa": "1fccb3002f89edb1404f47944405e2dd42bad07046fc34b75fb1d01ceb9e6ee1",
    "medsafetybench": "df9a217527975018903c0a6081e7eadc45ebb8c7117c4cb0fa45f2c11197b3be",
    "ddxplus8": "11ab63ed3ed256d00ae0fd6b6f7aa9c0db4faa4cc4ed989c955c88fc7d604ea2",
}

Part = Literal["train", "heldout", "reserved"]
PARTS: tuple[Part, ...] = ("train", "heldout", "reserved")
T = TypeVar("T")


def partition_hash(train: Sequence[str], heldout: Sequence[str], reserved: Sequence[str]) -> str:
    """SHA-256 (hex) of the three id lists, each sorted (see the module docstring)."""
    blob = json.dumps({"heldout": sorted(heldout), "reserved": sorted(reserved), "train": sorted(train)},
                      separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class TrainingSplit:
    """The partition of one benchmark; the three id tuples are disjoint."""

    benchmark: str
    train_ids: tuple[str, ...]
    heldout_ids: tuple[str, ...]
    reserved_ids: tuple[str, ...]
    split_hash: str

    def __post_init__(self) -> None:
        if self.benchmark not in BENCHMARKS:
            raise InputError("benchmark", f"no training split for {self.benchmark!r} (have {', '.join(BENCHMARKS)})")
        every = self.train_ids + self.heldout_ids + self.reserved_ids
        if len(set(every)) != len(every):
            raise InputError("split", f"{self.benchmark}: an id is listed twice or in two parts")
        if self.split_hash != partition_hash(self.train_ids, self.heldout_ids, self.reserved_ids):
            raise InputError("split_hash", f"{self.benchmark}: does not match the ids")

    @property
    def matches_record(self) -> bool:
        """Whether this is the partition :data:`RECORDED_HASHES` names."""
        return self.split_hash == RECORDED_HASHES[self.benchmark]

    def ids(self, part: Part) -> tuple[str, ...]:
        """The ids of ``part`` (one of :data:`PARTS`)."""
        if part not in PARTS:
            raise InputError("part", f"must be one of {', '.join(PARTS)}, got {part!r}")
        return {"train": self.train_ids, "heldout": self.heldout_ids, "reserved": self.reserved_ids}[part]

    def counts(self) -> dict[str, int]:
        return {part: len(self.ids(part)) for part in PARTS}


def _class_of(item: QuestionItem) -> str:
    if item.benchmark == "ddxplus8":
        return diagnosis_of_letter(item.answer)
    if item.benchmark == "safety":
        return f"{item.meta_value('generator')}-c{item.meta_value('category')}"
    return item.answer


@lru_cache(maxsize=None)
def _items(benchmark: str) -> dict[str, QuestionItem]:
    """Every item of the benchmark's partition, by id, in the benchmark's order."""
    if benchmark == "medsafetybench":
        items: Sequence[QuestionItem] = harmful_requests()
    elif benchmark == "pubmedqa":
        items = load_benchmark("pubmedqa") + load_pubmedqa_train()
    elif benchmark in ("medqa", "medmcqa", "ddxplus8"):
        items = load_benchmark(benchmark)
    else:
        raise InputError("benchmark", f"no training split for {benchmark!r} (have {', '.join(BENCHMARKS)})")
    return {it.item_id: it for it in items}


def _stratified(ids: Sequence[str], class_of: Callable[[str], str], n: int, rng: np.random.Generator) -> list[str]:
    """``n`` of ``ids`` shared over their classes in proportion to size, in a random order."""
    if n > len(ids):
        raise InputError("n_heldout", f"need {n} items outside the reserved ones, have {len(ids)}")
    by_class: dict[str, list[str]] = {}
    for i in ids:
        by_class.setdefault(class_of(i), []).append(i)
    names = sorted(by_class)
    chosen: list[str] = []
    for name, k in zip(names, apportion(n, [len(by_class[c]) for c in names])):
        members = by_class[name]
        chosen += [members[j] for j in rng.permutation(len(members))[:k]]
    return [chosen[j] for j in rng.permutation(len(chosen))]


def build_training_split(benchmark: str) -> TrainingSplit:
    """Draw the partition of ``benchmark`` from the shipped data (see the module docstring)."""
    items = _items(benchmark)
    rng = np.random.default_rng([SEED, BENCHMARKS.index(benchmark)])
    order = list(items)

    def cls(i: str) -> str:
        return _class_of(items[i])

    if benchmark == "ddxplus8":
        train_set: set[str] = set()
        for name in sorted({cls(i) for i in order}):
            members = [i for i in order if cls(i) == name]
            k = int(np.floor(DDXPLUS_TRAIN_SHARE * len(members) + 0.5))
            train_set.update(members[j] for j in rng.permutation(len(members))[:k])
        rest = [i for i in order if i not in train_set]
        heldout = [rest[j] for j in rng.permutation(len(rest))]
        return _split(benchmark, [i for i in order if i in train_set], heldout, [])
    reserved = set().union(*reserved_sources(benchmark).values()) & set(order)
    fixed_train = {it.item_id for it in load_pubmedqa_train()} if benchmark == "pubmedqa" else set()
    candidates = [i for i in order if i not in reserved and i not in fixed_train]
    heldout = _stratified(candidates, cls, N_HELDOUT, rng)
    taken = set(heldout)
    if benchmark == "pubmedqa":
        train = [i for i in order if i in fixed_train]
        return _split(benchmark, train, heldout, [i for i in order if i not in fixed_train and i not in taken])
    return _split(benchmark, [i for i in candidates if i not in taken], heldout, [i for i in order if i in reserved])


def _split(benchmark: str, train: list[str], heldout: list[str], reserved: list[str]) -> TrainingSplit:
    return TrainingSplit(benchmark, tuple(train), tuple(heldout), tuple(reserved),
                         partition_hash(train, heldout, reserved))


@lru_cache(maxsize=None)
def training_split(benchmark: str) -> TrainingSplit:
    """The partition of ``benchmark`` (one of :data:`BENCHMARKS`); a warning is logged when
    it differs from the recorded one."""
    if benchmark not in BENCHMARKS:
        raise InputError("benchmark", f"no training split for {benchmark!r} (have {', '.join(BENCHMARKS)})")
    split = build_training_split(benchmark)
    if not split.matches_record:
        log.warning("the %s training split %s differs from the recorded %s", benchmark, split.split_hash[:12],
                    RECORDED_HASHES[benchmark][:12])
    return split


@lru_cache(maxsize=None)
def train_id_set(benchmark: str) -> frozenset[str]:
    """The TRAIN ids of ``benchmark``; empty for a benchmark nothing is trained on."""
    return frozenset(training_split(benchmark).train_ids) if benchmark in BENCHMARKS else frozenset()


def drop_train(benchmark: str, items: Sequence[T], id_of: Callable[[T], str]) -> tuple[T, ...]:
    """``items`` without the TRAIN ids of ``benchmark``, order kept (all of them when
    nothing is trained on ``benchmark``)."""
    train = train_id_set(benchmark)
    return tuple(it for it in items if id_of(it) not in train)


def split_items(benchmark: str, part: Part) -> tuple[QuestionItem, ...]:
    """The items of one part, in the order of :meth:`TrainingSplit.ids`, as questions
    (:class:`~clinical.questions.QuestionItem`; MedSafetyBench as the evaluation's
    two-option requests, DDXPlus-8 as the eight-option questions of benchmark ``ddxplus8``)."""
    items = _items(benchmark)
    return tuple(items[i] for i in training_split(benchmark).ids(part))


def train_items(benchmark: str) -> tuple[QuestionItem, ...]:
    return split_items(benchmark, "train")


def heldout_items(benchmark: str) -> tuple[QuestionItem, ...]:
    return split_items(benchmark, "heldout")
