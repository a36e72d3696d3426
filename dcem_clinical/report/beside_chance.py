"""Each method's TEST accuracy beside what needs no skill, and its recall per class.

A clinical run's accuracy means little alone: with K classes a blind guess scores 1/K,
and always answering the most frequent class scores that class's share of the cases.  Per
(scenario, method), pooled over the run's seeds, :func:`beside_chance` gives

- the accuracy of the method's decision (on every TEST case: an escalated case's decision
  is the Bayes decision it was escalated with) and the seed where it was lowest;
- chance (1/K) and the most-frequent-class baseline (the TEST cases' most frequent true
  class answered every time: an upper bound for a majority answer chosen on CAL);
- the method's most frequent answer and its share, and the classes it never answers;
- the class with the lowest recall.

:func:`recall_by_class` gives every class's recall per method.
"""
from __future__ import annotations

from typing import Mapping, Sequence

import pandas as pd

from dcem.core.vocabulary import method

__all__ = ["BESIDE_COLUMNS", "beside_chance", "recall_by_class", "beside_chance_text"]

BESIDE_COLUMNS = ["scenario", "method", "cases", "accuracy", "worst seed", "chance", "most frequent class",
                  "top answer", "lowest recall", "never answered"]


def _name(labels: Sequence[str], index: object) -> str:
    i = int(index)  # type: ignore[call-overload]
    return labels[i] if 0 <= i < len(labels) else f"#{i}"


def beside_chance(outcomes: pd.DataFrame, labels: Sequence[str]) -> pd.DataFrame:
    """One row per (scenario, method) of ``outcomes`` (a run's stored outcomes: scenario,
    seed, method, decision, truth), see the module docstring."""
    rows = []
    k = len(labels)
    for (scenario, key), mine in outcomes.groupby(["scenario", "method"], sort=False):
        right = mine["decision"] == mine["truth"]
        by_seed = right.groupby(mine["seed"]).mean()
        worst = by_seed.idxmin()
        truth_counts = mine["truth"].value_counts()
        answers = mine["decision"].value_counts()
        recall = right.groupby(mine["truth"]).mean()
        low = recall.idxmin()
        never = [labels[i] for i in range(k) if i not in answers.index]
        rows.append({
            "scenario": scenario, "method": method(str(key)).label, "cases": len(mine),
            "accuracy": f"{right.mean():.3f}",
            "worst seed": f"{by_seed[worst]:.3f} (seed {int(worst)})" if len(by_seed) > 1 else "-",
            "chance": f"{1 / k:.3f}",
            "most frequent class": f"{truth_counts.iloc[0] / len(mine):.3f} ({_name(labels, truth_counts.index[0])})",
            "top answer": f"{_name(labels, answers.index[0])} {answers.iloc[0] / len(mine):.0%}",
            "lowest recall": f"{_name(labels, low)} {recall[low]:.2f}",
            "never answered": ", ".join(never) or "-"})
    return pd.DataFrame(rows, columns=BESIDE_COLUMNS)


def recall_by_class(outcomes: pd.DataFrame, labels: Sequence[str]) -> pd.DataFrame:
    """Recall per (scenario, class) row and method column, pooled over seeds, with each
    class's TEST cases."""
    right = (outcomes["decision"] == outcomes["truth"]).rename("right")
    frame = outcomes.assign(right=right, method=[method(str(m)).label for m in outcomes["method"]],
                            label=[_name(labels, t) for t in outcomes["truth"]])
    table = frame.pivot_table(index=["scenario", "label"], columns="method", values="right", aggfunc="mean",
                              sort=False)
    first = frame["method"].iloc[0] if len(frame) else None
    cases = frame[frame["method"] == first].groupby(["scenario", "label"], sort=False).size().rename("cases")
    order = [method(m).label for m in dict.fromkeys(outcomes["method"])]
    return table[order].round(2).join(cases)


def beside_chance_text(outcomes: Mapping[str, pd.DataFrame], labels: Mapping[str, Sequence[str]]) -> str:
    """Both tables for each run (``outcomes`` and ``labels`` by run id), as the report prints them."""
    parts = []
    for run_id, frame in outcomes.items():
        if frame.empty:
            continue
        names = labels[run_id]
        parts += [f"Beside chance ({run_id}): TEST accuracy pooled over seeds, with chance (1/K = {1 / len(names):.3f}), "
                  "the share of the most frequent true class (answering it every time), each method's most frequent "
                  "answer and its lowest recall",
                  beside_chance(frame, names).to_string(index=False), "",
                  "Recall per class (pooled over seeds)", recall_by_class(frame, names).to_string(), ""]
    return "\n".join(parts)
