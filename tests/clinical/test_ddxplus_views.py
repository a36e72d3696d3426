"""Views of a DDXPlus-8 case, shared by D-CEM's panels and view groups."""
from __future__ import annotations

from clinical.ddxplus import load_ddxplus8
from clinical.ddxplus_views import (DDXPLUS_VIEWS, PAIN_CHARACTER_CODES, VIEW_READS, evidence_view,
                                    view_vignette)


def test_pain_character_reads_how_the_pain_feels_not_where_it_is() -> None:
    case = next(c for c in load_ddxplus8() if any(e.startswith("E_55") for e in c.evidences))
    chosen = evidence_view("pain-character", case.evidences, case.initial_evidence)
    assert chosen and all(e.split("_@_")[0] in PAIN_CHARACTER_CODES for e in chosen)
    text = view_vignette("pain-character", case.age, case.sex, case.evidences, case.initial_evidence)
    whole = view_vignette("all", case.age, case.sex, case.evidences, case.initial_evidence)
    assert "located at" in whole and "located at" not in text
    assert "intensity" in text and "History and risk factors" not in text


def test_every_view_says_what_it_reads() -> None:
    assert set(VIEW_READS) == set(DDXPLUS_VIEWS)
    case = load_ddxplus8()[0]
    assert view_vignette("all", case.age, case.sex, case.evidences, case.initial_evidence) == case.text
