"""The one resume check every kind of run makes: the first field that differs, named with
its stored and given values, on one line."""
from __future__ import annotations

import pytest

from common.errors import ProjectError
from common.resume import NOT_SET, ResumeRefused, check_resume, first_difference


def test_the_same_settings_have_no_difference_whatever_the_container() -> None:
    stored = {"scenarios": ["S1", "S2"], "xi": 1.0, "base_config": {"t_max": 12, "alpha": 0.5}}
    given = {"scenarios": ("S1", "S2"), "xi": 1, "base_config": {"alpha": 0.5, "t_max": 12.0}}
    assert first_difference(stored, given) is None


@pytest.mark.parametrize("stored, given, expected", [
    ({"scenarios": ["S1"], "xi": 1.0}, {"scenarios": ["S2"], "xi": 0.5}, ("scenarios", ["S1"], ["S2"])),
    ({"a": 1, "cfg": {"t_max": 12}}, {"a": 1, "cfg": {"t_max": 6}}, ("cfg.t_max", 12, 6)),
    ({"a": 1}, {"a": 1, "risk_target": {"alpha": 0.2}}, ("risk_target", NOT_SET, {"alpha": 0.2})),
    ({"a": 1, "old": 2}, {"a": 1}, ("old", 2, NOT_SET)),
    ({"flag": True}, {"flag": 1}, ("flag", True, 1)),  # a switch is not a count
    ({"seeds": [0, 1]}, {"seeds": [0, 1, 2]}, ("seeds", [0, 1], [0, 1, 2])),
    ({"x": None}, {"x": 0}, ("x", None, 0)),
])
def test_the_first_difference_names_the_field_and_both_values(stored: dict, given: dict,  # type: ignore[type-arg]
                                                              expected: tuple) -> None:  # type: ignore[type-arg]
    assert first_difference(stored, given) == expected


def test_fields_are_taken_in_the_given_order() -> None:
    stored = {"a": 0, "b": 0, "c": 0}  # as JSON read back from the store: sorted keys
    assert first_difference(stored, {"c": 1, "b": 1, "a": 1}) == ("c", 0, 1)


def test_a_refusal_is_one_line_with_field_values_and_what_to_do() -> None:
    with pytest.raises(ResumeRefused) as caught:
        check_resume("run myrun", {"xi": 1.0, "note": "x\ny" * 60}, {"xi": 1.0, "note": "z"}, hint="do this")
    err = caught.value
    assert isinstance(err, ProjectError) and err.field == "note" and err.given == "z"
    text = str(err)
    assert "\n" not in text and text.startswith("run myrun is stored with other settings: note stored \"x\\ny")
    assert ' ...' in text and 'given "z"; nothing was written (do this)' in text  # a long value is cut
    check_resume("run myrun", {"xi": 1.0}, {"xi": 1.0}, hint="do this")  # the same settings pass
