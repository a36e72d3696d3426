"""The DDXPlus 8-way task (Appendix D.2, Table 4, Appendix G, H.1).

Label set, in the order of Appendix G (indices 0..7)::

    Anaphylaxis, Pulmonary_embolism, NSTEMI_STEMI, Myocarditis,
    URTI, Viral_pharyngitis, GERD, Bronchitis

The first four are the high-risk subset (severity 1-2 in ``release_conditions.json``);
:func:`ddxplus_loss` is the three-level loss of Appendix E with ``l_high = 5``.

Mapping from the released ``PATHOLOGY`` field (English keys of
``release_conditions.json``) to our labels, see ``PATHOLOGY_TO_LABEL``::

    "Anaphylaxis"             -> Anaphylaxis
    "Pulmonary embolism"      -> Pulmonary_embolism
    "Possible NSTEMI / STEMI" -> NSTEMI_STEMI
    "Myocarditis"             -> Myocarditis
    "URTI"                    -> URTI
    "Viral pharyngitis"       -> Viral_pharyngitis
    "GERD"                    -> GERD
    "Bronchitis"              -> Bronchitis

Rows with any other pathology are dropped and counted (:func:`read_ddxplus8`).  The
case text is rendered by :func:`clinical.ddxplus_vignette.render_vignette` from AGE, SEX,
EVIDENCES and INITIAL_EVIDENCE only; PATHOLOGY and DIFFERENTIAL_DIAGNOSIS never reach it.
"""
from __future__ import annotations

import ast
import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from clinical.data_files import expect
from clinical.ddxplus_vignette import MAX_VIGNETTE_CHARS, render_vignette
from clinical.splits import stratified_split as _stratified_split
from common.errors import InputError
from common.fields import Instance, Satisfies, Seq
from common.loss import three_level_loss

__all__ = ["LABELS", "HIGH_RISK", "HIGH_RISK_INDICES", "L_HIGH", "PATHOLOGY_TO_LABEL",
           "DEFAULT_CSV", "EVIDENCES_FILE", "Case", "Ddxplus8Data", "ddxplus_loss",
           "load_evidences", "read_ddxplus8", "load_ddxplus8", "stratified_split"]

log = logging.getLogger(__name__)

LABELS: tuple[str, ...] = ("Anaphylaxis", "Pulmonary_embolism", "NSTEMI_STEMI", "Myocarditis",
                           "URTI", "Viral_pharyngitis", "GERD", "Bronchitis")
HIGH_RISK: tuple[str, ...] = LABELS[:4]
HIGH_RISK_INDICES: tuple[int, ...] = (0, 1, 2, 3)
L_HIGH = 5.0

PATHOLOGY_TO_LABEL: dict[str, str] = {
    "Anaphylaxis": "Anaphylaxis",
    "Pulmonary embolism": "Pulmonary_embolism",
    "Possible NSTEMI / STEMI": "NSTEMI_STEMI",
    "Myocarditis": "Myocarditis",
    "URTI": "URTI",
    "Viral pharyngitis": "Viral_pharyngitis",
    "GERD": "GERD",
    "Bronchitis": "Bronchitis",
}

DEFAULT_CSV = Path(__file__).resolve().parents[1] / "data" / "ddxplus" / "ddxplus_8way_subset.csv"
EVIDENCES_FILE = "release_evidences.json"
_COLUMNS = ("AGE", "SEX", "PATHOLOGY", "EVIDENCES", "INITIAL_EVIDENCE")


@dataclass(frozen=True)
class Case:
    """One DDXPlus patient recast for the 8-way task.

    ``label`` indexes :data:`LABELS`; ``text`` is the rendered vignette the agents see;
    ``evidences`` are the raw evidence tokens in file order.
    """

    case_id: str
    label: int
    label_name: str
    text: str
    age: int
    sex: str
    evidences: tuple[str, ...]
    initial_evidence: str
    source: str = ""


@dataclass(frozen=True)
class Ddxplus8Data:
    """Result of :func:`read_ddxplus8`: the kept cases and what was dropped."""

    cases: list[Case]
    n_rows: int
    dropped: dict[str, int] = field(default_factory=dict)

    @property
    def n_dropped(self) -> int:
        return sum(self.dropped.values())

    def counts(self) -> dict[str, int]:
        """Cases per label, in label order."""
        out = {name: 0 for name in LABELS}
        for case in self.cases:
            out[case.label_name] += 1
        return out


def ddxplus_loss(l_high: float = L_HIGH) -> np.ndarray:
    """``L[d, y]`` (8 x 8): 0 on the diagonal, ``l_high`` for missing a high-risk truth, else 1."""
    return three_level_loss(len(LABELS), HIGH_RISK_INDICES, l_high)


