"""Language-model agents as a mediated panel (the :class:`dcem.core.deliberation.Agents` protocol).

Each round every agent classifies every case and reports its probability vector
(``soft_reports``).  From round 2 on, an agent's prompt carries a mediator note:

- after DIFFERENTIAL_STEER aimed at it, the steer note with the distinguishing cues the
  agent itself listed in a separate call (Appendix G);
- otherwise the CONTINUE note naming its own previous top two labels.

:class:`FreeTalkPanel` is the unmediated baseline: from round 2 on each agent is told the
other agents' previous answers, and nothing else (with more than two agents, each answer
with the name of the agent who gave it).

A member may be a logged LLM agent (:class:`dcem_clinical.call_log.LoggedAgent`) or a
statistical agent (:class:`dcem_clinical.stat_agent.StatAgent`), which does not read its
notes' words.  A responsive statistical member (one with a dialogue) hears instead, from
round 2 on, the other members' previous answers, and a challenge aimed at it moves its
answer by :func:`dcem_clinical.stat_dialogue.challenge_shift` toward the other member
with the lowest current agent risk; the panel keeps that adjustment per case.
Members answer agent by agent, each case in turn.  An LLM agent whose model is served by
a fleet of OpenAI-compatible servers sends its cases of a round (and its cue calls of a
steer) together (:meth:`~dcem_clinical.call_log.LoggedAgent.classify_many`, up to the
fleet's concurrency at once); its turns are kept exactly as one after another would keep
them.  Every other member (in-process llama.cpp, statistical) is asked one call after
another, in that order.

A call that fails for any reason (the model cannot be reached, the case does not fit the
context, the server's reply is malformed, the model's numbers are unusable) is recorded
as an error and the agent reports the uniform vector for that round, so one bad
call never stops a run.  Every turn (note, reply, label, vector, error, cache hit) is kept
in :attr:`LlmPanel.turns` for the store.
"""
from __future__ import annotations

import logging
from typing import Any, Mapping, Sequence, TypeGuard

import numpy as np

from dcem.core.deliberation import SteerRequest
from dcem_clinical.call_log import Answer, CallContext, LoggedAgent, PanelMember, _reason
from dcem_clinical.prompts import continue_note, peer_note, steer_note
from dcem_clinical.stat_agent import StatAgent, StatTurn

__all__ = ["LlmPanel", "FreeTalkPanel", "named_peer_note"]

log = logging.getLogger(__name__)


