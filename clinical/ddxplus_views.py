"""Views of a DDXPlus-8 case: the part of the record one panel member reads.

A view names a subset of a case's evidence codes; a language-model member reads the
vignette rendered from that subset alone (:func:`view_vignette`), a statistical member is
fit on the subset's codes.  Used by D-CEM's clinical panels (``stat@VIEW``, ``MODEL@VIEW``,
:mod:`dcem_clinical.stat_views`) and by Small Agent Groups whose members read different
views (:mod:`sag.group.member_views`).

- ``all``: every evidence code (the whole case);
- ``complaint``: the chief complaint (the patient's initial evidence), what a triage desk
  hears first;
- ``history``: the antecedents, history and risk factors (``is_antecedent`` in the released
  evidence ontology);
- ``symptoms``: every evidence code that is not an antecedent;
- ``pain-character``: how the pain feels: whether there is pain related to the visit,
  its character, intensity, precision of location and speed of onset (``E_53``, ``E_54``,
  ``E_56``, ``E_58``, ``E_59``), but not where it is or where it radiates;
- ``pain-location``: where the pain is and where it radiates (``E_55``, ``E_57``).

Naive Bayes fit on the 495 TRAIN cases and measured on the 330 HELD-OUT ones reads
``symptoms`` 1.000 (the symptoms alone settle the diagnosis), ``pain-location`` 0.958,
``history`` 0.891, ``pain-character`` 0.882 and ``complaint`` 0.585
(``docs/group_views.md``).
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Sequence

__all__ = ["ALL", "DDXPLUS_VIEWS", "VIEW_READS", "PAIN_CHARACTER_CODES", "PAIN_LOCATION_CODES", "evidence_view", "is_antecedent",
           "ontology", "view_vignette"]

ALL = "all"
DDXPLUS_VIEWS: tuple[str, ...] = (ALL, "complaint", "history", "symptoms", "pain-character", "pain-location")
PAIN_CHARACTER_CODES = frozenset({"E_53", "E_54", "E_56", "E_58", "E_59"})
PAIN_LOCATION_CODES = frozenset({"E_55", "E_57"})

VIEW_READS: dict[str, str] = {
    ALL: "the whole case",
    "complaint": "the chief complaint",
    "history": "the history and risk factors",
    "symptoms": "the symptoms, not the history",
    "pain-character": "how the pain feels, not where it is",
    "pain-location": "where the pain is and where it spreads",
}
"""What a member with each view read, in words (agent lanes, transcripts, ``sag ask``)."""


@lru_cache(maxsize=1)
def ontology() -> dict[str, dict[str, Any]]:
    """The released evidence ontology (read once)."""
    from clinical.ddxplus import DEFAULT_CSV, EVIDENCES_FILE, load_evidences

    return load_evidences(DEFAULT_CSV.parent / EVIDENCES_FILE)


@lru_cache(maxsize=1)
def _antecedents() -> frozenset[str]:
    return frozenset(code for code, entry in ontology().items() if isinstance(entry, dict) and entry.get("is_antecedent"))


def _code(evidence: str) -> str:
    return evidence.split("_@_", 1)[0]


def is_antecedent(code: str) -> bool:
    """Whether an evidence code (``E_12`` or ``E_55_@_V_88``) is history or a risk factor."""
    return _code(code) in _antecedents()


def evidence_view(view: str, evidences: Sequence[str], initial: str) -> list[str]:
    """The evidence codes of a DDXPlus case that ``view`` reads (``all`` for an unknown name
    is never given: callers check the view first)."""
    if view == "complaint":
        return [initial] if initial else []
    if view == "history":
        return [e for e in evidences if is_antecedent(e)]
    if view == "symptoms":
        return [e for e in evidences if not is_antecedent(e)]
    if view == "pain-character":
        return [e for e in evidences if _code(e) in PAIN_CHARACTER_CODES]
    if view == "pain-location":
        return [e for e in evidences if _code(e) in PAIN_LOCATION_CODES]
    return list(evidences)


def view_vignette(view: str, age: int, sex: str, evidences: Sequence[str], initial: str) -> str:
    """The vignette a language-model member with ``view`` reads: rendered from the view's
    evidence only, the chief complaint opening it when the view holds it."""
    from clinical.ddxplus_vignette import render_vignette

    chosen = evidence_view(view, evidences, initial)
    opening = initial if initial in chosen else None
    return render_vignette(age, sex, chosen, ontology(), initial_evidence=opening or None)
