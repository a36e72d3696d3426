"""Several runs on the same benchmark items, each against one base run (a trained group
against the untrained one): per run its accuracy with a 95 % interval beside chance, the
best a constant answer reaches and its own most frequent answer, and the paired
difference to the base with its bootstrap interval, all on the items every run answered.

REFUSE and ESCALATE count as not correct, as in :mod:`sag.runs.report`; their share is shown.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Mapping

import numpy as np
import pandas as pd

from common.errors import InputError
from common.intervals import paired_bootstrap, wilson_interval
from training.views import CONSTANT_SHARE, best_constant

__all__ = ["option_chance", "VersusRow", "versus_rows", "run_rows", "versus_markdown", "versus_frame"]


@dataclass(frozen=True)
class VersusRow:
    """One run on the common items; ``difference`` (run - base, low, high) is None for the base."""

    label: str
    items: int
    chance: float
    best_letter: str
    best_share: float
    accuracy: float
    interval: tuple[float, float]
    top_answer: str
    top_share: float
    refused: float
    difference: tuple[float, float, float] | None


def option_chance(options_json: pd.Series) -> pd.Series:
    """Each item's chance: 1 / its number of options (``options_json``: the items' options)."""
    return options_json.map(lambda text: 1.0 / max(len(json.loads(text)), 1))


def _chance(items: pd.DataFrame, ids: list[str]) -> float:
    """Mean over the items of 1 / their number of options."""
    return float(option_chance(items.set_index("item_id").loc[ids, "options_json"]).mean())


def versus_rows(outcomes: Mapping[str, pd.DataFrame], items: pd.DataFrame, base: str, *,
                rng: np.random.Generator) -> list[VersusRow]:
    """``outcomes``: label -> one run's outcomes (:meth:`SagStore.outcomes`), ``base`` one
    of the labels; ``items``: the base run's items (:meth:`SagStore.items`)."""
    if base not in outcomes:
        raise InputError("base", f"{base!r} is not one of the runs compared")
    benchmarks = {label: set(frame["benchmark"]) for label, frame in outcomes.items()}
    if len({b for found in benchmarks.values() for b in found}) > 1:
        named = ", ".join(f"{label}: {'/'.join(sorted(found))}" for label, found in benchmarks.items())
        raise InputError("runs", f"the runs are on different benchmarks ({named}); compare runs of one benchmark")
    common = set.intersection(*(set(frame["item_id"]) for frame in outcomes.values()))
    if not common:
        raise InputError("runs", "the runs have no answered item in common")
    ids = sorted(common)
    by_item = {label: frame.set_index("item_id").loc[ids] for label, frame in outcomes.items()}
    best, best_share = best_constant(by_item[base].reset_index()[["item_id", "truth"]].astype(str))
    chance = _chance(items, ids)
    right_base = by_item[base]["correct"].astype(bool).to_numpy()
    rows = []
    for label, frame in by_item.items():
        right = frame["correct"].astype(bool).to_numpy()
        answers = frame["answer"].astype(str).value_counts()
        diff = None if label == base else paired_bootstrap(list(right_base), list(right), rng)
        rows.append(VersusRow(label, len(ids), chance, best, best_share, float(right.mean()),
                              wilson_interval(int(right.sum()), len(ids)), str(answers.index[0]),
                              float(answers.iloc[0] / len(ids)), float(frame["refused"].astype(bool).mean()), diff))
    return rows


def run_rows(group_of: Mapping[str, str], outcomes: Mapping[str, pd.DataFrame], items: pd.DataFrame,
             base: str) -> list[VersusRow]:
    """:func:`versus_rows` of runs named by id (``outcomes``: run id -> outcomes), each
    labelled "group (run id)", with the bootstrap seeded 0 (the same table every time)."""
    labels = {run: f"{group_of[run]} ({run})" for run in outcomes}
    return versus_rows({labels[run]: frame for run, frame in outcomes.items()}, items, labels[base],
                       rng=np.random.default_rng(0))


def versus_markdown(rows: list[VersusRow]) -> str:
    """The rows as a Markdown table, with a note where a run mostly gives one answer."""
    lines = ["| run | items | chance | best single letter | accuracy [95 % CI] | most frequent answer | refused | "
             "run - base [95 % paired bootstrap] |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        diff = "base" if r.difference is None else \
            f"{r.difference[0]:+.3f} [{r.difference[1]:+.3f}, {r.difference[2]:+.3f}]"
        lines.append(f"| {r.label} | {r.items} | {r.chance:.3f} | {r.best_letter} {r.best_share:.3f} | "
                     f"{r.accuracy:.3f} [{r.interval[0]:.3f}, {r.interval[1]:.3f}] | {r.top_answer} "
                     f"{r.top_share:.0%} | {r.refused:.0%} | {diff} |")
    flagged = [r.label for r in rows if r.top_share > CONSTANT_SHARE]
    if flagged:
        lines += ["", f"{', '.join(flagged)}: one answer on more than {CONSTANT_SHARE:.0%} of the items, so the "
                      "accuracy is mostly that answer's share of right answers (the best single letter shows "
                      "the most a constant answer reaches), which is not knowledge."]
    return "\n".join(lines) + "\n"


def versus_frame(rows: list[VersusRow]) -> pd.DataFrame:
    """The rows as a display table (shares as fractions, intervals as text)."""
    return pd.DataFrame([{
        "Run": r.label, "Items": r.items, "Chance": r.chance, "Best single letter": f"{r.best_letter} {r.best_share:.3f}",
        "Accuracy": r.accuracy, "95 % interval": f"{100 * r.interval[0]:.1f}-{100 * r.interval[1]:.1f} %",
        "Most frequent answer": r.top_answer, "Its share": r.top_share, "Refused": r.refused,
        "Run - base": None if r.difference is None else r.difference[0],
        "95 % paired bootstrap": "base" if r.difference is None else f"{r.difference[1]:+.3f} to {r.difference[2]:+.3f}",
        "Flag": f"one answer > {CONSTANT_SHARE:.0%}" if r.top_share > CONSTANT_SHARE else ""} for r in rows])
