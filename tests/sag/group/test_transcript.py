"""Reading rationales: citations, stances, flags and the NEW mark, never failing."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sag.group.config import AgentRole
from sag.group.transcript import read_rationale


def test_citations_known_and_unknown() -> None:
    got = read_rationale("B. The claim is SUPPORTED by [mlp-3] and [pmq-123], not by [ddx-made-up].",
                         AgentRole.KNOWLEDGE, {"mlp-3", "pmq-123"})
    assert got.citations == ("mlp-3", "pmq-123") and got.unknown_citations == ("ddx-made-up",)
    assert got.stances == ("supported",)
    assert got.note == "cites passages not in the pool: ddx-made-up"


def test_flags_and_new_mark() -> None:
    text = "A\nFLAG: R2 claims a dose without evidence\n - flag: inconsistent with [mlp-1]\nNEW: No"
    got = read_rationale(text, AgentRole.SAFETY, {"mlp-1"})
    assert got.flags == ("R2 claims a dose without evidence", "inconsistent with [mlp-1]")
    assert got.new_substance is False
    judge = read_rationale("C. R1 is right. NEW: yes", AgentRole.JUDGE, set())
    assert judge.new_substance is True and judge.note is None


def test_missing_parts_are_noted_not_raised() -> None:
    assert read_rationale("", AgentRole.REASONING, set()).note == "empty rationale"
    assert read_rationale("B because.", AgentRole.KNOWLEDGE, set()).note == "no citation of a passage in the pool"
    assert read_rationale("B.", AgentRole.JUDGE, set()).note == "no NEW: yes/no mark"
    assert read_rationale(None, AgentRole.JUDGE, set()).note == "empty rationale"  # type: ignore[arg-type]


@settings(max_examples=200, deadline=None)
@given(st.text(), st.sampled_from(list(AgentRole)))
def test_any_text_is_read_without_error(text: str, role: AgentRole) -> None:
    got = read_rationale(text, role, {"mlp-1"})
    assert all(len(f) <= 200 for f in got.flags)
    assert set(got.citations) <= {"mlp-1"}
