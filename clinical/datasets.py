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

from dataclasses import dataclass

import numpy as np

from clinical import ddxplus, medqa_tri
from clinical.splits import stratified_split
from clinical.training_split import train_id_set
from common.errors import InputError

__all__ = ["ClinicalCase", "ClinicalDataset", "DATASETS", "load_dataset"]

DATASETS = ("ddxplus8", "medqa-tri")
_SIZES = {"ddxplus8": (80, 160), "medqa-tri": (70, 140)}


@dataclass(frozen=True)
class ClinicalCase:
    """One case: the dataset's own id, the true label index and the text agents read."""

    source_id: str
    label: int
    text: str


@dataclass(frozen=True, eq=False)
class ClinicalDataset:
    name: str
    labels: tuple[str, ...]
    high_risk: tuple[int, ...]
    loss: np.ndarray
    cases: tuple[ClinicalCase, ...]
    train_ids: frozenset[str] = frozenset()

    @property
    def pool(self) -> tuple[ClinicalCase, ...]:
        """The cases CAL and TEST are drawn from: every case outside ``train_ids``."""
        return tuple(c for c in self.cases if c.source_id not in self.train_ids)

    @property
    def default_sizes(self) -> tuple[int, int]:
        """(n_cal, n_test) of the paper's protocol."""
        return _SIZES[self.name]

    def split(self, seed: int, n_cal: int | None = None, n_test: int | None = None
              ) -> tuple[list[ClinicalCase], list[ClinicalCase], list[str]]:
        """Class-stratified disjoint CAL/TEST of ``seed`` drawn from :attr:`pool`, and notes
        on short classes and on the cases kept for training."""
        cal_default, test_default = self.default_sizes
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


def load_dataset(name: str) -> ClinicalDataset:
    """The shipped dataset ``name`` (one of :data:`DATASETS`)."""
    if name == "ddxplus8":
        cases = tuple(ClinicalCase(c.case_id, c.label, c.text) for c in ddxplus.load_ddxplus8())
        return ClinicalDataset(name, ddxplus.LABELS, ddxplus.HIGH_RISK_INDICES, ddxplus.ddxplus_loss(), cases,
                               train_id_set("ddxplus8"))
    if name == "medqa-tri":
        items = tuple(ClinicalCase(i.item_id, i.label_index, i.text) for i in medqa_tri.load_medqa_tri())
        return ClinicalDataset(name, medqa_tri.LABELS, medqa_tri.HIGH_RISK_INDICES, medqa_tri.medqa_tri_loss(),
                               items, train_id_set("medqa"))  # MedQA-Tri items are MedQA items
    raise InputError("dataset", f"unknown dataset {name!r} (known: {', '.join(DATASETS)})")
