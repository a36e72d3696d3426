"""The view group's shipped adapters say what they are for and what input they expect: a
member's turn on one view, not a whole case or prose (the Models page's note)."""
from __future__ import annotations

import pytest

from studio.views.model_lab_view import input_note
from training.adapter_guide import VIEW_TURN, guide_for, guide_for_adapter


@pytest.mark.parametrize("adapter", ["ddx-views-r1", "ddx-views-r2", "ddx-views-r3", "ddx-views-debate-R2"])
def test_a_view_member_expects_its_turn_and_the_test_prompt_says_so(adapter: str) -> None:
    guide = guide_for_adapter(adapter)
    assert guide is not None and guide.input_kind == VIEW_TURN and "nothing else of the case" in guide.expected_input
    note = input_note(f"smollm2-135m+lora:{adapter}", "A 60-year-old man with crushing chest pain.")
    assert note is not None and note.startswith(f"smollm2-135m+lora:{adapter} answers one member's turn")


def test_each_stage_one_member_names_its_view() -> None:
    views = {name: guide_for(name) for name in ("ddx-views-r1", "ddx-views-r2", "ddx-views-r3")}
    assert all(g is not None for g in views.values())
    assert "(pain-location)" in views["ddx-views-r1"].expected_input  # type: ignore[union-attr]
    assert "(history)" in views["ddx-views-r2"].expected_input  # type: ignore[union-attr]
    assert "(pain-character)" in views["ddx-views-r3"].expected_input  # type: ignore[union-attr]
