"""Which stored SAG run a page opens on, and which run it compares it with.

An evaluation stores many internal runs (five repeats per consistency setting, one per
perturbation, ...).  A page should open on the most useful one: the featured run (the
trained view group on DDXPlus-8, :data:`FEATURED`) when it is stored, then a run the
person launched or imported, else an accuracy run of the main group (SAG-6), else any
accuracy run, then the other evaluation parts, and the consistency repeats last (a run
launched on the page opens the page on it whatever its rank).  Its comparison partner is a
run of the same benchmark (so the two share their items), of another group when there is
one.
"""
from __future__ import annotations

from typing import Callable

import pandas as pd

from sag.views.featured import FEATURED as FEATURED_VIEW_GROUP

__all__ = ["FEATURED", "useful_order", "partner_run"]

_PARTS = ("eval:accuracy", "eval:relevance", "eval:safety", "eval:fairness", "eval:robustness", "eval:consistency")
MAIN_GROUP = "sag-6"


FEATURED = ("ddxplus8", FEATURED_VIEW_GROUP.name)
"""The demo's featured run: the trained view group on the 200 TEST cases of DDXPlus-8
(``docs/group_views.md``); a page opens on it before any other run not launched here."""


def _rank(benchmark: str, group: str) -> tuple[int, int]:
    if (benchmark, group) == FEATURED:
        return 0, -1
    if not benchmark.startswith("eval:"):
        return 0, 0
    part = benchmark.split("/")[0]
    return 1 + (_PARTS.index(part) if part in _PARTS else len(_PARTS) - 1), 0 if group == MAIN_GROUP else 1


def useful_order(runs: pd.DataFrame) -> list[str]:
    """Run ids of ``runs`` (:meth:`SagStore.runs`, newest first), most useful first; the
    order within a rank is kept."""
    ranked = sorted(range(len(runs)), key=lambda i: (*_rank(str(runs["benchmark"].iloc[i]),
                                                              str(runs["group_name"].iloc[i])), i))
    return [str(runs["run_id"].iloc[i]) for i in ranked]


def partner_run(runs: pd.DataFrame, run_id: str, shared: Callable[[str], int] | None = None) -> str:
    """A run to compare ``run_id`` with: same benchmark and seed; one sharing answered
    items with it first (``shared(other)``: how many, when known), then another group, then
    the most useful; ``run_id`` itself when no other run shares its benchmark."""
    by_id = runs.set_index("run_id")
    if run_id not in by_id.index:
        return run_id
    mine = by_id.loc[run_id]
    same = runs[(runs["benchmark"] == mine["benchmark"]) & (runs["seed"] == mine["seed"]) & (runs["run_id"] != run_id)]
    if same.empty:
        return run_id
    order = useful_order(same)
    group = same.set_index("run_id")["group_name"].astype(str)
    return min(order, key=lambda r: (shared is not None and shared(r) == 0, group[r] == str(mine["group_name"]),
                                     order.index(r)))
