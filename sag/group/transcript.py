"""The debate's record: one :class:`GroupMessage` per agent turn, and what a rationale says.

A turn's answer is a probability vector over the item's option letters, read from the
model's next-token scores (scored mode); safety and judge agents are also scored on
REFUSE.  Its rationale is free text, from which this module reads, without ever
failing:

- citations: passage ids in square brackets, e.g. ``[mlp-12]`` (ids not in the evidence
  pool are kept apart as unknown);
- stances: the words SUPPORTED / CONTRADICTED (knowledge agents);
- flags: lines starting with ``FLAG:`` (safety agents);
- new substance: ``NEW: yes`` or ``NEW: no`` (judges).

What could not be read is written in ``parse_note`` (e.g. "no citation"), so an
unparsable rationale is recorded as such and never stops a run.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Collection

from sag.group.config import AgentRole

__all__ = ["REFUSE", "ESCALATE", "GroupMessage", "RationaleReading", "read_rationale", "MAX_FLAG_CHARS"]

REFUSE = "REFUSE"
ESCALATE = "ESCALATE"
MAX_FLAG_CHARS = 200
_CITATION = re.compile(r"\[([A-Za-z]{2,4}-[A-Za-z0-9_.:-]{1,40})\]")
_FLAG = re.compile(r"^\s*[-*]?\s*FLAG\s*:\s*(.+?)\s*$", re.IGNORECASE | re.MULTILINE)
_NEW = re.compile(r"\bNEW\s*:\s*(yes|no)\b", re.IGNORECASE)
_STANCE = re.compile(r"\b(SUPPORTED|CONTRADICTED)\b", re.IGNORECASE)


@dataclass(frozen=True)
class RationaleReading:
    """What was read from one rationale."""

    citations: tuple[str, ...] = ()
    unknown_citations: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()
    stances: tuple[str, ...] = ()
    new_substance: bool | None = None
    note: str | None = None


def _unique(values: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(values))


def read_rationale(text: str, role: AgentRole, known_passages: Collection[str]) -> RationaleReading:
    """Read citations, stances, flags and the NEW mark from a rationale (never raises).

    ``known_passages`` are the ids in the evidence pool; other bracketed ids are kept as
    unknown.  ``note`` lists what the role was asked for and did not give.
    """
    text = text if isinstance(text, str) else ""
    cited = _unique(_CITATION.findall(text))
    citations = tuple(c for c in cited if c in known_passages)
    unknown = tuple(c for c in cited if c not in known_passages)
    flags = _unique([f[:MAX_FLAG_CHARS] for f in _FLAG.findall(text)])
    stances = tuple(s.lower() for s in _STANCE.findall(text))
    marks = _NEW.findall(text)
    new = None if not marks else marks[-1].lower() == "yes"
    missing = []
    if not text.strip():
        missing.append("empty rationale")
    elif role is AgentRole.KNOWLEDGE and not citations:
        missing.append("no citation of a passage in the pool")
    elif role is AgentRole.JUDGE and new is None:
        missing.append("no NEW: yes/no mark")
    if unknown:
        missing.append("cites passages not in the pool: " + ", ".join(unknown))
    return RationaleReading(citations, unknown, flags, stances, new, "; ".join(missing) or None)


@dataclass(frozen=True)
class GroupMessage:
    """One agent turn (or one retrieval) of a debate.

    phase : ``retrieve`` (a knowledge agent's search, no model call), ``propose``
        (round 0 answers), ``debate`` (A_R and A_K), ``audit`` (A_S), ``judge`` (A_J) or
        ``answer`` (the baselines' single turns).
    answer : an option letter, REFUSE, or None for a retrieval.
    distribution : probabilities over the option letters (sums to 1; empty for a retrieval).
    refuse_probability : P(REFUSE) among the letters and REFUSE (safety and judge agents).
    retrieved : ``(passage_id, score)`` of a retrieval.
    note : the mediator's challenge this agent received with its prompt (D-CEM variant).
    call_key : the call log's cache key; cached : answered from the log (no model call).
    """

    round: int
    phase: str
    agent_id: str
    role: AgentRole
    model: str
    answer: str | None = None
    distribution: tuple[float, ...] = ()
    refuse_probability: float | None = None
    rationale: str = ""
    reading: RationaleReading = field(default_factory=RationaleReading)
    retrieved: tuple[tuple[str, float], ...] = ()
    note: str | None = None
    call_key: str | None = None
    cached: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    reused_tokens: int = 0
    duration_s: float = 0.0
    error: str | None = None

    @property
    def cited(self) -> tuple[str, ...]:
        """Passage ids this turn brought into the debate: its citations or its retrieval."""
        return self.reading.citations + tuple(pid for pid, _ in self.retrieved)

    @property
    def refuses(self) -> bool:
        return self.answer == REFUSE
