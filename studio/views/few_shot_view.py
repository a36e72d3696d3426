"""The solved examples in a few-shot agent's prompt, shaped for the case walkthrough.

A clinical run with retrieval few-shot (``python -m dcem_clinical run --few-shot K``)
shows each language-model agent the K solved calibration (CAL) cases of the seed most
similar to the case, with their true category; test cases are never shown.  The call
log records which (case id, true label, BM25 rank and score, whether the text was cut);
``dcem_clinical.informed.turn_examples`` reads them back, one row per example and turn.
That reader lives a layer above this package, so the dashboard passes its frame in and
this module only shapes it: per agent, the examples of one round, most similar first.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import pandas as pd

__all__ = ["EXAMPLES_NOTE", "NOT_STORED_NOTE", "EXAMPLE_TABLE_COLUMNS", "AgentExamples", "examples_heading",
           "agent_examples"]

EXAMPLES_NOTE = ("These are solved calibration (CAL) cases of the same seed, shown to the model in its prompt "
                 "with their true category; test cases are never shown.")
EXAMPLE_TABLE_COLUMNS = ["rank", "example case", "true category", "BM25 score", "truncated"]
NOT_STORED_NOTE = ("This store holds no examples for this case: the run was imported from an export made "
                   "before exports kept them.  The store that made the run has them in its call log; "
                   "export the run again from there to see them here.")


@dataclass(frozen=True)
class AgentExamples:
    """One agent's examples in one round's prompt (``table``: :data:`EXAMPLE_TABLE_COLUMNS`,
    rank 1 = most similar); ``k`` is the number the run asked for."""

    agent: int
    name: str
    k: int
    table: pd.DataFrame

    @property
    def caption(self) -> str:
        if self.table.empty:
            return ("No example is recorded for this turn: the case left no room for one in the "
                    "model's context, or the call failed.")
        cut = int(self.table["truncated"].sum())
        shown = f"{len(self.table)} of the {self.k} requested" if len(self.table) < self.k else f"all {self.k}"
        return (f"{shown} examples, rank 1 = most similar (shown last, next to the case); "
                f"{cut} cut short to fit the context.")


def examples_heading(round_number: int) -> str:
    """The title of the examples section of a round."""
    return f"Solved examples in the agents' prompts (round {round_number})"


def _category(row: pd.Series, labels: Sequence[str]) -> str | None:
    name = row.get("label_name")
    if isinstance(name, str) and name:
        return name
    label = row.get("label")
    return labels[int(label)] if label is not None and not pd.isna(label) and 0 <= int(label) < len(labels) else None


def agent_examples(examples: pd.DataFrame, few_shot: Mapping[int, int], names: Mapping[int, str],
                   labels: Sequence[str], round_number: int) -> list[AgentExamples]:
    """Per few-shot agent (``few_shot``: agent index -> k), the examples of round
    ``round_number`` from ``examples`` (the frame of ``turn_examples`` for one method)."""
    out = []
    for agent, k in sorted(few_shot.items()):
        mine = examples[(examples["round"] == round_number) & (examples["agent"] == agent)].sort_values("rank")
        table = pd.DataFrame({
            "rank": mine["rank"].astype(int).to_numpy(),
            "example case": mine["source_id"].astype(str).to_numpy(),
            "true category": [_category(row, labels) for _, row in mine.iterrows()],
            "BM25 score": mine["score"].astype(float).round(3).to_numpy(),
            "truncated": mine["truncated"].astype(bool).to_numpy()}, columns=EXAMPLE_TABLE_COLUMNS)
        out.append(AgentExamples(agent, names.get(agent, f"Agent {agent + 1}"), k, table))
    return out
