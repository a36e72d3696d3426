"""Retrieval corpora: the reference passages knowledge agents search and cite.

``load_corpus(name)`` returns every :class:`Passage` of one shipped corpus
(:data:`CORPORA`), in a fixed order, with ids that are unique and stable across runs:

===============  ===========================================  ===================  ==============
corpus           file (under ``data/``)                       passage id           ``source_id``
===============  ===========================================  ===================  ==============
``medlineplus``  ``medlineplus_ddxplus/medlineplus_ddxplus_   ``mlp-N`` (1-based   the stored
                 passages.jsonl`` (74 MedlinePlus passages)   line number)         chunk id
``pubmedqa``     ``pubmedqa/ori_pqal.json`` (1,000 PQA-L      ``pmq-<PMID>``       the PMID
                 abstracts)
``ddxplus``      ``ddxplus/release_conditions.json`` +        ``ddx-<slug of the   the English
                 ``ddxplus/release_evidences.json``           condition name>``    condition name
                 (49 conditions)
===============  ===========================================  ===================  ==============

What goes into each passage:

* **medlineplus**: the stored ``title`` (the DDXPlus condition the passage was aligned to)
  and ``text``, unchanged.  The file keeps upstream duplicates: 73 distinct chunk ids
  (``chronic_rhinosinusitis_0`` appears under two titles) and 66 distinct texts.
* **pubmedqa**: the abstract's ``CONTEXTS`` only, one ``"LABEL: text"`` line per section
  (the same text a PubMedQA :class:`~clinical.questions.QuestionItem` shows as its
  context).  ``LONG_ANSWER`` (the conclusion) and ``final_decision`` are the item's
  answer and never enter a passage.  ``source_id`` is the PMID, the PubMedQA item id, so
  a caller can exclude an item's own abstract.
* **ddxplus**: per condition its English name, ICD-10 code and severity, then the
  ``question_en`` text of each listed symptom and of each antecedent (history and risk
  factors), in ontology order.

:func:`corpus_digest` is a SHA-256 over every passage id, source id, title and text, so an index
built from a corpus can tell when the corpus changed.
"""
from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable

from clinical.data_files import expect, read_json, read_jsonl
from common.errors import InputError
from common.fields import Instance, OneOf, Seq, Text, check

__all__ = ["Passage", "CORPORA", "DEFAULT_DATA_DIR", "load_corpus", "corpus_digest"]

CORPORA: tuple[str, ...] = ("medlineplus", "pubmedqa", "ddxplus")
DEFAULT_DATA_DIR = Path(__file__).resolve().parents[1] / "data"
MEDLINEPLUS_FILE = "medlineplus_ddxplus/medlineplus_ddxplus_passages.jsonl"
PUBMEDQA_FILE = "pubmedqa/ori_pqal.json"
CONDITIONS_FILE = "ddxplus/release_conditions.json"
EVIDENCES_FILE = "ddxplus/release_evidences.json"
_FIELD = "data_dir"


@dataclass(frozen=True)
class Passage:
    """One retrievable passage.

    ``passage_id`` is unique within all corpora (it starts with the corpus prefix
    ``mlp-``, ``pmq-`` or ``ddx-``); ``source_id`` names the record it came from (the
    PMID for PubMedQA), so callers can exclude an evaluated item's own source.
    """

    passage_id: str
    corpus: str
    source_id: str
    title: str
    text: str




_OBJECT, _LIST = Instance(dict), Seq(min_len=1, types=(list,))


def _string(value: object, where: str, field: str) -> str:
    return expect(f"{where}: {field} must be a non-empty string", value, Text()).strip()


def _medlineplus(data_dir: Path) -> list[Passage]:
    """One passage per line of the MedlinePlus JSONL file, ids ``mlp-<line number>``."""
    out: list[Passage] = []
    for where, row, line_no in read_jsonl(data_dir, MEDLINEPLUS_FILE):
        out.append(Passage(f"mlp-{line_no}", "medlineplus", _string(row.get("pmid"), where, "pmid"),
                           _string(row.get("title"), where, "title"), _string(row.get("text"), where, "text")))
    return out


def _pubmedqa(data_dir: Path) -> list[Passage]:
    """One passage per PQA-L abstract, built from ``CONTEXTS`` and ``LABELS`` only."""
    records = read_json(data_dir, PUBMEDQA_FILE)
    expect(f"{PUBMEDQA_FILE}: expected an object keyed by PMID", records, _OBJECT)
    out: list[Passage] = []
    for pmid, record in records.items():
        where = f"{PUBMEDQA_FILE} PMID {pmid}"
        contexts = record.get("CONTEXTS") if isinstance(record, dict) else None
        labels = record.get("LABELS") if isinstance(record, dict) else None
        same = f"{where}: CONTEXTS and LABELS must be non-empty lists of the same length"
        expect(same, labels, Seq(min_len=len(expect(same, contexts, _LIST)), max_len=len(contexts), types=(list,)))
        text = "\n".join(f"{label}: {section}" for label, section in zip(labels, contexts)).strip()
        out.append(Passage(f"pmq-{pmid}", "pubmedqa", str(pmid), f"PubMed {pmid}", text))
    return out


