"""The MedQA-Tri 7-way specialty-triage task (Appendix D.2, Appendix G, H.1).

Label set, in the order of Appendix G (indices 0..6)::

    Cardiology, Pulmonology, Neurology, Gastroenterology,
    Endocrinology, Infectious_Disease, Renal_Urology

High-risk subset: Cardiology, Pulmonology, Neurology, Infectious_Disease;
:func:`medqa_tri_loss` is the three-level loss of Appendix E with ``l_high = 5``.

Construction (:func:`build_medqa_tri`) from a MedQA-USMLE JSONL file:

1. keep diagnosis-style stems (:func:`clinical.medqa_stem_filter.is_diagnosis_stem`);
2. map each to a specialty with the weighted keyword heuristic over the canonical
   answer and the stem (:func:`clinical.medqa_tri_keywords.map_specialty`);
3. items the heuristic skips go to an optional ``fallback(stem, answer)`` callable
   (an LLM in the paper); its answer must be one of the seven labels, otherwise the
   item is dropped and counted.  Without a fallback, skipped items are dropped.

Each item's case text (Appendix G ``CASE_TEXT``) is the stem plus the canonical answer:
``stem + "\\n\\nCanonical answer: " + answer``.  Item ids are ``medqa-NNNN``, the 0-based
row number in the source file.
"""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Literal, Sequence

import numpy as np

from clinical.data_files import expect
from clinical.medqa_stem_filter import is_diagnosis_stem
from clinical.medqa_tri_keywords import MEDQA_TRI_LABELS, map_specialty
from clinical.splits import stratified_split as _stratified_split
from common.errors import InputError
from common.fields import Instance, Text
from common.loss import three_level_loss

__all__ = [
    "LABELS",
    "HIGH_RISK",
    "HIGH_RISK_INDICES",
    "L_HIGH",
    "DEFAULT_PATH",
    "ANSWER_PREFIX",
    "Fallback",
    "MedqaTriItem",
    "MedqaTriReport",
    "is_diagnosis_stem",
    "map_specialty",
    "case_text",
    "build_medqa_tri",
    "write_medqa_tri",
    "load_medqa_tri",
    "medqa_tri_loss",
    "stratified_split",
]

log = logging.getLogger(__name__)

LABELS: tuple[str, ...] = MEDQA_TRI_LABELS
HIGH_RISK: tuple[str, ...] = ("Cardiology", "Pulmonology", "Neurology", "Infectious_Disease")
HIGH_RISK_INDICES: tuple[int, ...] = tuple(LABELS.index(name) for name in HIGH_RISK)
L_HIGH = 5.0
DEFAULT_PATH = Path(__file__).resolve().parents[1] / "data" / "medqa_tri" / "medqa_tri.jsonl"
ANSWER_PREFIX = "\n\nCanonical answer: "

Fallback = Callable[[str, str], str | None]
MappingKind = Literal["keyword", "fallback"]
_MAPPINGS: tuple[str, ...] = ("keyword", "fallback")


@dataclass(frozen=True)
class MedqaTriItem:
    """One MedQA-Tri case.

    ``label_index`` indexes :data:`LABELS` and ``label`` is its name; ``text`` is the
    case text shown to agents; ``mapping`` says whether the keyword heuristic or the
    fallback labelled it; ``reason`` records the matched keywords (or the fallback).
    """

    item_id: str
    label_index: int
    label: str
    text: str
    mapping: MappingKind
    reason: str

    def to_json(self) -> dict[str, str]:
        """The shipped-file record (the index is implied by ``label``)."""
        return {"item_id": self.item_id, "label": self.label, "text": self.text,
                "mapping": self.mapping, "reason": self.reason}


@dataclass(frozen=True)
class MedqaTriReport:
    """Counts per construction stage and per class.

    ``dropped`` = items the heuristic skipped and the fallback did not recover;
    ``fallback_invalid`` (part of ``dropped``) = fallback answers that were not a label.
    """

    total: int
    diagnosis_style: int
    keyword_mapped: int
    fallback_mapped: int
    dropped: int
    fallback_invalid: int
    per_class: dict[str, int] = field(default_factory=dict)
    per_class_keyword: dict[str, int] = field(default_factory=dict)
    per_class_fallback: dict[str, int] = field(default_factory=dict)

    @property
    def n_items(self) -> int:
        return self.keyword_mapped + self.fallback_mapped

    def as_dict(self) -> dict[str, object]:
        return {"total": self.total, "diagnosis_style": self.diagnosis_style,
                "keyword_mapped": self.keyword_mapped, "fallback_mapped": self.fallback_mapped,
                "dropped": self.dropped, "fallback_invalid": self.fallback_invalid,
                "per_class": dict(self.per_class),
                "per_class_keyword": dict(self.per_class_keyword),
                "per_class_fallback": dict(self.per_class_fallback)}


def case_text(stem: str, answer: str) -> str:
    """Appendix G ``CASE_TEXT``: the stem plus the canonical answer text."""
    return stem.strip() + ANSWER_PREFIX + answer.strip()


