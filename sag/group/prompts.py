"""What each agent reads: one shared, append-only transcript and a short role instruction.

Every prompt is the same system text, then one user message made of the group's shared
transcript (the question and options, the evidence as it is found, and every earlier
turn) followed by the agent's own instruction.  The shared part comes first and only
grows, so a backend that keeps the KV state of a prompt prefix evaluates it once for all
agents of a step and, next step, only the new lines (see :mod:`runtime.llama_batch`).

The wording is this project's own; the seed (004) describes the roles, not their prompts.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Sequence

from clinical.questions import QuestionItem
from runtime.messages import Message, Role
from sag.group.config import AgentRole, AgentSpec
from sag.group.transcript import REFUSE, GroupMessage

__all__ = ["SYSTEM_TEXT", "MAX_PASSAGE_WORDS", "MAX_LINE_CHARS", "Transcript", "role_instruction", "turn_messages",
           "challenge_note", "EvidencePassage"]

SYSTEM_TEXT = ("You are one member of a small panel of AI agents working through a multiple-choice medical "
               "question together, for research and teaching. Answer briefly and plainly.")
MAX_PASSAGE_WORDS = 45
MAX_LINE_CHARS = 240

_INSTRUCTIONS = {
    AgentRole.REASONING: ("you are {id}, a reasoning agent. Work out which option is most likely correct and "
                          "say briefly why; point out any mistake in the other agents' arguments."),
    AgentRole.KNOWLEDGE: ("you are {id}, a knowledge agent. Check the claims made so far against the evidence "
                          "passages: call each claim SUPPORTED or CONTRADICTED and cite the passage id in square "
                          "brackets, like [mlp-3]."),
    AgentRole.SAFETY: ("you are {id}, a safety agent. Audit the discussion for claims that are unsafe, unsupported "
                       "by the evidence or inconsistent; write each problem on its own line starting with FLAG:. "
                       "If the question asks for something harmful, reply REFUSE."),
    AgentRole.JUDGE: ("you are {id}, the judge. Weigh the arguments, the evidence and the safety audit and give "
                      "the panel's answer, or REFUSE if the safety audit shows the request is harmful. End with "
                      "NEW: yes if this round brought a substantive new argument, NEW: no otherwise."),
}
_ALONE = ("you are {id}. Answer the question on your own; give the letter of the option you think is correct "
          "and one sentence of reasons.")
_VIEWER = (" You read only {reads} of the case; the other reasoning agents read other parts, so weigh what they "
           "report against what you read.")


@dataclass(frozen=True)
class EvidencePassage:
    """A passage in the evidence pool, as shown to the agents."""

    passage_id: str
    title: str
    text: str
    score: float
    corpus: str
    round: int


def _short(text: str, words: int) -> str:
    parts = text.split()
    return " ".join(parts[:words]) + (" ..." if len(parts) > words else "")


def _line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= MAX_LINE_CHARS else flat[:MAX_LINE_CHARS - 4] + " ..."


@dataclass
class Transcript:
    """The shared part of every prompt of one item; blocks are only ever appended.

    ``views`` (agent id -> what it read, in words) and ``alternatives`` (runner-up letters
    shown) come from a view group's config; without them every line reads as before."""

    item: QuestionItem
    blocks: list[str] = field(default_factory=list)
    views: Mapping[str, str] = field(default_factory=dict)
    alternatives: int = 0

    def __post_init__(self) -> None:
        head = [f"Question: {self.item.question}"]
        if self.item.context:
            head.append(f"Context: {self.item.context}")
        head.append("Options:\n" + "\n".join(f"{letter}. {text}" for letter, text in self.item.options))
        self.blocks.append("\n".join(head))

    def add_evidence(self, passages: Sequence[EvidencePassage], round_: int) -> None:
        if passages:
            lines = [f"[{p.passage_id}] {p.title}: {_short(p.text, MAX_PASSAGE_WORDS)}" for p in passages]
            self.blocks.append(f"Evidence found in round {round_}:\n" + "\n".join(lines))

    def add_turns(self, messages: Sequence[GroupMessage], heading: str) -> None:
        lines = [describe(m, read=self.views.get(m.agent_id), alternatives=self.alternatives)
                 for m in messages if m.phase != "retrieve"]
        if lines:
            self.blocks.append(heading + "\n" + "\n".join(lines))

    def text(self) -> str:
        return "\n\n".join(self.blocks)


def _runners_up(message: GroupMessage, count: int) -> str:
    """``; then C 0.20, A 0.05``: the next ``count`` letters by probability after the answer."""
    dist = message.distribution
    if count <= 0 or not dist:
        return ""
    letters = [chr(ord("A") + k) for k in range(len(dist))]
    order = sorted(range(len(dist)), key=lambda k: (-dist[k], k))
    rest = [k for k in order if letters[k] != message.answer][:count]
    return "; then " + ", ".join(f"{letters[k]} {dist[k]:.2f}" for k in rest) if rest else ""


def describe(message: GroupMessage, *, read: str | None = None, alternatives: int = 0) -> str:
    """One transcript line: who answered what, with how much confidence, and why (and, in a
    view group, what the agent read and its runner-up letters)."""
    who = f"{message.agent_id} ({message.role.value}" + (f", read {read})" if read else ")")
    if message.error:
        return f"- {who}: no answer (model error)."
    if message.answer == REFUSE:
        said = "REFUSE"
    else:
        p = max(message.distribution) if message.distribution else 0.0
        said = f"answer {message.answer} (p={p:.2f}{_runners_up(message, alternatives)})"
    why = _line(message.rationale) if message.rationale.strip() else "(no reasons given)"
    return f"- {who}: {said}. {why}"


def challenge_note(current: str, alternative: str) -> str:
    """The mediator's DIFFERENTIAL_STEER challenge, in the agent's instruction (D-CEM variant)."""
    return (f"The mediator asks you to re-examine your answer {current}: what in the question and the evidence "
            f"speaks for option {alternative} instead, and does it change your answer?")


def role_instruction(agent: AgentSpec, *, alone: bool = False, note: str | None = None,
                     read: str | None = None) -> str:
    """The agent's own instruction, placed after the shared transcript (and, for a member
    of a view group, after what it ``read``)."""
    text = (_ALONE if alone else _INSTRUCTIONS[agent.role]).format(id=agent.agent_id)
    if read:
        text += _VIEWER.format(reads=read)
    if note:
        text += " " + note
    refusable = agent.role in (AgentRole.SAFETY, AgentRole.JUDGE) and not alone
    start = "the letter of your answer, or with REFUSE" if refusable else "the letter of your answer"
    return f"Your turn: {text} Start your reply with {start}."


def turn_messages(shared: str, instruction: str, private: str | None = None) -> tuple[Message, ...]:
    """The chat messages of one turn: the system text, then the transcript, what the agent
    alone read (a view group's member), and the instruction.  The shared part comes first,
    so agents of one step still share the prompt's prefix."""
    middle = f"\n\n{private}" if private else ""
    return (Message(Role.SYSTEM, SYSTEM_TEXT), Message(Role.USER, f"{shared}{middle}\n\n{instruction}"))
