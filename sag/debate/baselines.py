"""The baselines of seed 004's Table 3: a single agent, and a majority vote without interaction.

- ``single``: one agent (the first reasoning backbone) reads the question and answers.
- ``majority``: every agent of the group answers once, with its own role instruction and
  without seeing any other agent; knowledge agents see the passages they retrieved
  themselves.  The answer is the plurality of the agents' letters (ties: most probability
  summed over the tied voters, then the earliest letter); when REFUSE votes outnumber every
  letter the group refuses.
"""
from __future__ import annotations

from collections import Counter
from typing import Mapping

from clinical.questions import QuestionItem
from sag.group.config import AgentRole, GroupConfig
from sag.debate.hybrid import Debate, DebateOutcome, Searcher
from sag.debate.decide import plurality
from sag.debate.engine import TurnEngine
from sag.group.prompts import EvidencePassage, Transcript
from sag.retrieval import query_for
from sag.group.transcript import REFUSE, GroupMessage

__all__ = ["play_single", "play_majority"]


def play_single(item: QuestionItem, cfg: GroupConfig, engine: TurnEngine) -> DebateOutcome:
    """One agent, alone: its most probable letter is the answer."""
    debate = Debate(item, cfg, engine, {})
    (index, agent), = debate.of_role(AgentRole.REASONING)
    (got,) = debate.play([debate.turn(index, agent, 0, "answer", alone=True)])  # a failed call raises ItemFailed
    assert got.answer is not None
    return DebateOutcome(got.answer, "the single agent's answer", 0, "single answer", tuple(debate.messages))


def _own_evidence(debate: Debate, corpus: str | None, retrievers: Mapping[str, Searcher]) -> tuple[str, list]:
    """The question plus the passages one knowledge agent retrieved (its private transcript)."""
    item = debate.item
    searcher = retrievers.get(corpus or "")
    hits = (searcher.search(query_for(item.question, dict(item.options)), k=debate.cfg.top_k,
                            exclude_sources={item.item_id}) if searcher else [])
    own = Transcript(item)
    own.add_evidence([EvidencePassage(h.passage_id, h.title, h.text, h.score, h.corpus, 0) for h in hits], 0)
    for h in hits:
        debate.pool.setdefault(h.passage_id, EvidencePassage(h.passage_id, h.title, h.text, h.score, h.corpus, 0))
    return own.text(), list(hits)


def play_majority(item: QuestionItem, cfg: GroupConfig, engine: TurnEngine,
                  retrievers: Mapping[str, Searcher]) -> DebateOutcome:
    """Every agent answers once, alone, with its role instruction; plurality vote."""
    debate = Debate(item, cfg, engine, retrievers)
    question_only = debate.transcript.text()
    turns = []
    for index, agent in enumerate(debate.agents):
        shared = question_only
        if agent.role is AgentRole.KNOWLEDGE:
            shared, hits = _own_evidence(debate, agent.corpus, retrievers)
            debate.messages.append(GroupMessage(round=0, phase="retrieve", agent_id=agent.agent_id, role=agent.role,
                                                model=agent.model,
                                                retrieved=tuple((h.passage_id, float(h.score)) for h in hits)))
        turns.append(debate.turn(index, agent, 0, "answer", shared=shared))
    got = debate.play(turns)
    votes = [(m.answer, m.distribution) for m in got if m.answer in item.letters]
    refusals = sum(1 for m in got if m.answer == REFUSE)
    top = max(Counter(a for a, _ in votes).values()) if votes else 0
    if refusals > top or not votes:  # every agent answered (a failed call raises ItemFailed)
        return DebateOutcome(REFUSE, "REFUSE outnumbers every letter", 0, "one vote each", tuple(debate.messages))
    return DebateOutcome(plurality(votes, item.letters), "plurality of independent agents", 0, "one vote each",
                         tuple(debate.messages))