class LlmPanel:
    """A panel of logged LLM agents deliberating over N case texts."""

    soft_reports = True

    def __init__(self, agents: Sequence[PanelMember], case_ids: Sequence[str], texts: Sequence[str], *,
                 run_id: str | None = None, progress: Any = None,
                 member_texts: Mapping[int, Sequence[str]] | None = None) -> None:
        if len(case_ids) != len(texts):
            raise ValueError("one text per case id is required")
        self.member_texts = {a: list(t) for a, t in (member_texts or {}).items()}  # members with a view
        if any(len(t) != len(texts) for t in self.member_texts.values()):
            raise ValueError("a member's own texts need one text per case")
        self.agents, self.case_ids, self.texts, self.run_id = list(agents), list(case_ids), list(texts), run_id
        self.labels = self.agents[0].labels
        n, a = len(texts), len(self.agents)
        self._notes: list[list[str | None]] = [[None] * a for _ in range(n)]
        self._last = np.full((n, a, len(self.labels)), 1.0 / len(self.labels))
        self.errors = 0
        self.calls = 0
        self.cache_hits = 0
        self.cues: dict[tuple[int, int], list[str]] = {}
        self.turns: list[dict[str, Any]] = []
        self.progress = progress  # called with no argument after every agent turn (or skipped turn)
        self._retired = np.zeros(n, dtype=bool)  # decided cases, asked nothing more (stop when decided)
        self._adjust: dict[tuple[int, int], np.ndarray] = {}  # (case, agent) -> a statistical member's shift

    @property
    def n_agents(self) -> int:
        return len(self.agents)

    def text(self, case: int, agent: int) -> str:
        """The case text agent ``agent`` reads: its view of the case, or the whole case."""
        own = self.member_texts.get(agent)
        return own[case] if own is not None else self.texts[case]

    @property
    def n_cases(self) -> int:
        return len(self.texts)

    def _context(self, case: int, agent: int, t: int) -> CallContext:
        return CallContext(self.run_id, self.case_ids[case], agent, t)

    def _stat_turn(self, case: int, a: int, t: int) -> StatTurn:
        """What a responsive statistical member hears: the others' previous answers, its shift."""
        peers = tuple(int(np.argmax(self._last[case, b])) for b in range(self.n_agents) if b != a) if t > 1 else ()
        shift = self._adjust.get((case, a))
        return StatTurn(peers, tuple(float(v) for v in shift) if shift is not None else ())

    def _turn(self, case: int, a: int, t: int, note: str | None) -> np.ndarray:
        logged = self.agents[a]
        try:
            if _responsive(logged):
                result = logged.classify(self.text(case, a), note, context=self._context(case, a, t),
                                         turn=self._stat_turn(case, a, t))
            else:
                result = logged.classify(self.text(case, a), note, context=self._context(case, a, t))
        except Exception as exc:  # noqa: BLE001 -- one bad call never stops a run
            return self._keep(case, a, t, note, Answer(logged.last_key or "", error=exc))
        return self._keep(case, a, t, note, Answer(logged.last_key or "", result[0], cached=result[1]))

    def _keep(self, case: int, a: int, t: int, note: str | None, answer: Answer[Any]) -> np.ndarray:
        """Count and keep one agent turn (a failed call: the uniform vector); its vector."""
        turn: dict[str, Any] = {"case": case, "round": t, "agent": a, "note": note}
        self.calls += 1
        rep = answer.value
        if answer.error is not None or rep is None:
            log.warning("case %s agent %d round %d failed: %s", self.case_ids[case], a, t, answer.error)
            self.errors += 1
            probs = np.full(len(self.labels), 1.0 / len(self.labels))
            turn.update(reply=None, label=None, probabilities=probs, error=f"call failed: {_reason(answer.error)}",
                        cached=False, cache_key=answer.key or None)
        else:
            self.cache_hits += int(answer.cached)
            self.errors += int(rep.error is not None)
            probs = rep.probabilities
            turn.update(reply=rep.raw, label=rep.label, probabilities=probs, error=rep.error,
                        cached=answer.cached, cache_key=answer.key or None)
        self.turns.append(turn)
        if self.progress is not None:
            self.progress()
        return probs

    def retire(self, cases: np.ndarray) -> None:
        """Ask nothing more for these cases: they report their last answers again, with no
        turn recorded (the mediator stopped them, see ``deliberate(stop_when_decided=True)``)."""
        self._retired[np.asarray(cases, dtype=np.int64)] = True

    def report(self, t: int) -> np.ndarray:
        out = self._last.copy()  # a retired case keeps its last answers
        live = np.flatnonzero(~self._retired).tolist()
        # agent by agent: consecutive prompts of one agent share its system prompt and the
        # category list, which the backend keeps in its KV cache (same scores either way);
        # an agent on a server fleet sends its cases of the round together
        for a, member in enumerate(self.agents):
            notes = [self._notes[case][a] if t > 1 else None for case in range(self.n_cases)]
            if _batches(member):
                items = [(self.text(case, a), notes[case], self._context(case, a, t)) for case in live]
                for case, answer in zip(live, member.classify_many(items)):
                    out[case, a] = self._keep(case, a, t, notes[case], answer)
            else:
                for case in live:
                    out[case, a] = self._turn(case, a, t, notes[case])
            self._skipped(self.n_cases - len(live))
        self._last = out
        self._next_notes(out)
        return out

    def _skipped(self, turns: int) -> None:
        """Count skipped turns of retired cases on the progress bar (its total counts every turn)."""
        if self.progress is not None:
            for _ in range(turns):
                self.progress()

    def _next_notes(self, out: np.ndarray) -> None:
        """Default note for the next round: look again (CONTINUE)."""
        for case in range(self.n_cases):
            for a in range(self.n_agents):
                top = np.argsort(-out[case, a], kind="stable")[:2]
                self._notes[case][a] = continue_note(self.labels[top[0]], self.labels[top[1]])

    @property
    def error_rate(self) -> float:
        """Share of agent turns whose reply was unusable or whose call failed."""
        return self.errors / self.calls if self.calls else 0.0

    def steer(self, request: SteerRequest) -> list[tuple[str, ...]]:
        items = list(zip(request.cases.tolist(), request.agent.tolist(), request.current.tolist(),
                         request.alternative.tolist()))
        sent = self._batched_cues(items, request.t)
        names = []
        for i, (case, a, cur, alt) in enumerate(items):
            self._challenge(case, a, cur, alt, np.asarray(request.agent_risk[i], dtype=float))
            current, alternative = self.labels[cur], self.labels[alt]
            answer = sent.get(i) or self._cue(case, a, current, alternative, request.t)
            if answer.error is not None:
                log.warning("cue call failed for case %s: %s", self.case_ids[case], answer.error)
            cues = list(answer.value or []) if answer.error is None else []
            self.cues[(case, request.t)] = cues
            self._notes[case][a] = steer_note(current, alternative, cues)
            names.append(tuple(cues))
        return names

    def _challenge(self, case: int, a: int, current: int, alternative: int, risk: np.ndarray) -> None:
        """A responsive statistical member's answer to a challenge: the shift toward the
        other member with the lowest current agent risk (LLM members read the steer note)."""
        member = self.agents[a]
        if not _responsive(member) or self.n_agents < 2:
            return
        others = [b for b in range(self.n_agents) if b != a]
        ref = min(others, key=lambda b: (float(risk[b]), b))
        shift = member.challenge_shift(self._last[case, a], self._last[case, ref], current, alternative)
        self._adjust[(case, a)] = self._adjust.get((case, a), np.zeros(len(self.labels))) + shift

    def _cue(self, case: int, a: int, current: str, alternative: str, t: int) -> Answer[list[str]]:
        """One cue call (members without a fleet, in request order)."""
        try:
            cues, _ = self.agents[a].cues(self.text(case, a), current, alternative, context=self._context(case, a, t))
        except Exception as exc:  # noqa: BLE001 -- one bad call never stops a run
            return Answer("", error=exc)
        return Answer("", cues)

    def _batched_cues(self, items: Sequence[tuple[int, int, int, int]], t: int) -> dict[int, Answer[list[str]]]:
        """The cue calls of the agents on a server fleet, each agent's sent together;
        by position in ``items``."""
        out: dict[int, Answer[list[str]]] = {}
        for a in dict.fromkeys(a for _, a, _, _ in items):
            member = self.agents[a]
            if not _batches(member):
                continue
            mine = [i for i, item in enumerate(items) if item[1] == a]
            asks = [(self.text(items[i][0], a), self.labels[items[i][2]], self.labels[items[i][3]],
                     self._context(items[i][0], a, t)) for i in mine]
            out.update(zip(mine, member.cues_many(asks)))
        return out


