"""The hybrid debate of seed 004 (Fig. 2), played on one item.

Round 0: each knowledge agent searches its corpus (the hits join the evidence pool) and
each reasoning agent answers alone, seeing only the question.  Round t = 1 .. t_max:
the knowledge agents search again with the options then in the lead; the reasoning and
knowledge agents answer in one flat step, each seeing the question, the evidence and
every earlier turn; then the safety agents audit; then the judges adjudicate.  After each
round a :class:`Controller` decides whether the group goes on: the informal stop of
:mod:`sag.debate.decide` (the default) or the D-CEM mediator (:mod:`sag.debate.mediated`), which may
also send a challenge to one agent with the next round.

Ablations change who plays: without reasoning agents the knowledge agents propose in
round 0 (after retrieving); without knowledge agents nothing is retrieved; without safety
agents or judges their step is skipped.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Collection, Mapping, Protocol, Sequence

from clinical.questions import QuestionItem
from sag.group.config import AgentRole, AgentSpec, GroupConfig
from sag.debate.decide import Final, final_answer, plurality, stop_check
from sag.debate.engine import AgentTurn, TurnEngine
from sag.group.failures import ItemFailed
from sag.group.prompts import EvidencePassage, Transcript, role_instruction, turn_messages
from sag.group.transcript import GroupMessage

__all__ = ["Searcher", "Debate", "RoundDecision", "Controller", "InformalStop", "DebateOutcome", "play_debate",
           "proposer_role", "propose_step", "debate_round", "retrieve_step"]


class Searcher(Protocol):
    """What the debate needs from a retriever (see :class:`sag.retrieval.Retriever`)."""

    def search(self, query: str, *, k: int = 3, exclude_sources: Collection[str] = ()) -> Sequence: ...


def proposer_role(cfg: GroupConfig) -> AgentRole:
    """Who proposes answers: the reasoning agents, or the knowledge agents without them."""
    return AgentRole.REASONING if cfg.role_counts()[0] else AgentRole.KNOWLEDGE


@dataclass
class Debate:
    """The state of one item's debate: the transcript, the evidence pool and every message."""

    item: QuestionItem
    cfg: GroupConfig
    engine: TurnEngine
    retrievers: Mapping[str, Searcher]
    transcript: Transcript = field(init=False)
    pool: dict[str, EvidencePassage] = field(default_factory=dict)
    messages: list[GroupMessage] = field(default_factory=list)
    agents: tuple[AgentSpec, ...] = field(init=False)

    readings: dict[str, str] = field(init=False)

    def __post_init__(self) -> None:
        self.agents = self.cfg.agents()
        self.readings = {}
        if self.cfg.views:  # a view group: the transcript holds no case; each reasoning agent reads its view
            from sag.group.member_views import masked_item, reading_block, reads

            views = {a.agent_id: v for a in self.agents if (v := self.cfg.view_of(a.agent_id)) is not None}
            self.readings = {agent_id: reading_block(self.item, view) for agent_id, view in views.items()}
            self.transcript = Transcript(masked_item(self.item), views={a: reads(v) for a, v in views.items()},
                                         alternatives=self.cfg.alternatives)
        else:
            self.transcript = Transcript(self.item, alternatives=self.cfg.alternatives)

    def of_role(self, role: AgentRole) -> list[tuple[int, AgentSpec]]:
        return [(i, a) for i, a in enumerate(self.agents) if a.role is role]

    def round_messages(self, t: int) -> list[GroupMessage]:
        return [m for m in self.messages if m.round == t]

    def turn(self, index: int, agent: AgentSpec, t: int, phase: str, *, alone: bool = False,
             note: str | None = None, shared: str | None = None) -> AgentTurn:
        """The agent's turn on the current transcript (or on ``shared`` text)."""
        text = self.transcript.text() if shared is None else shared
        instruction = role_instruction(agent, alone=alone, note=note, read=self.transcript.views.get(agent.agent_id))
        return AgentTurn(agent, index, t, phase, turn_messages(text, instruction, self.readings.get(agent.agent_id)),
                         self.item.letters, refusable=agent.role in (AgentRole.SAFETY, AgentRole.JUDGE) and not alone,
                         note=note)

    def play(self, turns: Sequence[AgentTurn]) -> list[GroupMessage]:
        """Play one step; :class:`~sag.group.failures.ItemFailed` when a turn's model call failed
        (the step's messages are kept, so the failure shows where the debate stopped)."""
        got = self.engine.play(turns, self.pool.keys())
        self.messages.extend(got)
        failed = [m for m in got if m.error is not None]
        if failed:
            raise ItemFailed.from_turns(self.item.item_id, failed, self.messages)
        return got


@dataclass(frozen=True)
class RoundDecision:
    """What happens after a round: stop (with the answer when the controller gives one)
    or go on, with challenges for some agents (agent id -> text) in the next round."""

    stop: bool
    reason: str
    answer: str | None = None
    notes: Mapping[str, str] = field(default_factory=dict)