def load_evidences(path: Path | str) -> dict[str, dict[str, Any]]:
    """Parse ``release_evidences.json`` (a dict keyed by evidence code)."""
    path = Path(path)
    if not path.is_file():
        raise InputError("evidences_path", f"{path} does not exist")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError("evidences_path", f"cannot read {path}: {exc}") from None
    what = f"{path} is not a DDXPlus evidence ontology"
    entries = list(expect(what, data, Instance(dict), field="evidences_path").values())
    expect(what, entries, Seq(Instance(dict)), Satisfies(lambda es: all("question_en" in e for e in es)),
           field="evidences_path")
    return data


def _parse_list(value: object, row: int) -> tuple[str, ...]:
    try:
        parsed = ast.literal_eval(str(value))
    except (ValueError, SyntaxError):
        raise InputError("EVIDENCES", f"row {row}: not a list literal: {str(value)[:60]!r}") from None
    return tuple(expect(f"row {row}: expected a list of evidence codes", parsed, Seq(Instance(str)), field="EVIDENCES"))


def read_ddxplus8(path: Path | str | None = None, evidences_path: Path | str | None = None,
                  max_chars: int = MAX_VIGNETTE_CHARS) -> Ddxplus8Data:
    """Read a DDXPlus patient CSV, keep the 8 task pathologies and render each vignette.

    ``path`` defaults to the shipped ``data/ddxplus/ddxplus_8way_subset.csv``;
    ``evidences_path`` defaults to ``release_evidences.json`` next to the CSV.
    ``case_id`` is ``"ddx-<row>"`` with the 0-based row number in the file.
    """
    csv_path = Path(path) if path is not None else DEFAULT_CSV
    if not csv_path.is_file():
        raise InputError("path", f"{csv_path} does not exist")
    ontology = load_evidences(evidences_path if evidences_path is not None
                              else csv_path.parent / EVIDENCES_FILE)
    try:
        frame = pd.read_csv(csv_path, dtype=str, keep_default_na=False)
    except (OSError, ValueError) as exc:
        raise InputError("path", f"cannot read {csv_path}: {exc}") from None
    missing = [c for c in _COLUMNS if c not in frame.columns]
    if missing:
        raise InputError("path", f"{csv_path.name} lacks column(s) {', '.join(missing)}")
    has_source = "SOURCE" in frame.columns
    cases: list[Case] = []
    dropped: dict[str, int] = {}
    for row, rec in enumerate(frame.to_dict("records")):
        pathology = str(rec["PATHOLOGY"]).strip()
        label_name = PATHOLOGY_TO_LABEL.get(pathology)
        if label_name is None:
            dropped[pathology] = dropped.get(pathology, 0) + 1
            continue
        try:
            age = int(float(rec["AGE"]))
        except ValueError:
            raise InputError("AGE", f"row {row}: not a number: {rec['AGE']!r}") from None
        if not 0 <= age <= 130:
            raise InputError("AGE", f"row {row}: {age} is outside 0..130")
        sex = str(rec["SEX"]).strip().upper()
        if sex not in ("M", "F"):
            raise InputError("SEX", f"row {row}: expected M or F, got {rec['SEX']!r}")
        evidences = _parse_list(rec["EVIDENCES"], row)
        initial = str(rec["INITIAL_EVIDENCE"]).strip()
        text = render_vignette(age, sex, evidences, ontology, initial_evidence=initial or None,
                               max_chars=max_chars)
        cases.append(Case(case_id=f"ddx-{row:04d}", label=LABELS.index(label_name),
                          label_name=label_name, text=text, age=age, sex=sex,
                          evidences=evidences, initial_evidence=initial,
                          source=str(rec["SOURCE"]) if has_source else ""))
    if dropped:
        log.info("DDXPlus %s: dropped %d of %d rows outside the 8 labels: %s", csv_path.name,
                 sum(dropped.values()), len(frame), dict(sorted(dropped.items())))
    return Ddxplus8Data(cases=cases, n_rows=len(frame), dropped=dict(sorted(dropped.items())))


def load_ddxplus8(path: Path | str | None = None) -> list[Case]:
    """The 8-way cases of ``path`` (default: the shipped subset); see :func:`read_ddxplus8`."""
    return read_ddxplus8(path).cases


def stratified_split(cases: Sequence[Case], n_cal: int = 80, n_test: int = 160, *,
                     rng: np.random.Generator) -> tuple[list[Case], list[Case], list[str]]:
    """Disjoint class-stratified CAL/TEST draw (Appendix H.1: 80/160 per seed).

    Classes get equal counts where the data allow; a short class is used in full and a
    note says so (see :mod:`clinical.splits`).  Same ``rng`` seed -> same split.
    """
    return _stratified_split(cases, lambda c: c.label, LABELS, n_cal, n_test, rng)