def _slug(name: str) -> str:
    """``"Guillain-Barré syndrome"`` -> ``"guillain-barre-syndrome"``."""
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[^a-z0-9]+", "-", ascii_name.lower()).strip("-")


def _questions(codes: object, evidences: dict[str, Any], where: str) -> list[str]:
    expect(f"{where}: expected an object of evidence codes", codes, _OBJECT)
    out: list[str] = []
    for code in codes:
        entry = expect(f"{where}: evidence {code!r} is not in {EVIDENCES_FILE}", evidences.get(code), _OBJECT)
        out.append(_string(entry.get("question_en"), f"{EVIDENCES_FILE} {code}", "question_en"))
    return out


def _condition_text(name: str, condition: dict[str, Any], evidences: dict[str, Any], where: str) -> str:
    symptoms = _questions(condition.get("symptoms"), evidences, f"{where} symptoms")
    antecedents = _questions(condition.get("antecedents"), evidences, f"{where} antecedents")
    icd, severity = condition.get("icd10-id", "?"), condition.get("severity", "?")
    head = f"{name} (ICD-10 {icd}; DDXPlus severity {severity}, where 1 is the most severe)."
    lines = [head, "Symptoms (DDXPlus evidence questions): " + " ".join(symptoms)]
    if antecedents:
        lines.append("Antecedents, history and risk factors (DDXPlus evidence questions): "
                     + " ".join(antecedents))
    return "\n".join(lines)


def _ddxplus(data_dir: Path) -> list[Passage]:
    """One passage per DDXPlus condition: name, code, severity and its evidence questions."""
    conditions = read_json(data_dir, CONDITIONS_FILE)
    evidences = read_json(data_dir, EVIDENCES_FILE)
    for data in (conditions, evidences):
        expect(f"{CONDITIONS_FILE} and {EVIDENCES_FILE} must each hold one JSON object", data, _OBJECT)
    out: list[Passage] = []
    seen: dict[str, str] = {}
    for key, condition in conditions.items():
        where = f"{CONDITIONS_FILE} {key!r}"
        expect(f"{where}: expected an object", condition, _OBJECT)
        name = _string(condition.get("cond-name-eng", key), where, "cond-name-eng")
        passage_id = f"ddx-{_slug(name)}"
        if passage_id in seen:
            raise InputError(_FIELD, f"{where}: id {passage_id!r} clashes with {seen[passage_id]!r}")
        seen[passage_id] = name
        out.append(Passage(passage_id, "ddxplus", name, name, _condition_text(name, condition, evidences, where)))
    return out


_READERS: dict[str, Callable[[Path], list[Passage]]] = {
    "medlineplus": _medlineplus,
    "pubmedqa": _pubmedqa,
    "ddxplus": _ddxplus,
}


def _check_name(name: object) -> str:
    return check("corpus", name, OneOf(tuple(_READERS),
                                       msg=f"unknown corpus {{value!r}} (known: {', '.join(CORPORA)})"))


@lru_cache(maxsize=None)
def _cached(name: str, folder: str) -> tuple[Passage, ...]:
    passages = tuple(_READERS[name](Path(folder)))
    ids = [p.passage_id for p in passages]
    if len(set(ids)) != len(ids):
        raise InputError(_FIELD, f"corpus {name!r}: passage ids are not unique")
    return passages


def load_corpus(name: str, *, data_dir: Path | str | None = None) -> tuple[Passage, ...]:
    """Every passage of corpus ``name`` (one of :data:`CORPORA`), in a fixed order.

    ``data_dir`` defaults to the project's ``data/`` folder.  Results are cached per
    ``(name, data_dir)``.  An unknown name raises :class:`~common.errors.ConfigError`
    listing the known ones; a missing or malformed file raises
    :class:`~common.errors.InputError` on field ``data_dir``.
    """
    folder = DEFAULT_DATA_DIR if data_dir is None else Path(data_dir)
    return _cached(_check_name(name), str(folder.resolve()))


@lru_cache(maxsize=None)
def _cached_digest(name: str, folder: str) -> str:
    digest = hashlib.sha256(name.encode("utf-8"))
    for passage in _cached(name, folder):
        for part in (passage.passage_id, passage.source_id, passage.title, passage.text):
            digest.update(b"\x00" + part.encode("utf-8"))
        digest.update(b"\x01")
    return digest.hexdigest()


def corpus_digest(name: str, *, data_dir: Path | str | None = None) -> str:
    """SHA-256 (hex) over the corpus name and every passage's id, source id, title and text, in order."""
    folder = DEFAULT_DATA_DIR if data_dir is None else Path(data_dir)
    return _cached_digest(_check_name(name), str(folder.resolve()))
