"""Views: the part of a case a panel member reads.

A clinician on a panel rarely sees the whole record.  A view names the part of a case a
member reads: a statistical member is fit on it and answers from it (``stat@VIEW`` or
``stat:KIND@VIEW``), a language-model member is prompted with it (``MODEL@VIEW``, the
case text rendered from that part only, :func:`case_view_text`).  ``all`` (the whole
case, the default) keeps the members of earlier runs unchanged.

DDXPlus-8 (documents are evidence codes, see :mod:`dcem_clinical.stat_agent`):

- ``complaint``: the chief complaint only (the patient's initial evidence), what a
  triage desk hears first;
- ``history``: the antecedents (history and risk factors: ``is_antecedent`` in the
  released evidence ontology);
- ``symptoms``: every evidence that is not an antecedent;
- ``pain-character``: how the pain feels (character, intensity, precision, onset; not
  where it is), :mod:`clinical.ddxplus_views`.

MedQA-Tri (documents are the words of the case text):

- ``history``: the vignette's sentences before its first vital sign, examination or
  laboratory sentence (the first half of the sentences when it has none);
- ``findings``: the vignette from that sentence on;
- ``vignette``: the whole vignette without the canonical answer;
- ``answer``: the canonical answer only.

Measured on 200 cases out-of-fold (``docs/clinical_members.md``): DDXPlus-8 ``complaint``
0.59 and ``history`` 0.86 (exactly one of the two right on 44 %), ``symptoms`` 0.975;
MedQA-Tri ``history`` 0.40 and ``findings`` 0.52 with TF-IDF (exactly one right on 37 %).
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Callable, Mapping, Sequence

from clinical.ddxplus_phrasing import value_text
from clinical.ddxplus_views import DDXPLUS_VIEWS, evidence_view, is_antecedent, ontology, view_vignette
from clinical.datasets import FILE_PREFIX, ClinicalCase, is_file_dataset, known_dataset
from common.errors import ConfigError

__all__ = ["ALL", "VIEWS", "check_view", "view_text", "evidence_view", "is_antecedent", "feature_words",
           "split_view", "case_view_text", "ddxplus_cases"]

ALL = "all"
VIEWS: dict[str, tuple[str, ...]] = {  # dataset -> its views, the default first
    "ddxplus8": DDXPLUS_VIEWS,
    "medqa-tri": (ALL, "history", "findings", "vignette", "answer"),
}
ANSWER_MARK = "\n\nCanonical answer: "
_FINDING = re.compile(r"temperature|blood pressure|pulse|respirations|physical exam|examination|"
                      r"laboratory|vital sign|serum|x-ray|\bct\b|\bmri\b|ecg|electrocardiogra", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def check_view(dataset: str, view: str) -> str:
    """``view`` when ``dataset`` has it; ConfigError naming the valid views otherwise.  A
    case file's view must be on every case (a member reads it on each)."""
    found = known_dataset(dataset) if is_file_dataset(dataset) else None
    views = (ALL, *found.views) if found is not None else VIEWS.get(dataset, (ALL,))
    if view not in views:
        raise ConfigError("agents", f"unknown view {view!r} for {dataset} cases; valid: {', '.join(views)}")
    if found is not None and view != ALL:
        lacking = [c.source_id for c in found.cases if c.view(view) is None]
        if lacking:
            raise ConfigError("agents", f"view {view!r} is missing from {len(lacking)} of the {len(found.cases)} "
                                        f"cases of {dataset[len(FILE_PREFIX):]} (first: id {lacking[0]!r}); a member "
                                        "reads its view on every case")
    return view


_ontology = ontology


def feature_words(feature: str) -> str:
    """A DDXPlus evidence code in words (``E_55_@_V_88``: "Do you feel pain somewhere?
    left iliac fossa"); any other feature (a word of a text model) unchanged."""
    code, _, value = feature.partition("_@_")
    entry = _ontology().get(code) if feature.startswith("E_") else None
    if not entry:
        return feature
    question = str(entry.get("question_en", code)).strip()
    said = value_text(entry, value) if value else None
    return f"{question} {said}" if said else question


def _split_vignette(stem: str) -> tuple[str, str]:
    sentences = _SENTENCE.split(stem.strip())
    cut = next((i for i, s in enumerate(sentences) if _FINDING.search(s)), len(sentences) // 2)
    cut = max(cut, 1) if len(sentences) > 1 else cut
    return " ".join(sentences[:cut]), " ".join(sentences[cut:])


_TEXT_VIEWS: Mapping[str, Callable[[str, str], str]] = {
    "history": lambda stem, answer: _split_vignette(stem)[0],
    "findings": lambda stem, answer: _split_vignette(stem)[1],
    "vignette": lambda stem, answer: stem,
    "answer": lambda stem, answer: answer,
}


def view_text(view: str, case: ClinicalCase) -> str:
    """The words of a case text that ``view`` reads (MedQA-Tri views, a case file's own;
    ``all`` = the text)."""
    if view == ALL:
        return case.text
    if case.views:
        own = case.view(view)
        if own is None:
            raise ConfigError("agents", f"case {case.source_id!r} has no view {view!r}")
        return own
    stem, _, answer = case.text.partition(ANSWER_MARK)
    return _TEXT_VIEWS[view](stem, answer.strip())


def split_view(key: str, dataset: str) -> tuple[str, str]:
    """(member key without its view, view) of ``KEY@VIEW`` (view ``all`` without ``@``);
    ConfigError for a view ``dataset`` does not have."""
    base, at, view = key.strip().rpartition("@")
    if not at:
        return key.strip(), ALL
    return base.strip(), check_view(dataset, view.strip())


@lru_cache(maxsize=1)
def ddxplus_cases() -> dict[str, Any]:
    """The DDXPlus-8 cases by id (read once)."""
    from clinical.ddxplus import load_ddxplus8

    return {c.case_id: c for c in load_ddxplus8()}


def case_view_text(dataset: str, view: str, case: ClinicalCase) -> str:
    """The case text a language-model member with ``view`` reads: DDXPlus-8's vignette
    rendered from the view's evidence only (the chief complaint opens it when the view
    holds it), MedQA-Tri's part of the vignette; the case text itself for ``all``."""
    if view == ALL:
        return case.text
    if dataset != "ddxplus8":  # MedQA-Tri's part of the vignette, or a case file's own view
        return view_text(view, case)
    source = ddxplus_cases()[case.source_id]
    return view_vignette(view, source.age, source.sex, source.evidences, source.initial_evidence)
