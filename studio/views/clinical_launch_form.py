"""The Experiments page's clinical launch, read strictly: the dataset (a shipped one or an
uploaded case file), the panel's members, scenarios, seeds, CAL/TEST sizes and round budget.

:func:`read_case_upload` reads an uploaded case file with the checks of
:mod:`clinical.case_file` (the same messages as ``python -m dcem_clinical run --dataset``)
and makes it the dataset in use; :func:`read_clinical_form` turns the typed fields into a
:class:`~dcem_clinical.spec.ClinicalSpec` or the message of each field that is refused.
Nothing here stores anything: a launch starts only from a form without errors.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from clinical.case_file import CaseFileOptions, parse_case_file
from clinical.datasets import DATASETS, ClinicalDataset, load_dataset, use_dataset
from common.errors import ProjectError
from dcem.analysis.form_input import IntField, parse_int_field
from dcem.core.config import MediatorConfig
from dcem_clinical.spec import MAX_AGENTS, ClinicalSpec

__all__ = ["OWN_FILE", "DATASET_CHOICES", "CaseUpload", "read_case_upload", "ClinicalForm", "read_clinical_form",
           "SEEDS_RANGE", "T_MAX_RANGE", "SIZE_RANGE"]

OWN_FILE = "own"
DATASET_CHOICES = {"ddxplus8": "DDXPlus-8", "medqa-tri": "MedQA-Tri", OWN_FILE: "Use my case file"}
SEEDS_RANGE = (1, 20)
T_MAX_RANGE = (1, 12)
SIZE_RANGE = (1, 20_000)


@dataclass(frozen=True)
class CaseUpload:
    """An uploaded case file as read: the dataset (in use from now on) or why it was refused."""

    dataset: ClinicalDataset | None = None
    error: str | None = None

    def summary(self) -> str:
        """One line: cases, classes with their counts, views, split, loss."""
        ds = self.dataset
        if ds is None:
            return self.error or "No case file yet."
        counts = ", ".join(f"{label} {sum(c.label == k for c in ds.cases)}" for k, label in enumerate(ds.labels))
        views = f"; views: {', '.join(ds.views)}" if ds.views else "; no views"
        split = "the file's own CAL/TEST split" if ds.fixed_split else "a class-stratified CAL/TEST split per seed"
        high = ", ".join(ds.labels[i] for i in ds.high_risk) or "none"
        return (f"{len(ds.cases)} cases in {len(ds.labels)} classes ({counts}){views}; {split}; high-risk: {high}; "
                f"sha256 {ds.sha256[:12]}")


def read_case_upload(data: bytes | None, name: str | None, *, labels: str = "", high_risk: Sequence[str] = (),
                     l_high: float = 5.0) -> CaseUpload:
    """Read an uploaded file (its bytes and name) with the label order typed as ``A, B``
    (empty: sorted), the high-risk classes and l_high; a refused file gives its message."""
    if not data or not name:
        return CaseUpload(error="Upload a .jsonl or .csv case file (id, text, label; optional views and split).")
    order = tuple(x.strip() for x in labels.split(",")) if labels.strip() else None
    try:
        options = CaseFileOptions(labels=order, high_risk=tuple(high_risk), l_high=float(l_high))
        return CaseUpload(use_dataset(parse_case_file(data, name, options)))
    except ProjectError as exc:
        return CaseUpload(error=str(exc))


@dataclass(frozen=True)
class ClinicalForm:
    """The clinical launch fields as read: the spec, or the message of each refused field."""

    spec: ClinicalSpec | None
    errors: tuple[str, ...] = ()
    fields: dict[str, IntField] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.spec is not None and not self.errors


def _int(text: object, name: str, bounds: tuple[int, int], optional: bool = False) -> IntField:
    if optional and not str(text or "").strip():
        return IntField(name, None, None)
    return parse_int_field(text, field=name, low=bounds[0], high=bounds[1])


def read_clinical_form(dataset: str, members: str, scenarios: Sequence[str], seeds: object, cal: object = "",
                       test: object = "", t_max: object = "6") -> ClinicalForm:
    """The spec the fields describe: ``dataset`` a shipped name or a case file's in use,
    ``members`` as ``A, B[, C ...]`` (model keys, ``stat`` members, ``@VIEW``), ``cal`` and
    ``test`` empty for the dataset's own sizes."""
    parsed = {"Seeds": _int(seeds, "Seeds", SEEDS_RANGE), "CAL cases": _int(cal, "CAL cases", SIZE_RANGE, True),
              "TEST cases": _int(test, "TEST cases", SIZE_RANGE, True),
              "Round budget T": _int(t_max, "Round budget T", T_MAX_RANGE)}
    errors = [f.error for f in parsed.values() if f.error]
    agents = tuple(a.strip() for a in members.split(",") if a.strip())
    if not 2 <= len(agents) <= MAX_AGENTS:
        errors.append(f"Members: give 2 to {MAX_AGENTS} members separated by commas, got {len(agents)}.")
    if not scenarios:
        errors.append("Scenarios: choose at least one scenario.")
    if dataset not in DATASETS:
        try:
            load_dataset(dataset)
        except ProjectError as exc:
            errors.append(str(exc))
    if errors:
        return ClinicalForm(None, tuple(errors), parsed)
    classes = len(load_dataset(dataset).labels)
    n_cal = parsed["CAL cases"].value
    if n_cal is not None and n_cal < classes:
        return ClinicalForm(None, (f"CAL cases: the dataset has {classes} classes; give {classes} or more (one of each "
                                   "class at least).",), parsed)
    t = int(parsed["Round budget T"].value or 1)
    try:
        spec = ClinicalSpec(dataset=dataset, scenarios=tuple(scenarios), seeds=tuple(range(int(parsed["Seeds"].value or 1))),
                            n_cal=n_cal, n_test=parsed["TEST cases"].value, agents=agents, free_rounds=t,
                            base_config=MediatorConfig(prior="empirical", t_max=t))
    except ProjectError as exc:
        return ClinicalForm(None, (str(exc),), parsed)
    return ClinicalForm(spec, (), parsed)