def _read_jsonl(path: Path, field_name: str) -> list[dict[str, object]]:
    if not path.is_file():
        raise InputError(field_name, f"file not found: {path}")
    rows: list[dict[str, object]] = []
    with path.open(encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise InputError(field_name, f"{path.name} line {line_no}: not JSON ({exc.msg})") from exc
            expect(f"{path.name} line {line_no}: expected a JSON object", row, Instance(dict), field=field_name)
            rows.append(row)
    return rows


def _text_field(row: dict[str, object], key: str, where: str, field_name: str) -> str:
    return expect(f"{where}: field {key!r} must be a non-empty string", row.get(key), Text(), field=field_name).strip()


def _count(items: Iterable[MedqaTriItem], mapping: str | None = None) -> dict[str, int]:
    out = {name: 0 for name in LABELS}
    for item in items:
        if mapping is None or item.mapping == mapping:
            out[item.label] += 1
    return out


def build_medqa_tri(path: Path | str, *, fallback: Fallback | None = None
                    ) -> tuple[list[MedqaTriItem], MedqaTriReport]:
    """Build MedQA-Tri from a MedQA-USMLE JSONL file (fields ``question``, ``answer``).

    ``fallback(stem, answer)`` is asked about every diagnosis-style item the keyword
    heuristic skips; it must return one of :data:`LABELS` (surrounding whitespace is
    ignored) or ``None``.  Any other answer drops the item and is counted in
    ``fallback_invalid``.  Exceptions raised by ``fallback`` propagate.
    """
    rows = _read_jsonl(Path(path), "path")
    items: list[MedqaTriItem] = []
    n_diag = n_dropped = n_invalid = 0
    for i, row in enumerate(rows):
        where = f"row {i}"
        stem = _text_field(row, "question", where, "path")
        answer = _text_field(row, "answer", where, "path")
        if not is_diagnosis_stem(stem):
            continue
        n_diag += 1
        item_id = f"medqa-{i:04d}"
        label, reason = map_specialty(stem, answer)
        mapping: MappingKind = "keyword"
        if label is None and fallback is not None:
            raw = fallback(stem, answer)
            chosen = raw.strip() if isinstance(raw, str) else None
            if chosen in LABELS:
                label, mapping = chosen, "fallback"
                reason = f"fallback: {chosen} (heuristic {reason})"
            else:
                n_invalid += 1
                log.warning("MedQA-Tri %s: fallback answer %r is not a label; dropped", item_id, raw)
        if label is None:
            n_dropped += 1
            continue
        items.append(MedqaTriItem(item_id=item_id, label_index=LABELS.index(label), label=label,
                                  text=case_text(stem, answer), mapping=mapping, reason=reason))
    report = MedqaTriReport(
        total=len(rows), diagnosis_style=n_diag,
        keyword_mapped=sum(item.mapping == "keyword" for item in items),
        fallback_mapped=sum(item.mapping == "fallback" for item in items),
        dropped=n_dropped, fallback_invalid=n_invalid, per_class=_count(items),
        per_class_keyword=_count(items, "keyword"), per_class_fallback=_count(items, "fallback"))
    log.info("MedQA-Tri built from %s: %s", path, report.as_dict())
    return items, report


def write_medqa_tri(items: Sequence[MedqaTriItem], path: Path | str) -> Path:
    """Write ``items`` as JSONL (one :meth:`MedqaTriItem.to_json` object per line)."""
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8", newline="\n") as handle:
        for item in items:
            handle.write(json.dumps(item.to_json(), ensure_ascii=False) + "\n")
    return out


def load_medqa_tri(path: Path | str | None = None) -> list[MedqaTriItem]:
    """Read a MedQA-Tri JSONL file (default: the shipped ``data/medqa_tri/medqa_tri.jsonl``)."""
    file = Path(path) if path is not None else DEFAULT_PATH
    items: list[MedqaTriItem] = []
    seen: set[str] = set()
    for i, row in enumerate(_read_jsonl(file, "path")):
        where = f"{file.name} item {i}"
        item_id = _text_field(row, "item_id", where, "path")
        label = _text_field(row, "label", where, "path")
        mapping = _text_field(row, "mapping", where, "path")
        reason = row.get("reason", "")
        if label not in LABELS:
            raise InputError("label", f"{where}: {label!r} is not one of {', '.join(LABELS)}")
        if mapping not in _MAPPINGS:
            raise InputError("mapping", f"{where}: {mapping!r} is not 'keyword' or 'fallback'")
        if item_id in seen:
            raise InputError("item_id", f"{where}: duplicate id {item_id!r}")
        expect(f"{where}: must be a string", reason, Instance(str), field="reason")
        seen.add(item_id)
        items.append(MedqaTriItem(item_id=item_id, label_index=LABELS.index(label), label=label,
                                  text=_text_field(row, "text", where, "path"),
                                  mapping=mapping,  # type: ignore[arg-type]
                                  reason=reason))
    return items


def medqa_tri_loss(l_high: float = L_HIGH) -> np.ndarray:
    """``L[d, y]`` (7 x 7): 0 on the diagonal, ``l_high`` for missing a high-risk truth, else 1."""
    return three_level_loss(len(LABELS), HIGH_RISK_INDICES, l_high)


def stratified_split(items: Sequence[MedqaTriItem], n_cal: int = 70, n_test: int = 140, *,
                     rng: np.random.Generator
                     ) -> tuple[list[MedqaTriItem], list[MedqaTriItem], list[str]]:
    """Disjoint class-stratified CAL/TEST draw (Appendix H.1: 70/140 per seed).

    Classes get equal counts where the data allow; a short class is used in full and a
    note says so (see :mod:`clinical.splits`).  Same ``rng`` seed -> same split.
    """
    return _stratified_split(items, lambda item: item.label_index, LABELS, n_cal, n_test, rng)
