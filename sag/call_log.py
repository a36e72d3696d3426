"""Every agent call logged in DuckDB, and answered from that log when it is repeated.

One append-only table, ``llm_calls`` (migration ``003_llm_calls``), holds one row per agent
call that reached a model: run, case, agent, round, purpose, backend, model and its
sha256, the full message stack, the options, the raw reply, the parsed reply, the
probabilities, token counts, duration, error and time.

The cache key is the sha256 of (backend name, model sha256, agent mode, generation
options including temperature and seed, purpose, the full message stack).  A repeated
call with the same key is answered from the newest error-free row: no model call, no
new row.  So re-running a finished experiment makes zero model calls and an
interrupted one resumes where it stopped.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import json
import uuid
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from dcem.store import Store
from dcem.transactions import run_in_transaction
from sag.llm_agent import AgentReport, DiagnosticAgent
from sag.messages import Message

__all__ = ["CallContext", "call_cache_key", "LoggedAgent", "call_count"]


@dataclass(frozen=True)
class CallContext:
    """Where a call belongs: shown in the log, not part of the cache key."""

    run_id: str | None = None
    case_id: str | None = None
    agent: int | None = None
    round: int | None = None


def _messages_json(messages: Sequence[Message]) -> str:
    return json.dumps([m.to_dict() for m in messages], ensure_ascii=False)


def call_cache_key(agent: DiagnosticAgent, purpose: str, messages: Sequence[Message]) -> str:
    blob = json.dumps({"backend": agent.backend.name, "model_sha256": agent.backend.model_sha256,
                       "mode": agent.mode, "options": agent.options.to_dict(), "purpose": purpose,
                       "messages": [m.to_dict() for m in messages]}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def call_count(store: Store, run_id: str | None = None) -> int:
    """Rows in the call log (of one run when given)."""
    row = store.con.cursor().execute(
        "SELECT count(*) FROM llm_calls WHERE ? IS NULL OR run_id = ?", [run_id, run_id]).fetchone()
    return int(row[0]) if row else 0


class LoggedAgent:
    """A :class:`DiagnosticAgent` whose calls go through the log and its cache."""

    def __init__(self, agent: DiagnosticAgent, store: Store) -> None:
        self.agent, self.store = agent, store
        self.last_key: str | None = None  # cache key of the latest classify / cues call

    def _lookup(self, key: str) -> tuple[Any, ...] | None:
        return self.store.con.cursor().execute(
            "SELECT raw_reply, parsed_json, probabilities, prompt_tokens, completion_tokens, duration_s "
            "FROM llm_calls WHERE cache_key = ? AND error IS NULL ORDER BY created_at DESC LIMIT 1",
            [key]).fetchone()

    def _record(self, key: str, purpose: str, ctx: CallContext, report: AgentReport,
                parsed: dict[str, Any]) -> None:
        backend = self.agent.backend
        row = [uuid.uuid4().hex, key, ctx.run_id, ctx.case_id, ctx.agent, ctx.round, purpose, backend.name,
               backend.model_id, backend.model_sha256, _messages_json(report.messages),
               json.dumps(self.agent.options.to_dict(), sort_keys=True), report.raw, json.dumps(parsed),
               [float(p) for p in report.probabilities], report.prompt_tokens, report.completion_tokens,
               report.duration_s, report.error, _dt.datetime.now()]
        run_in_transaction(self.store, lambda cur: cur.execute(
            "INSERT INTO llm_calls VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", row))

    def classify(self, case_text: str, note: str | None = None, *,
                 context: CallContext = CallContext()) -> tuple[AgentReport, bool]:
        """The agent's answer and whether it came from the cache."""
        messages = self.agent.messages(case_text, note)
        key = self.last_key = call_cache_key(self.agent, "classify", messages)
        hit = self._lookup(key)
        if hit is not None:
            raw, parsed, probs, p_tok, c_tok, dur = hit
            label = int(json.loads(parsed)["label"])
            return AgentReport(label, np.asarray(probs, dtype=float), tuple(messages), raw=raw,
                               prompt_tokens=p_tok or 0, completion_tokens=c_tok or 0,
                               duration_s=dur or 0.0), True
        report = self.agent.classify(case_text, note)
        self._record(key, "classify", context, report,
                     {"label": report.label, "label_name": self.agent.labels[report.label]})
        return report, False

    def cues(self, case_text: str, current: str, alternative: str, *,
             context: CallContext = CallContext()) -> tuple[list[str], bool]:
        """Cue list for a DIFFERENTIAL_STEER (cached like classify)."""
        from sag.prompts import cue_request

        messages = cue_request((current, alternative), case_text, self.agent.name, self.agent.role)
        key = self.last_key = call_cache_key(self.agent, "cues", messages)
        hit = self._lookup(key)
        if hit is not None:
            return list(json.loads(hit[1])["cues"]), True
        cues, report = self.agent.cues(case_text, current, alternative)
        self._record(key, "cues", context, report, {"cues": cues})
        return cues, False