class Controller(Protocol):
    def after_round(self, debate: Debate, t: int) -> RoundDecision: ...


class InformalStop:
    """The seed's early termination, as read in :func:`sag.debate.decide.stop_check`."""

    def after_round(self, debate: Debate, t: int) -> RoundDecision:
        if t < 2:
            return RoundDecision(False, "round 1 has no earlier round to compare with")
        earlier = [m for m in debate.messages if m.round < t]
        check = stop_check(debate.round_messages(t - 1), debate.round_messages(t), earlier,
                           proposer_role(debate.cfg))
        return RoundDecision(check.stop, check.reason)


def _leading_query(debate: Debate, t: int) -> str:
    from sag.retrieval import query_for

    item, letters = debate.item, debate.item.letters
    if t == 0:
        return query_for(item.question, dict(item.options))
    votes = [(m.answer, m.distribution) for m in debate.round_messages(t - 1)
             if m.answer in letters and m.distribution]
    lead = plurality(votes, letters) if votes else letters[0]
    return query_for(item.question, {lead: item.option_text(lead)})


def retrieve_step(debate: Debate, t: int) -> list[GroupMessage]:
    """Each knowledge agent searches its corpus; new passages join the pool and the transcript."""
    found: list[EvidencePassage] = []
    out = []
    query = _leading_query(debate, t)
    for _, agent in debate.of_role(AgentRole.KNOWLEDGE):
        searcher = debate.retrievers.get(agent.corpus or "")
        hits = searcher.search(query, k=debate.cfg.top_k, exclude_sources={debate.item.item_id}) if searcher else []
        for h in hits:
            if h.passage_id not in debate.pool:
                debate.pool[h.passage_id] = EvidencePassage(h.passage_id, h.title, h.text, h.score, h.corpus, t)
                found.append(debate.pool[h.passage_id])
        out.append(GroupMessage(round=t, phase="retrieve", agent_id=agent.agent_id, role=agent.role,
                                model=agent.model, retrieved=tuple((h.passage_id, float(h.score)) for h in hits)))
    debate.messages.extend(out)
    debate.transcript.add_evidence(found, t)
    return out


def propose_step(debate: Debate) -> None:
    """Round 0: retrieval, and the proposers' independent answers."""
    role = proposer_role(debate.cfg)
    question_only = debate.transcript.text()
    retrieve_step(debate, 0)
    shared = question_only if role is AgentRole.REASONING else None
    got = debate.play([debate.turn(i, a, 0, "propose", shared=shared) for i, a in debate.of_role(role)])
    debate.transcript.add_turns(got, "Round 0:")


def debate_round(debate: Debate, t: int, notes: Mapping[str, str], *, flat_only: bool = False,
                 until: str | None = None) -> None:
    """Round t: retrieval, the flat A_R + A_K step, the safety audit, the judges
    (``flat_only``: stop after the flat step, as the D-CEM calibration does; ``until``:
    stop before the step of that phase, ``audit`` or ``judge``, so a trainer can read the
    prompts of that step's agents)."""
    retrieve_step(debate, t)
    flat = [(i, a) for i, a in enumerate(debate.agents) if a.role in (AgentRole.REASONING, AgentRole.KNOWLEDGE)]
    heading = f"Round {t}:"
    steps = ((flat, "debate"), (debate.of_role(AgentRole.SAFETY), "audit"),
             (debate.of_role(AgentRole.JUDGE), "judge"))
    if flat_only:
        steps = steps[:1]
    if until is not None:
        steps = steps[:[phase for _, phase in steps].index(until)]
    for members, phase in steps:
        if members:
            got = debate.play([debate.turn(i, a, t, phase, note=notes.get(a.agent_id)) for i, a in members])
            debate.transcript.add_turns(got, heading)
            heading = f"Round {t}, continued:"


@dataclass(frozen=True)
class DebateOutcome:
    """How one item's debate ended."""

    answer: str
    rule: str
    rounds: int
    stop_reason: str
    messages: tuple[GroupMessage, ...]


def play_debate(item: QuestionItem, cfg: GroupConfig, engine: TurnEngine, retrievers: Mapping[str, Searcher],
                controller: Controller | None = None) -> DebateOutcome:
    """Play round 0 and rounds 1 .. t_max until the controller stops the group."""
    controller = controller or InformalStop()
    debate = Debate(item, cfg, engine, retrievers)
    propose_step(debate)
    notes: Mapping[str, str] = {}
    decision = RoundDecision(False, "")
    t = 0
    for t in range(1, cfg.t_max + 1):
        debate_round(debate, t, notes)
        decision = controller.after_round(debate, t)
        if decision.stop:
            break
        notes = decision.notes
    reason = decision.reason if decision.stop else f"round limit t_max = {cfg.t_max}"
    final = final_answer(debate.round_messages(t), item.letters, proposer_role(cfg))
    if decision.answer is not None and final.answer != "REFUSE":
        final = Final(decision.answer, reason)
    return DebateOutcome(final.answer, final.rule, t, reason, tuple(debate.messages))
