"""A text reads as a rendered DDXPlus-8 case, or not (the Models page says so beside an
adapter's answer): rendered cases and their views do, prose such as the page's example
does not, and rendered cases outside the phrases' source still do."""
from __future__ import annotations

import clinical.ddxplus_style as style
from clinical.ddxplus import load_ddxplus8
from clinical.ddxplus_style import PHRASING_SHARE, ddxplus_phrasing, findings
from studio.views.model_lab_view import EXAMPLE_CASE


def test_the_models_page_example_is_prose_not_a_rendered_case() -> None:
    got = ddxplus_phrasing(EXAMPLE_CASE)
    assert (got.matched, got.findings) == (2, 11) and not got.reads_as_ddxplus


def test_findings_split_sentences_items_and_lists_with_numbers_as_hashes() -> None:
    text = "A 31-year-old woman. Pain: described as sharp and heavy; intensity 7/10. Other symptoms: has a cough."
    assert findings(text) == ["a #-year-old woman", "described as sharp", "heavy", "intensity #/#", "has a cough"]
    assert findings("   ") == [] and not ddxplus_phrasing("").reads_as_ddxplus


def test_rendered_cases_and_their_views_read_as_ddxplus() -> None:
    from dcem_clinical.stat_views import case_view_text
    from dcem_clinical.train_run import training_cases

    _, held, _ = training_cases("ddxplus8", 40)
    for case in held:
        assert ddxplus_phrasing(case.text).reads_as_ddxplus
        for view in ("complaint", "history", "symptoms"):
            text = case_view_text("ddxplus8", view, case)
            assert not findings(text) or ddxplus_phrasing(text).reads_as_ddxplus, (case.case_id, view)


def test_phrases_from_four_fifths_of_the_cases_cover_the_other_fifth() -> None:
    cases = load_ddxplus8()
    known = {f for i, c in enumerate(cases) if i % 5 for f in findings(c.text)}
    shares = [sum(f in known for f in findings(c.text)) / len(findings(c.text)) for i, c in enumerate(cases) if not i % 5]
    assert min(shares) >= 0.94 > PHRASING_SHARE  # the module docstring's figure
    example = findings(EXAMPLE_CASE)
    assert sum(f in known for f in example) / len(example) < 0.3
    assert "at least 94 %" in str(style.__doc__) and "2 of its 11" in str(style.__doc__)
