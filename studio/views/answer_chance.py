"""Is a probability answer better than chance?  A check for one model answer over K labels.

The Models page's test prompt gives a probability for each label.  A small model often
spreads its probability almost evenly; its "most probable" label is then close to a coin
toss among K labels and means little.  :func:`answer_chance` says so: the answer is *near
chance* when its top probability lies within :data:`CHANCE_MARGIN` of 1/K.  (Because the
probabilities average 1/K, a tiny spread from lowest to highest always implies this; the
spread is reported in the message.)  :func:`ranked_probabilities` orders the answer's
table most probable first.  Pure functions, no Streamlit and no model library.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

import pandas as pd

from common.errors import InputError
from common.fields import Number, check

__all__ = ["CHANCE_MARGIN", "AnswerChance", "answer_chance", "chance_caveat", "ranked_probabilities"]

CHANCE_MARGIN = 0.05
"""How far above 1/K the top probability must lie for the answer not to be near chance."""


@dataclass(frozen=True)
class AnswerChance:
    """One answer against chance: K labels, chance 1/K, the top probability, the spread
    (highest minus lowest) and whether the top lies within ``margin`` of chance."""

    k: int
    chance: float
    top: float
    spread: float
    margin: float

    @property
    def near_chance(self) -> bool:
        return self.top - self.chance <= self.margin

    @property
    def message(self) -> str:
        """The caveat shown with a near-chance answer (also readable for any answer)."""
        return (f"Near chance: the most probable label has {self.top:.3f}, and chance over {self.k} labels is "
                f"1/{self.k} = {self.chance:.3f} (within {self.margin:.2f}); the probabilities span only "
                f"{self.spread:.3f} from lowest to highest. The model hardly tells the labels apart on this "
                "case, so its most probable label says little.")


def _probabilities(values: Iterable[object]) -> list[float]:
    try:
        probs = [float(v) for v in values]  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InputError("probabilities", "must be numbers") from None
    if len(probs) < 2:
        raise InputError("probabilities", f"need at least 2 labels, got {len(probs)}")
    if not all(math.isfinite(p) and p >= 0 for p in probs):
        raise InputError("probabilities", "must be finite and not negative")
    total = sum(probs)
    if total <= 0:
        raise InputError("probabilities", "must not all be zero")
    return [p / total for p in probs]


def answer_chance(probabilities: Iterable[object], *, margin: float = CHANCE_MARGIN) -> AnswerChance:
    """Compare one answer's probabilities (normalised to sum 1) with chance 1/K.
    :class:`InputError` for fewer than 2 values or values that are not finite, not
    negative numbers with a positive sum, or a margin outside [0, 1)."""
    check("margin", margin, Number(0, 1, closed="left"), error=InputError)
    probs = _probabilities(probabilities)
    k = len(probs)
    return AnswerChance(k=k, chance=1.0 / k, top=max(probs), spread=max(probs) - min(probs), margin=float(margin))


def chance_caveat(probabilities: Iterable[object], *, margin: float = CHANCE_MARGIN) -> str | None:
    """The caveat for a near-chance answer, None when the answer stands out from chance."""
    check = answer_chance(probabilities, margin=margin)
    return check.message if check.near_chance else None


def ranked_probabilities(table: pd.DataFrame, column: str = "probability") -> pd.DataFrame:
    """``table`` sorted by ``column``, most probable first (ties keep their order), with a
    fresh index.  :class:`InputError` when the column is missing."""
    if column not in table.columns:
        raise InputError(column, f"the table has no {column!r} column (columns: {', '.join(map(str, table.columns))})")
    return table.sort_values(column, ascending=False, kind="mergesort").reset_index(drop=True)
