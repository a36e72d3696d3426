"""Language-model agents as a mediated panel (the :class:`dcem.deliberation.Agents` protocol).

Each round every agent classifies every case and reports its probability vector
(``soft_reports``).  From round 2 on, an agent's prompt carries a mediator note:

- after DIFFERENTIAL_STEER aimed at it, the steer note with the distinguishing cues the
  agent itself listed in a separate call (Appendix G);
- otherwise the CONTINUE note naming its own previous top two labels.

A call that fails (the model cannot be reached) is recorded as an error and the agent
reports the uniform vector for that round, so one bad call never stops a run.
"""
from __future__ import annotations

import logging
from typing import Sequence

import numpy as np

from dcem.deliberation import SteerRequest
from sag.backends import BackendError
from sag.call_log import CallContext, LoggedAgent
from sag.prompts import continue_note, steer_note

__all__ = ["LlmPanel"]

log = logging.getLogger(__name__)


class LlmPanel:
    """A panel of logged LLM agents deliberating over N case texts."""

    soft_reports = True

    def __init__(self, agents: Sequence[LoggedAgent], case_ids: Sequence[str], texts: Sequence[str], *,
                 run_id: str | None = None) -> None:
        if len(case_ids) != len(texts):
            raise ValueError("one text per case id is required")
        self.agents, self.case_ids, self.texts, self.run_id = list(agents), list(case_ids), list(texts), run_id
        self.labels = self.agents[0].agent.labels
        n, a = len(texts), len(self.agents)
        self._notes: list[list[str | None]] = [[None] * a for _ in range(n)]
        self._last = np.full((n, a, len(self.labels)), 1.0 / len(self.labels))
        self.errors = 0
        self.calls = 0
        self.cache_hits = 0
        self.cues: dict[tuple[int, int], list[str]] = {}

    @property
    def n_agents(self) -> int:
        return len(self.agents)

    @property
    def n_cases(self) -> int:
        return len(self.texts)

    def _context(self, case: int, agent: int, t: int) -> CallContext:
        return CallContext(self.run_id, self.case_ids[case], agent, t)

    def report(self, t: int) -> np.ndarray:
        out = np.empty_like(self._last)
        for case, text in enumerate(self.texts):
            for a, agent in enumerate(self.agents):
                note = self._notes[case][a] if t > 1 else None
                self.calls += 1
                try:
                    rep, cached = agent.classify(text, note, context=self._context(case, a, t))
                except BackendError as exc:
                    log.warning("case %s agent %d round %d failed: %s", self.case_ids[case], a, t, exc)
                    self.errors += 1
                    out[case, a] = 1.0 / len(self.labels)
                    continue
                self.cache_hits += int(cached)
                self.errors += int(rep.error is not None)
                out[case, a] = rep.probabilities
        self._last = out
        for case in range(self.n_cases):  # default note for the next round: look again
            for a in range(self.n_agents):
                top = np.argsort(-out[case, a], kind="stable")[:2]
                self._notes[case][a] = continue_note(self.labels[top[0]], self.labels[top[1]])
        return out

    def steer(self, request: SteerRequest) -> list[tuple[str, ...]]:
        names = []
        for case, a, cur, alt in zip(request.cases.tolist(), request.agent.tolist(), request.current.tolist(),
                                     request.alternative.tolist()):
            current, alternative = self.labels[cur], self.labels[alt]
            try:
                cues, _ = self.agents[a].cues(self.texts[case], current, alternative,
                                              context=self._context(case, a, request.t))
            except BackendError as exc:
                log.warning("cue call failed for case %s: %s", self.case_ids[case], exc)
                self.errors += 1
                cues = []
            self.cues[(case, request.t)] = cues
            self._notes[case][a] = steer_note(current, alternative, cues)
            names.append(tuple(cues))
        return names
