"""Two SAG runs side by side on their common items: accuracies, most frequent answers and
the paired difference with its bootstrap interval."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["RunComparison", "compare_runs"]


@dataclass(frozen=True, eq=False)
class RunComparison:
    """Two runs on their common items: the side-by-side table, each run's accuracy there and
    most frequent answer, and the paired difference B - A with its 95 % bootstrap interval."""

    table: pd.DataFrame
    accuracy_a: float | None
    accuracy_b: float | None
    difference: tuple[float, float, float] | None = None

    @property
    def n_common(self) -> int:
        return len(self.table)

    def top_answer(self, side: str) -> tuple[str, float]:
        """The most frequent answer of run ``side`` ("A" or "B") on the common items, and its share."""
        counts = self.table[f"answer {side}"].astype(str).value_counts()
        return str(counts.index[0]), float(counts.iloc[0] / counts.sum())

    @property
    def caption(self) -> str:
        if not self.n_common:
            return "These runs have no item in common (other benchmark, seed or calibration split)."
        (top_a, share_a), (top_b, share_b) = self.top_answer("A"), self.top_answer("B")
        text = (f"{self.n_common} common item(s). Accuracy of A: {self.accuracy_a:.3f}; accuracy of B: "
                f"{self.accuracy_b:.3f} (REFUSE and ESCALATE count as not correct). Most frequent answer: "
                f"run A answered {top_a!r} on {share_a:.1%} of items, run B {top_b!r} on {share_b:.1%}.")
        if self.difference is not None:
            diff, low, high = self.difference
            verdict = "excludes 0" if low > 0 or high < 0 else "includes 0: no difference shown"
            text += f" B - A on the same items: {diff:+.3f}, 95 % paired bootstrap interval [{low:+.3f}, {high:+.3f}] ({verdict})."
        return text


def compare_runs(outcomes_a: pd.DataFrame, outcomes_b: pd.DataFrame) -> RunComparison:
    """The outcomes of runs A and B (:meth:`SagStore.outcomes`) on the items both answered."""
    keep = ["item_id", "truth", "answer", "correct", "rounds"]
    both = outcomes_a[keep].merge(outcomes_b[keep].drop(columns="truth"), on="item_id", suffixes=(" A", " B"))
    table = both[["item_id", "truth", "answer A", "answer B", "correct A", "correct B", "rounds A", "rounds B"]]
    table = table.astype({"correct A": bool, "correct B": bool}).reset_index(drop=True)
    if table.empty:
        return RunComparison(table, None, None)
    from common.intervals import paired_bootstrap

    difference = paired_bootstrap(list(table["correct A"]), list(table["correct B"]), np.random.default_rng(0))
    return RunComparison(table, float(table["correct A"].mean()), float(table["correct B"].mean()), difference)
