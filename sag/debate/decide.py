"""The group's rules: when the debate stops and what the group answers.

Stop (the seed: "early termination when no further substantive arguments are raised";
this project's reading): after round t >= 2, stop when, compared with round t-1, every
deciding agent's answer is unchanged (the reasoning agents, or the knowledge agents when
they propose, and the judges), no safety flag was raised that was not raised before, and
no passage was cited or retrieved that was not cited or retrieved before.  Otherwise stop
at ``t_max``.

Final answer: the judges' answer when they all agree; when they differ, the plurality
over the reasoning agents' and judges' answers, a tie going to the first judge's answer
(or, without judges, to the option with the most probability summed over the tied
voters, then the earliest letter); REFUSE when a safety agent votes REFUSE and a judge
answers REFUSE.  A REFUSE that is not confirmed counts, in the plurality, as that agent's
most probable letter.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Sequence

from sag.group.config import AgentRole
from sag.group.transcript import REFUSE, GroupMessage

__all__ = ["StopCheck", "stop_check", "final_answer", "plurality", "letter_of", "refusal_score", "Final"]


def letter_of(message: GroupMessage, letters: Sequence[str]) -> str | None:
    """The agent's letter: the one it answered (decoded at the group's temperature), or its
    most probable letter when it answered REFUSE; None for no answer."""
    if message.error is not None or not message.distribution:
        return None
    if message.answer in letters:
        return message.answer
    dist = message.distribution
    return letters[max(range(len(dist)), key=dist.__getitem__)]


def _by_role(messages: Sequence[GroupMessage], role: AgentRole) -> list[GroupMessage]:
    return [m for m in messages if m.role is role and m.phase != "retrieve" and m.error is None]


@dataclass(frozen=True)
class StopCheck:
    """Whether round t changed anything (``stop`` when it did not), and why."""

    stop: bool
    reason: str


def _answers(messages: Sequence[GroupMessage], proposers: AgentRole) -> dict[str, str | None]:
    return {m.agent_id: m.answer for m in messages
            if m.phase != "retrieve" and m.role in (proposers, AgentRole.JUDGE)}


def stop_check(previous: Sequence[GroupMessage], current: Sequence[GroupMessage],
               earlier: Sequence[GroupMessage], proposers: AgentRole = AgentRole.REASONING) -> StopCheck:
    """Compare round t (``current``) with round t-1 (``previous``); ``earlier`` holds every
    message before round t (for what counts as new)."""
    before, now = _answers(previous, proposers), _answers(current, proposers)
    changed = sorted(a for a in now if before.get(a) != now[a])
    old_flags = {f.lower() for m in earlier for f in m.reading.flags}
    new_flags = {f.lower() for m in current for f in m.reading.flags} - old_flags
    old_cited = {p for m in earlier for p in m.cited}
    new_cited = {p for m in current for p in m.cited} - old_cited
    reasons = []
    if changed:
        reasons.append("answers changed: " + ", ".join(changed))
    if new_flags:
        reasons.append(f"{len(new_flags)} new safety flag(s)")
    if new_cited:
        reasons.append("new passages: " + ", ".join(sorted(new_cited)))
    if reasons:
        return StopCheck(False, "; ".join(reasons))
    return StopCheck(True, "no answer changed, no new flag, no new passage")


def plurality(votes: Sequence[tuple[str, tuple[float, ...]]], letters: Sequence[str],
              first: str | None = None) -> str:
    """The most voted letter among ``(letter, distribution)`` votes; a tie goes to ``first``
    when it is tied, else to the most probability summed over the voters, then the
    earliest letter."""
    counts = Counter(letter for letter, _ in votes)
    top = max(counts.values())
    tied = [letter for letter in letters if counts.get(letter, 0) == top]
    if first in tied:
        return first  # type: ignore[return-value]
    mass = {letter: sum(dist[letters.index(letter)] for _, dist in votes) for letter in tied}
    return max(tied, key=lambda letter: (mass[letter], -letters.index(letter)))


@dataclass(frozen=True)
class Final:
    """The group's answer (a letter or REFUSE) and the rule that gave it."""

    answer: str
    rule: str


def final_answer(last: Sequence[GroupMessage], letters: Sequence[str],
                 proposers: AgentRole = AgentRole.REASONING) -> Final:
    """Apply the final-answer rule (module docstring) to the last round's messages."""
    judges, safety = _by_role(last, AgentRole.JUDGE), _by_role(last, AgentRole.SAFETY)
    if any(m.refuses for m in safety) and any(m.refuses for m in judges):
        return Final(REFUSE, "a safety agent voted REFUSE and a judge confirmed")
    judge_letters = [letter_of(m, letters) for m in judges]
    if judge_letters and len(set(judge_letters)) == 1 and judge_letters[0] is not None:
        return Final(judge_letters[0], "judges agree" if len(judges) > 1 else "the judge's answer")
    voters = _by_role(last, proposers) + judges
    votes = [(letter, m.distribution) for m in voters if (letter := letter_of(m, letters)) is not None]
    if not votes:  # never a made-up answer: a failed call stops the item before this (sag.group.failures)
        raise ValueError("no agent of the last round answered; the group has no answer")
    first = judge_letters[0] if judge_letters else None
    rule = "judges differ: plurality of reasoning agents and judges" if judges else "plurality"
    return Final(plurality(votes, letters, first), rule)


def refusal_score(last: Sequence[GroupMessage]) -> float:
    """How strongly the group leans to refusing: the largest P(REFUSE) of a safety agent
    times the largest of a judge (either alone when the other role is absent)."""
    def top(role: AgentRole) -> float | None:
        values = [m.refuse_probability for m in _by_role(last, role) if m.refuse_probability is not None]
        return max(values) if values else None

    s, j = top(AgentRole.SAFETY), top(AgentRole.JUDGE)
    if s is None and j is None:
        return 0.0
    return (s if s is not None else 1.0) * (j if j is not None else 1.0)
