"""The stop rule and the final-answer rule on hand-made messages."""
from __future__ import annotations

from sag.group.config import AgentRole
from sag.debate.decide import final_answer, plurality, refusal_score, stop_check
from sag.group.transcript import REFUSE, GroupMessage, RationaleReading

LETTERS = ("A", "B", "C", "D")


def msg(agent: str, answer: str, *, round_: int = 1, refuse: float | None = None, flags: tuple[str, ...] = (),
        cites: tuple[str, ...] = (), dist: tuple[float, ...] | None = None) -> GroupMessage:
    role = {"R": AgentRole.REASONING, "K": AgentRole.KNOWLEDGE, "S": AgentRole.SAFETY, "J": AgentRole.JUDGE}[agent[0]]
    letter = answer if answer in LETTERS else "A"
    dist = dist or tuple(0.7 if x == letter else 0.1 for x in LETTERS)
    return GroupMessage(round=round_, phase="debate", agent_id=agent, role=role, model="m", answer=answer,
                        distribution=dist, refuse_probability=refuse,
                        reading=RationaleReading(citations=cites, flags=flags))


def test_stop_only_when_nothing_changes() -> None:
    before = [msg("R1", "B", round_=1), msg("J1", "B", round_=1, cites=("mlp-1",))]
    same = [msg("R1", "B", round_=2), msg("J1", "B", round_=2, cites=("mlp-1",))]
    assert stop_check(before, same, before).stop
    changed = [msg("R1", "C", round_=2), msg("J1", "B", round_=2)]
    check = stop_check(before, changed, before)
    assert not check.stop and "R1" in check.reason
    flagged = [msg("R1", "B", round_=2), msg("J1", "B", round_=2), msg("S1", "B", round_=2, flags=("dose",))]
    assert not stop_check(before, flagged, before).stop
    cited = [msg("R1", "B", round_=2), msg("J1", "B", round_=2, cites=("mlp-9",))]
    assert "mlp-9" in stop_check(before, cited, before).reason
    # knowledge agents' answers do not count when the reasoning agents propose
    assert stop_check(before + [msg("K1", "A")], same + [msg("K1", "D", round_=2)], before).stop


def test_judges_agree_or_plurality_breaks_ties_to_the_first_judge() -> None:
    agree = [msg("R1", "A"), msg("R2", "A"), msg("J1", "C"), msg("J2", "C")]
    assert final_answer(agree, LETTERS).answer == "C"
    split = [msg("R1", "A"), msg("R2", "B"), msg("J1", "B"), msg("J2", "A")]
    result = final_answer(split, LETTERS)
    assert result.answer == "B" and "plurality" in result.rule  # 2-2 tie -> first judge
    majority = [msg("R1", "A"), msg("R2", "A"), msg("R3", "A"), msg("J1", "B"), msg("J2", "C")]
    assert final_answer(majority, LETTERS).answer == "A"


def test_refusal_needs_a_safety_vote_and_a_judge() -> None:
    both = [msg("R1", "A"), msg("S1", REFUSE, refuse=0.8), msg("J1", REFUSE, refuse=0.6)]
    assert final_answer(both, LETTERS).answer == REFUSE
    judge_only = [msg("R1", "A"), msg("S1", "A", refuse=0.1), msg("J1", REFUSE, refuse=0.6)]
    assert final_answer(judge_only, LETTERS).answer == "A"  # the judge's most probable letter
    safety_only = [msg("R1", "B"), msg("S1", REFUSE, refuse=0.9), msg("J1", "B", refuse=0.1)]
    assert final_answer(safety_only, LETTERS).answer == "B"
    assert refusal_score(both) == 0.8 * 0.6
    assert refusal_score([msg("R1", "A")]) == 0.0


def test_plurality_without_judges_uses_probability_mass() -> None:
    votes = [("A", (0.6, 0.4, 0.0, 0.0)), ("B", (0.1, 0.9, 0.0, 0.0))]
    assert plurality(votes, LETTERS) == "B"  # tie 1-1, B has more mass (1.3 vs 0.7)
    assert plurality(votes, LETTERS, first="A") == "A"
    assert plurality([("C", (0.25,) * 4), ("D", (0.25,) * 4)], LETTERS) == "C"
    no_judges = [msg("R1", "A"), msg("R2", "D"), msg("R3", "D")]
    assert final_answer(no_judges, LETTERS).answer == "D"
