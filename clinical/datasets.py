"""The two clinical datasets behind one small interface (Appendix D.2, H.1).

``load_dataset("ddxplus8")`` or ``load_dataset("medqa-tri")`` gives the label set, the
high-risk classes, the loss (Appendix E, l_high = 5) and every case as (id, label, text);
:meth:`ClinicalDataset.split` draws the class-stratified CAL/TEST split of a seed
(80/160 on DDXPlus, 70/140 on MedQA-Tri unless asked otherwise).

CAL and TEST come from :attr:`ClinicalDataset.pool`, the cases outside the training split
(:mod:`clinical.training_split`): on DDXPlus-8 the 330 HELD-OUT cases (per class:
Anaphylaxis 36, Pulmonary_embolism 32, NSTEMI_STEMI 22, Myocarditis 15, URTI 80,
Viral_pharyngitis 74, GERD 37, Bronchitis 34), so the 80/160 split tops up the other
classes for NSTEMI_STEMI and Myocarditis (a note says so); on MedQA-Tri all 224 items,
which MedQA's training split leaves out.  Before the training split the pool was every
case, so a seed now draws other DDXPlus cases than it did then; runs stored before keep
the cases they drew.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from clinical import ddxplus, medqa_tri
from clinical.splits import stratified_split
from clinical.training_split import train_id_set
from common.errors import InputError

__all__ = ["ClinicalCase", "ClinicalDataset", "DATASETS", "load_dataset", "FILE_PREFIX", "file_dataset_name",
           "is_file_dataset", "use_dataset", "known_dataset"]

DATASETS = ("ddxplus8", "medqa-tri")
_SIZES = {"ddxplus8": (80, 160), "medqa-tri": (70, 140)}
FILE_PREFIX = "file:"
_FILE_SIZES = (80, 160)
"""CAL and TEST of a case file's drawn split, when its pool holds them (else a third and
the rest of the pool)."""
_IN_USE: dict[str, "ClinicalDataset"] = {}


def file_dataset_name(file_name: str) -> str:
    """The dataset name of a case file (``file:`` and the file's name, no folder)."""
    return FILE_PREFIX + file_name.replace("\\", "/").rsplit("/", 1)[-1]


def is_file_dataset(name: str) -> bool:
    return name.startswith(FILE_PREFIX)


@dataclass(frozen=True)
class ClinicalCase:
    """One case: the dataset's own id, the true label index and the text agents read."""

    source_id: str
    label: int
    text: str
    views: tuple[tuple[str, str], ...] = ()
    split: str = ""

    def view(self, name: str) -> str | None:
        """The text of the case's view ``name`` (a case file's ``views``), None without it."""
        return dict(self.views).get(name)


@dataclass(frozen=True, eq=False)
class ClinicalDataset:
    name: str
    labels: tuple[str, ...]
    high_risk: tuple[int, ...]
    loss: np.ndarray
    cases: tuple[ClinicalCase, ...]
    train_ids: frozenset[str] = frozenset()
    views: tuple[str, ...] = ()
    sha256: str = ""
    """A case file's views (beyond the whole case) and the sha256 of its bytes; empty for
    the shipped datasets."""

    @property
    def fixed_split(self) -> bool:
        """Whether the cases name their CAL and TEST (a case file's ``split``)."""
        return any(c.split for c in self.cases)

    @property
    def pool(self) -> tuple[ClinicalCase, ...]:
        """The cases CAL and TEST are drawn from: every case outside ``train_ids``."""
        return tuple(c for c in self.cases if c.source_id not in self.train_ids)

    @property
    def default_sizes(self) -> tuple[int, int]:
        """(n_cal, n_test) of the paper's protocol; a case file's own split, or 80/160 when
        its pool holds them (a third of the pool and the rest otherwise)."""
        if self.name in _SIZES:
            return _SIZES[self.name]
        if self.fixed_split:
            return sum(c.split == "cal" for c in self.cases), sum(c.split == "test" for c in self.cases)
        n = len(self.pool)
        if n >= sum(_FILE_SIZES):
            return _FILE_SIZES
        return n // 3, n - n // 3

    def split(self, seed: int, n_cal: int | None = None, n_test: int | None = None
              ) -> tuple[list[ClinicalCase], list[ClinicalCase], list[str]]:
        """Class-stratified disjoint CAL/TEST of ``seed`` drawn from :attr:`pool`, and notes
        on short classes and on the cases kept for training."""
        cal_default, test_default = self.default_sizes
        if self.fixed_split:
            return self._given_split(seed, n_cal, n_test)
        pool = self.pool
        cal, test, notes = stratified_split(pool, lambda c: c.label, self.labels,
                                            cal_default if n_cal is None else n_cal,
                                            test_default if n_test is None else n_test,
                                            np.random.default_rng(seed))
        kept = len(self.cases) - len(pool)
        if kept:
            notes.append(f"CAL and TEST are drawn from the {len(pool)} cases outside the training split; "
                         f"{kept} of the {len(self.cases)} cases are kept for training and never drawn.")
        return cal, test, notes


    def _given_split(self, seed: int, n_cal: int | None, n_test: int | None
                     ) -> tuple[list[ClinicalCase], list[ClinicalCase], list[str]]:
        """The case file's own CAL and TEST, in an order drawn from ``seed``."""
        rng = np.random.default_rng(seed)
        cal = [c for c in self.cases if c.split == "cal"]
        test = [c for c in self.cases if c.split == "test"]
        notes = [f"CAL and TEST are the file's own ({len(cal)} cal and {len(test)} test cases); every seed uses "
                 "them, in its own order."]
        for part, asked, have in (("CAL", n_cal, len(cal)), ("TEST", n_test, len(test))):
            if asked is not None and asked != have:
                notes.append(f"{asked} {part} cases were asked for; the file gives {have}, and they are used.")
        return [cal[i] for i in rng.permutation(len(cal))], [test[i] for i in rng.permutation(len(test))], notes


def use_dataset(dataset: ClinicalDataset) -> ClinicalDataset:
    """Make a case file's dataset known to :func:`load_dataset` in this process (by its
    name, replacing one of the same name) and return it."""
    if not is_file_dataset(dataset.name):
        raise InputError("dataset", f"{dataset.name} is a shipped dataset, not a case file")
    _IN_USE[dataset.name] = dataset
    return dataset


def known_dataset(name: str) -> ClinicalDataset | None:
    """A case file's dataset in use in this process, None otherwise."""
    return _IN_USE.get(name)


def load_dataset(name: str) -> ClinicalDataset:
    """The shipped dataset ``name`` (one of :data:`DATASETS`), or a case file's in use
    (:func:`use_dataset`)."""
    if is_file_dataset(name):
        found = _IN_USE.get(name)
        if found is None:
            raise InputError("dataset", f"the case file {name[len(FILE_PREFIX):]} is not loaded: give it again "
                                        "(--dataset PATH, or upload it on the Experiments page)")
        return found
    if name == "ddxplus8":
        cases = tuple(ClinicalCase(c.case_id, c.label, c.text) for c in ddxplus.load_ddxplus8())
        return ClinicalDataset(name, ddxplus.LABELS, ddxplus.HIGH_RISK_INDICES, ddxplus.ddxplus_loss(), cases,
                               train_id_set("ddxplus8"))
    if name == "medqa-tri":
        items = tuple(ClinicalCase(i.item_id, i.label_index, i.text) for i in medqa_tri.load_medqa_tri())
        return ClinicalDataset(name, medqa_tri.LABELS, medqa_tri.HIGH_RISK_INDICES, medqa_tri.medqa_tri_loss(),
                               items, train_id_set("medqa"))  # MedQA-Tri items are MedQA items
    raise InputError("dataset", f"unknown dataset {name!r} (known: {', '.join(DATASETS)})")