def _batches(member: PanelMember) -> TypeGuard[LoggedAgent]:
    """Whether a member's calls of a round are sent together: an LLM agent on a server
    fleet (any other member, in-process llama.cpp or statistical, answers one call
    after another, in the order the panel asks)."""
    return isinstance(member, LoggedAgent) and member.fleet is not None


def _responsive(member: PanelMember) -> TypeGuard[StatAgent]:
    """Whether a member is a statistical agent that hears peers and challenges."""
    return isinstance(member, StatAgent) and member.responsive


def named_peer_note(named: Sequence[tuple[str, str]]) -> str:
    """Free discussion with more than two agents: every other agent's answer, by name."""
    said = "; ".join(f"{name}: {answer}" for name, answer in named) or "nothing"
    return (f"The other agents answered last round: {said}. Think about whether that changes your view, "
            "then give your own answer.")


class FreeTalkPanel(LlmPanel):
    """Free discussion: each agent sees the others' previous answers (no mediator)."""

    def _next_notes(self, out: np.ndarray) -> None:
        names = [str(m.info()["name"]) for m in self.agents]
        for case in range(self.n_cases):
            answers = [self.labels[int(np.argmax(out[case, b]))] for b in range(self.n_agents)]
            for a in range(self.n_agents):
                others = [(names[b], x) for b, x in enumerate(answers) if b != a]
                # two agents: the two-agent wording, unchanged (its cached prompts stay valid)
                self._notes[case][a] = (peer_note([x for _, x in others]) if self.n_agents == 2
                                        else named_peer_note(others))

    def rounds(self, t_max: int) -> np.ndarray:
        """Play ``t_max`` rounds; returns the probability reports (N, T, A, K)."""
        return np.stack([self.report(t) for t in range(1, t_max + 1)], axis=1)
