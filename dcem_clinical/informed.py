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
(for the walkthrough): agent turns join the call log on their cache key, and a run imported
from an export, which has no call log, carries them in its turn rows
(:func:`run_turn_examples` gives them to the export); :mod:`dcem.store.turn_examples` reads
the stored texts.
"""
from __future__ import annotations

import json
from typing import Any, Sequence

import pandas as pd

from clinical.datasets import ClinicalCase
from common.db import Database
from dcem.store.run_export import TURN_KEY
from dcem.store.turn_examples import ExampleText, case_example_texts, run_has_examples, runs_example_texts
from dcem_clinical.agent import CALIBRATED, AgentReport, DiagnosticAgent
from dcem_clinical.call_log import CallContext, LoggedAgent, call_cache_key
from dcem_clinical.contextual import CONTENT_FREE_INPUTS, FLOOR, content_free_distribution
from dcem_clinical.few_shot import FewShot, FewShotConfig
from dcem_clinical.prompts import AGENT_FIRST

__all__ = ["RecordingAgent", "make_few_shot", "turn_examples", "run_turn_examples", "run_has_examples",
           "EXAMPLE_COLUMNS"]

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


def _example_list(text: str | None, *, wrapped: bool) -> list[dict[str, Any]]:
    """The examples in a stored JSON text (a call's parsed reply holds them under
    ``examples``; an imported turn holds the list itself); empty when there are none."""
    try:
        value = json.loads(text or "null")
    except ValueError:
        return []
    if wrapped:
        value = value.get("examples") if isinstance(value, dict) else None
    return [e for e in value if isinstance(e, dict)] if isinstance(value, list) else []


def _turn_example_lists(texts: list[ExampleText]) -> dict[tuple[Any, ...], list[dict[str, Any]]]:
    """(run, case, method, round, agent) -> the examples that turn's prompt showed: from the
    call log where it has them, else from the turn row (runs imported from an export)."""
    out: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for key, text, wrapped in texts:
        examples = _example_list(text, wrapped=wrapped)
        if examples:
            out.setdefault((key[0], key[1], key[2], int(key[3]), int(key[4])), examples)
    return out


def turn_examples(store: Database, run_id: str, case_id: str, method: str | None = None) -> pd.DataFrame:
    """The solved examples each stored agent turn of a case showed, one row per example.

    Columns :data:`EXAMPLE_COLUMNS` (``shown`` is the position in the prompt, 1 = first;
    ``rank`` 1 = most similar).  Empty for runs without few-shot examples.
    """
    lists = _turn_example_lists(case_example_texts(store, run_id, case_id, method))
    records = [{"method": key[2], "round": key[3], "agent": key[4], "shown": i,
                **{k: e.get(k) for k in EXAMPLE_COLUMNS[4:]}}
               for key in sorted(lists)
               for i, e in enumerate(lists[key], start=1)]
    return pd.DataFrame(records, columns=EXAMPLE_COLUMNS)


def run_turn_examples(store: Database, run_ids: Sequence[str]) -> pd.DataFrame:
    """Every agent turn of the runs ``run_ids`` that showed few-shot examples, one row per
    turn: the turn's key and ``examples_json`` (the list as JSON), as a run export keeps them."""
    lists = _turn_example_lists(runs_example_texts(store, run_ids))
    rows = [(*key, json.dumps(lists[key], sort_keys=True)) for key in sorted(lists)]
    return pd.DataFrame(rows, columns=[*TURN_KEY, "examples_json"])
