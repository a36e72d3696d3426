"""A diagnostic agent whose calls go through the runtime's call log and its cache.

The cache key covers the backend, the model's sha256, the agent's mode and generation
options, the purpose (``classify`` or ``cues``) and the full message stack (see
:mod:`runtime.call_log`), so re-running a finished experiment makes zero model calls.

An agent whose model is served by a fleet of OpenAI-compatible servers
(:attr:`LoggedAgent.fleet`) can send many calls at once: :meth:`LoggedAgent.classify_many`
and :meth:`LoggedAgent.cues_many` look every call up in the log, send the missing ones
concurrently (:func:`runtime.logged_batch.run_logged_in_turn` through the fleet's
``map``) and log them in the caller's thread, with the same answers, rows and cache hits
as :meth:`~LoggedAgent.classify` / :meth:`~LoggedAgent.cues` one after another.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from functools import partial
from typing import Any, Callable, Generic, Protocol, Sequence, TypeVar

import numpy as np

from common.db import Database
from dcem_clinical.agent import CALIBRATED, AgentReport, DiagnosticAgent
from runtime.call_log import CachedCall, CallContext, CallLog, CallRecord, cache_key
from runtime.http_fleet import FleetBackend
from runtime.logged_batch import LoggedCall, LoggedOutcome, run_logged_in_turn
from runtime.messages import Message

__all__ = ["CallContext", "call_cache_key", "LoggedAgent", "PanelMember", "call_count", "Answer", "Mapper"]

T = TypeVar("T")
Mapper = Callable[..., list[Any]]  # mapper(fn, items) == [fn(x) for x in items], in any threads


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


@dataclass(frozen=True)
class Answer(Generic[T]):
    """One call of a batch: its cache key, and its ``value`` (``cached`` when the log
    answered it) or the ``error`` it raised."""

    key: str
    value: T | None = None
    cached: bool = False
    error: BaseException | None = None


def _in_order(fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
    return [fn(x) for x in items]


def _hit_report(hit: CachedCall, messages: Sequence[Message]) -> AgentReport:
    """The report a logged classify reply stands for."""
    return AgentReport(int(hit.parsed["label"]), np.asarray(hit.probabilities, dtype=float), tuple(messages),
                       raw=hit.raw, prompt_tokens=hit.prompt_tokens, completion_tokens=hit.completion_tokens,
                       duration_s=hit.duration_s)


def _answer(key: str, outcome: LoggedOutcome[Any], cached: Callable[[CachedCall], Any],
            fresh: Callable[[Any], Any] = lambda value: value) -> Answer[Any]:
    """An outcome of :func:`run_logged_in_turn` as the answer one call would give."""
    if outcome.cached is not None:
        return Answer(key, cached(outcome.cached), cached=True)
    if outcome.error is not None:
        return Answer(key, error=outcome.error)
    return Answer(key, fresh(outcome.value))


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
        self._fit_lock = threading.Lock()  # classify_many's threads fit a calibration once

    def info(self) -> dict[str, Any]:
        """Name, model, backend and model sha256 (what a cell records per agent)."""
        backend = self.agent.backend
        return {"name": self.agent.name, "model": backend.model_id, "backend": backend.name,
                "model_sha256": backend.model_sha256}

    @property
    def fleet(self) -> FleetBackend | None:
        """The server fleet serving the agent's model, if it is one (its calls can then be
        sent together: :meth:`classify_many`, :meth:`cues_many`)."""
        backend = self.agent.backend
        return backend if isinstance(backend, FleetBackend) else None

    def _parsed(self, report: AgentReport, parsed: dict[str, Any]) -> dict[str, Any]:
        """The parsed reply a row keeps (a subclass may add what the report carries)."""
        return parsed

    def _row(self, key: str, purpose: str, report: AgentReport, parsed: dict[str, Any]) -> CallRecord:
        backend = self.agent.backend
        return CallRecord(
            key=key, purpose=purpose, backend=backend.name, model=backend.model_id,
            model_sha256=backend.model_sha256, messages=report.messages, options=self.agent.options.to_dict(),
            raw=report.raw, parsed=self._parsed(report, parsed),
            probabilities=[float(p) for p in report.probabilities], prompt_tokens=report.prompt_tokens,
            completion_tokens=report.completion_tokens, duration_s=report.duration_s, error=report.error)

    def _record(self, key: str, purpose: str, ctx: CallContext, report: AgentReport,
                parsed: dict[str, Any]) -> None:
        self.log.record(self._row(key, purpose, report, parsed), ctx)

    def _classify_row(self, key: str, messages: Sequence[Message], report: AgentReport | None,
                      exc: BaseException | None) -> CallRecord:
        """The row of a classify call: its report, or the failure it raised."""
        if report is None:
            return self._row(key, "classify", AgentReport(-1, np.zeros(0), tuple(messages), raw="",
                                                          error=f"call failed: {_reason(exc)}"), {})
        return self._row(key, "classify", report, {"label": report.label,
                                                   "label_name": self.agent.labels[report.label]})

    def classify(self, case_text: str, note: str | None = None, *,
                 context: CallContext = CallContext()) -> tuple[AgentReport, bool]:
        """The agent's answer and whether it came from the cache."""
        messages = self.agent.messages(case_text, note)
        key = self.last_key = call_cache_key(self.agent, "classify", messages)
        hit = self.log.lookup(key)
        if hit is not None:
            return _hit_report(hit, messages), True
        try:
            report = self.agent.classify(case_text, note)
        except Exception as exc:  # any failure of one call is a failed call, logged as such
            self.log.record(self._classify_row(key, messages, None, exc), context)
            raise
        self.log.record(self._classify_row(key, messages, report, None), context)
        return report, False

    def _fresh(self, case_text: str, note: str | None) -> AgentReport:
        """A model call of :meth:`classify_many` (in a worker thread); the calibrated
        mode's content-free distribution, when still missing, is fitted by one thread."""
        with self._fit_lock:
            if self.agent.mode == CALIBRATED and self.agent.content_free is None:
                self.agent.fit_content_free()
        return self.agent.classify(case_text, note)

    def classify_many(self, items: Sequence[tuple[str, str | None, CallContext]],
                      mapper: Mapper | None = None) -> list[Answer[AgentReport]]:
        """:meth:`classify` of every ``(case_text, note, context)``, in order: the calls
        the log cannot answer are sent through ``mapper`` (default: the fleet's ``map``,
        else one after another) and logged in this thread.  Answers, rows and cache hits
        are those of :meth:`classify` called item by item; a failed call is an
        :class:`Answer` with its ``error`` (logged as failed), not an exception."""
        messages = [self.agent.messages(text, note) for text, note, _ in items]
        keys = [call_cache_key(self.agent, "classify", m) for m in messages]
        calls = [LoggedCall(key, partial(self._fresh, text, note), partial(self._classify_row, key, msgs), ctx)
                 for key, msgs, (text, note, ctx) in zip(keys, messages, items)]
        outcomes = run_logged_in_turn(self.log, calls, self._mapper(mapper))
        self.last_key = keys[-1] if keys else self.last_key
        return [_answer(key, out, partial(_hit_report, messages=msgs))
                for key, msgs, out in zip(keys, messages, outcomes)]

    def _mapper(self, mapper: Mapper | None) -> Mapper:
        if mapper is not None:
            return mapper
        fleet = self.fleet
        return fleet.map if fleet is not None else _in_order

    def _cue_messages(self, case_text: str, current: str, alternative: str) -> list[Message]:
        return self.agent.cue_messages(case_text, current, alternative)  # the messages the agent sends

    def _cue_row(self, key: str, result: tuple[list[str], AgentReport] | None,
                 exc: BaseException | None) -> CallRecord | None:
        """The row of a cue call; a failed cue call is not logged."""
        if result is None:
            return None
        cues, report = result
        return self._row(key, "cues", report, {"cues": cues})

    def cues(self, case_text: str, current: str, alternative: str, *,
             context: CallContext = CallContext()) -> tuple[list[str], bool]:
        """Cue list for a DIFFERENTIAL_STEER (cached like classify)."""
        messages = self._cue_messages(case_text, current, alternative)
        key = self.last_key = call_cache_key(self.agent, "cues", messages)
        hit = self.log.lookup(key)
        if hit is not None:
            return list(hit.parsed["cues"]), True
        cues, report = self.agent.cues(case_text, current, alternative)
        self._record(key, "cues", context, report, {"cues": cues})
        return cues, False

    def cues_many(self, items: Sequence[tuple[str, str, str, CallContext]],
                  mapper: Mapper | None = None) -> list[Answer[list[str]]]:
        """:meth:`cues` of every ``(case_text, current, alternative, context)``, sent as
        :meth:`classify_many` sends its calls; a failed call is an :class:`Answer` with
        its ``error`` and, as with :meth:`cues`, no row."""
        keys = [call_cache_key(self.agent, "cues", self._cue_messages(text, cur, alt)) for text, cur, alt, _ in items]
        calls = [LoggedCall(key, partial(self.agent.cues, text, cur, alt), partial(self._cue_row, key), ctx)
                 for key, (text, cur, alt, ctx) in zip(keys, items)]
        outcomes = run_logged_in_turn(self.log, calls, self._mapper(mapper))
        self.last_key = keys[-1] if keys else self.last_key
        return [_answer(key, out, lambda hit: list(hit.parsed["cues"]), lambda fresh: fresh[0])
                for key, out in zip(keys, outcomes)]
