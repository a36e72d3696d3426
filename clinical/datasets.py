"""The two clinical datasets behind one small interface (Appendix D.2, H.1).

``load_dataset("ddxplus8")`` or ``load_dataset("medqa-tri")`` gives the label set, the
high-risk classes, the loss (Appendix E, l_high = 5) and every case as (id, label, text);
:meth:`ClinicalDataset.split` draws the class-stratified CAL/TEST split of a seed
(80/160 on DDXPlus, 70/140 on MedQA-Tri unless asked otherwise).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from clinical import ddxplus, medqa_tri
from clinical.splits import stratified_split
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

    @property
    def default_sizes(self) -> tuple[int, int]:
        """(n_cal, n_test) of the paper's protocol."""
        return _SIZES[self.name]

    def split(self, seed: int, n_cal: int | None = None, n_test: int | None = None
              ) -> tuple[list[ClinicalCase], list[ClinicalCase], list[str]]:
        """Class-stratified disjoint CAL/TEST of ``seed`` and notes on short classes."""
        cal_default, test_default = self.default_sizes
        return stratified_split(self.cases, lambda c: c.label, self.labels,
                                cal_default if n_cal is None else n_cal,
                                test_default if n_test is None else n_test,
                                np.random.default_rng(seed))


def load_dataset(name: str) -> ClinicalDataset:
    """The shipped dataset ``name`` (one of :data:`DATASETS`)."""
    if name == "ddxplus8":
        cases = tuple(ClinicalCase(c.case_id, c.label, c.text) for c in ddxplus.load_ddxplus8())
        return ClinicalDataset(name, ddxplus.LABELS, ddxplus.HIGH_RISK_INDICES, ddxplus.ddxplus_loss(), cases)
    if name == "medqa-tri":
        items = tuple(ClinicalCase(i.item_id, i.label_index, i.text) for i in medqa_tri.load_medqa_tri())
        return ClinicalDataset(name, medqa_tri.LABELS, medqa_tri.HIGH_RISK_INDICES, medqa_tri.medqa_tri_loss(),
                               items)
    raise InputError("dataset", f"unknown dataset {name!r} (known: {', '.join(DATASETS)})")
