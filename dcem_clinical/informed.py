"""Agents whose prompts or answers carry information: few-shot examples and calibration.

:class:`RecordingAgent` is the :class:`~dcem_clinical.call_log.LoggedAgent` a clinical cell
builds for every LLM member.  Beyond the plain logged agent it

- keeps what the agent reports besides its answer with the logged call: the parsed
  reply of a ``classify`` row in ``llm_calls`` (``parsed_json``) then also holds
  ``examples`` (the solved CAL cases shown, with source id, label, rank, BM25 score and
  truncation; see :mod:`dcem_clinical.few_shot`) and, in the ``scored-calibrated`` mode,
  ``raw_probabilities`` and ``content_free``;
- fits the content-free distribution of the ``scored-calibrated`` mode through the call
  log (purpose ``content_free``), so a resumed or repeated cell asks the model nothing
  and gets the same distribution;
- reports both settings in :meth:`info`, which the cell stores with its other per-agent
  information (the content-free distribution makes a calibrated run reproducible).

The prompt (and so the cache key) of a few-shot call contains its examples, and the mode
``scored-calibrated`` is part of every cache key, so a call logged under another setting
never answers.  :func:`turn_examples` reads the examples of a stored case's turns back
(for the walkthrough): agent turns join the call log on their cache key.
"""
from __future__ import annotations

import json
from typing import Any, Sequence

import duckdb
import pandas as pd

from clinical.datasets import ClinicalCase
from common.db import Database
from dcem_clinical.agent import CALIBRATED, AgentReport, DiagnosticAgent
from dcem_clinical.call_log import CallContext, LoggedAgent, call_cache_key
from dcem_clinical.contextual import CONTENT_FREE_INPUTS, FLOOR, content_free_distribution
from dcem_clinical.few_shot import FewShot, FewShotConfig
from dcem_clinical.prompts import AGENT_FIRST

__all__ = ["RecordingAgent", "make_few_shot", "turn_examples", "EXAMPLE_COLUMNS"]

EXAMPLE_COLUMNS = ["method", "round", "agent", "shown", "rank", "source_id", "label", "label_name", "score",
                   "truncated", "chars"]


def make_few_shot(cal: Sequence[ClinicalCase], k: int, n_ctx: int) -> FewShot | None:
    """Retrieval over the seed's solved CAL cases (None when ``k`` is 0)."""
    config = FewShotConfig(k=k, n_ctx=n_ctx)
    return FewShot(cal, config) if k > 0 and cal else None


class RecordingAgent(LoggedAgent):
    """A logged agent that records examples and calibration with its calls (module docstring)."""

    def __init__(self, agent: DiagnosticAgent, store: Database, *, run_id: str | None = None) -> None:
        super().__init__(agent, store)
        if agent.mode == CALIBRATED and agent.content_free is None:
            self.fit_content_free(run_id)

    def _parsed(self, report: AgentReport, parsed: dict[str, Any]) -> dict[str, Any]:
        """Every row (one at a time or from a batch) also keeps what the report carries."""
        return {**report.extra, **parsed}

    def fit_content_free(self, run_id: str | None = None) -> list[float]:
        """The agent's content-free distribution, each of its calls through the log."""
        vectors = []
        for text, messages in zip(CONTENT_FREE_INPUTS, self.agent.content_free_messages()):
            key = call_cache_key(self.agent, "content_free", messages)
            hit = self.log.lookup(key)
            if hit is not None:
                vectors.append(hit.probabilities)
                continue
            report = self.agent.raw_scores(messages)
            self._record(key, "content_free", CallContext(run_id, f"content-free:{text}"), report,
                         {"label": report.label, "input": text})
            vectors.append([float(p) for p in report.probabilities])
        self.agent.content_free = content_free_distribution(vectors)
        return [float(v) for v in self.agent.content_free]

    def info(self) -> dict[str, Any]:
        """The plain agent's information plus the few-shot and calibration settings."""
        out: dict[str, Any] = dict(super().info())
        few_shot = self.agent.few_shot
        if few_shot is not None:
            cfg = few_shot.config
            out["few_shot"] = {"k": cfg.k, "n_ctx": cfg.n_ctx, "max_example_chars": cfg.max_example_chars,
                               "indexed_cases": len(few_shot.index)}
        if self.agent.layout != AGENT_FIRST:  # agent-first: the info of earlier runs, unchanged
            out["layout"] = self.agent.layout
        if self.agent.mode == CALIBRATED and self.agent.content_free is not None:
            out["content_free"] = [float(v) for v in self.agent.content_free]
            out["content_free_inputs"], out["content_free_floor"] = list(CONTENT_FREE_INPUTS), FLOOR
        return out


def turn_examples(store: Database, run_id: str, case_id: str, method: str | None = None) -> pd.DataFrame:
    """The solved examples each stored agent turn of a case showed, one row per example.

    Columns :data:`EXAMPLE_COLUMNS` (``shown`` is the position in the prompt, 1 = first;
    ``rank`` 1 = most similar).  Empty for runs without few-shot examples.
    """
    sql = """SELECT t.method, t.round, t.agent, c.parsed_json
             FROM agent_turns t JOIN llm_calls c ON c.cache_key = t.cache_key
             WHERE t.run_id = ? AND t.case_id = ? AND (? IS NULL OR t.method = ?)
               AND c.purpose = 'classify' AND c.error IS NULL
             QUALIFY row_number() OVER (PARTITION BY t.method, t.round, t.agent ORDER BY c.created_at DESC) = 1
             ORDER BY t.method, t.round, t.agent"""
    try:
        rows = store.con.cursor().execute(sql, [run_id, case_id, method, method]).fetchall()
    except duckdb.CatalogException:  # a store without agent turns or a call log has no examples
        return pd.DataFrame(columns=EXAMPLE_COLUMNS)
    records = [{"method": m, "round": int(r), "agent": int(a), "shown": i,
                **{k: e.get(k) for k in EXAMPLE_COLUMNS[4:]}}
               for m, r, a, parsed in rows
               for i, e in enumerate(json.loads(parsed or "{}").get("examples", []), start=1)]
    return pd.DataFrame(records, columns=EXAMPLE_COLUMNS)
