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
statistical agent (:class:`dcem_clinical.stat_agent.StatAgent`), which ignores its notes.

A call that fails for any reason (the model cannot be reached, the case does not fit the
context, the server's reply is malformed, the model's numbers are unusable) is recorded
as an error and the agent reports the uniform vector for that round, so one bad
call never stops a run.  Every turn (note, reply, label, vector, error, cache hit) is kept
in :attr:`LlmPanel.turns` for the store.
"""
from __future__ import annotations

import logging
from typing import Any, Sequence

import numpy as np

from dcem.core.deliberation import SteerRequest
from dcem_clinical.call_log import CallContext, PanelMember, _reason
from dcem_clinical.prompts import continue_note, peer_note, steer_note

__all__ = ["LlmPanel", "FreeTalkPanel", "named_peer_note"]

log = logging.getLogger(__name__)


class LlmPanel:
    """A panel of logged LLM agents deliberating over N case texts."""

    soft_reports = True

    def __init__(self, agents: Sequence[PanelMember], case_ids: Sequence[str], texts: Sequence[str], *,
                 run_id: str | None = None, progress: Any = None) -> None:
        if len(case_ids) != len(texts):
            raise ValueError("one text per case id is required")
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
        self.progress = progress  # called with no argument after every agent turn

    @property
    def n_agents(self) -> int:
        return len(self.agents)

    @property
    def n_cases(self) -> int:
        return len(self.texts)

    def _context(self, case: int, agent: int, t: int) -> CallContext:
        return CallContext(self.run_id, self.case_ids[case], agent, t)

    def _turn(self, case: int, a: int, t: int, note: str | None) -> np.ndarray:
        logged = self.agents[a]
        turn: dict[str, Any] = {"case": case, "round": t, "agent": a, "note": note}
        self.calls += 1
        try:
            rep, cached = logged.classify(self.texts[case], note, context=self._context(case, a, t))
        except Exception as exc:  # noqa: BLE001 -- one bad call never stops a run
            log.warning("case %s agent %d round %d failed: %s", self.case_ids[case], a, t, exc)
            self.errors += 1
            probs = np.full(len(self.labels), 1.0 / len(self.labels))
            turn.update(reply=None, label=None, probabilities=probs, error=f"call failed: {_reason(exc)}",
                        cached=False, cache_key=logged.last_key)
        else:
            self.cache_hits += int(cached)
            self.errors += int(rep.error is not None)
            probs = rep.probabilities
            turn.update(reply=rep.raw, label=rep.label, probabilities=probs, error=rep.error,
                        cached=cached, cache_key=logged.last_key)
        self.turns.append(turn)
        if self.progress is not None:
            self.progress()
        return probs

    def report(self, t: int) -> np.ndarray:
        out = np.empty_like(self._last)
        # agent by agent: consecutive prompts of one agent share its system prompt and the
        # category list, which the backend keeps in its KV cache (same scores either way)
        for a in range(self.n_agents):
            for case in range(self.n_cases):
                out[case, a] = self._turn(case, a, t, self._notes[case][a] if t > 1 else None)
        self._last = out
        self._next_notes(out)
        return out

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
        names = []
        for case, a, cur, alt in zip(request.cases.tolist(), request.agent.tolist(), request.current.tolist(),
                                     request.alternative.tolist()):
            current, alternative = self.labels[cur], self.labels[alt]
            try:
                cues, _ = self.agents[a].cues(self.texts[case], current, alternative,
                                              context=self._context(case, a, request.t))
            except Exception as exc:  # noqa: BLE001 -- one bad call never stops a run
                log.warning("cue call failed for case %s: %s", self.case_ids[case], exc)
                cues = []
            self.cues[(case, request.t)] = cues
            self._notes[case][a] = steer_note(current, alternative, cues)
            names.append(tuple(cues))
        return names


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
