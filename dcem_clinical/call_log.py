"""A diagnostic agent whose calls go through the runtime's call log and its cache.

The cache key covers the backend, the model's sha256, the agent's mode and generation
options, the purpose (``classify`` or ``cues``) and the full message stack (see
:mod:`runtime.call_log`), so re-running a finished experiment makes zero model calls.
"""
from __future__ import annotations

from typing import Any, Protocol, Sequence

import numpy as np

from common.db import Database
from dcem_clinical.agent import AgentReport, DiagnosticAgent
from runtime.call_log import CallContext, CallLog, CallRecord, cache_key
from runtime.messages import Message

__all__ = ["CallContext", "call_cache_key", "LoggedAgent", "PanelMember", "call_count"]


def call_cache_key(agent: DiagnosticAgent, purpose: str, messages: Sequence[Message]) -> str:
    fields = {"backend": agent.backend.name, "model_sha256": agent.backend.model_sha256, "mode": agent.mode,
              "options": agent.options.to_dict(), "purpose": purpose}
    return cache_key(fields, messages)


def call_count(store: Database, run_id: str | None = None) -> int:
    """Rows in the call log (of one run when given)."""
    return CallLog(store).count(run_id)


def _reason(exc: BaseException) -> str:
    """A short one-line reason for a failed call (type and message, no file contents)."""
    text = " ".join(str(exc).split())[:200]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class PanelMember(Protocol):
    """What a panel asks of a member: a logged LLM agent or a statistical agent."""

    labels: tuple[str, ...]
    last_key: str | None

    def classify(self, case_text: str, note: str | None = None, *,
                 context: CallContext = ...) -> tuple[AgentReport, bool]: ...

    def cues(self, case_text: str, current: str, alternative: str, *,
             context: CallContext = ...) -> tuple[list[str], bool]: ...

    def info(self) -> dict[str, Any]: ...


class LoggedAgent:
    """A :class:`DiagnosticAgent` whose calls go through the log and its cache."""

    def __init__(self, agent: DiagnosticAgent, store: Database) -> None:
        self.agent, self.store = agent, store
        self.labels: tuple[str, ...] = tuple(agent.labels)
        self.log = CallLog(store)
        self.last_key: str | None = None  # cache key of the latest classify / cues call

    def info(self) -> dict[str, Any]:
        """Name, model, backend and model sha256 (what a cell records per agent)."""
        backend = self.agent.backend
        return {"name": self.agent.name, "model": backend.model_id, "backend": backend.name,
                "model_sha256": backend.model_sha256}

    def _record(self, key: str, purpose: str, ctx: CallContext, report: AgentReport,
                parsed: dict[str, Any]) -> None:
        backend = self.agent.backend
        self.log.record(CallRecord(
            key=key, purpose=purpose, backend=backend.name, model=backend.model_id,
            model_sha256=backend.model_sha256, messages=report.messages, options=self.agent.options.to_dict(),
            raw=report.raw, parsed=parsed, probabilities=[float(p) for p in report.probabilities],
            prompt_tokens=report.prompt_tokens, completion_tokens=report.completion_tokens,
            duration_s=report.duration_s, error=report.error), ctx)

    def classify(self, case_text: str, note: str | None = None, *,
                 context: CallContext = CallContext()) -> tuple[AgentReport, bool]:
        """The agent's answer and whether it came from the cache."""
        messages = self.agent.messages(case_text, note)
        key = self.last_key = call_cache_key(self.agent, "classify", messages)
        hit = self.log.lookup(key)
        if hit is not None:
            return AgentReport(int(hit.parsed["label"]), np.asarray(hit.probabilities, dtype=float),
                               tuple(messages), raw=hit.raw, prompt_tokens=hit.prompt_tokens,
                               completion_tokens=hit.completion_tokens, duration_s=hit.duration_s), True
        try:
            report = self.agent.classify(case_text, note)
        except Exception as exc:  # any failure of one call is a failed call, logged as such
            self._record(key, "classify", context, AgentReport(-1, np.zeros(0), tuple(messages), raw="",
                                                               error=f"call failed: {_reason(exc)}"), {})
            raise
        self._record(key, "classify", context, report,
                     {"label": report.label, "label_name": self.agent.labels[report.label]})
        return report, False

    def cues(self, case_text: str, current: str, alternative: str, *,
             context: CallContext = CallContext()) -> tuple[list[str], bool]:
        """Cue list for a DIFFERENTIAL_STEER (cached like classify)."""
        from dcem_clinical.prompts import cue_request

        messages = cue_request((current, alternative), case_text, self.agent.name, self.agent.role)
        key = self.last_key = call_cache_key(self.agent, "cues", messages)
        hit = self.log.lookup(key)
        if hit is not None:
            return list(hit.parsed["cues"]), True
        cues, report = self.agent.cues(case_text, current, alternative)
        self._record(key, "cues", context, report, {"cues": cues})
        return cues, False
