"""Small stored SAG runs for the Agent group page's tests, answered by scripted agents
(no model is loaded): a ``sag-6`` run with real BM25 retrieval, a ``sag-6-majority`` run on
the same items (every agent answers C), and a ``sag-6-dcem`` run with a small calibration split."""
from __future__ import annotations

import re
from pathlib import Path

from runtime.turns import TurnRequest
from sag.group.config import preset
from sag.retrieval import retrievers
from common.work import WorkSummary
from sag.runs.run import SagRunSpec, load_items, run_sag
from sag.store.tables import SagStore

from .fakes import ScriptedTurns, constant

__all__ = ["debating", "build_group_runs", "GROUP_RUN_ITEMS"]

GROUP_RUN_ITEMS = 3
_PASSAGE = re.compile(r"\[((?:mlp|pmq|ddx)-[A-Za-z0-9_.:-]+)\]")


def debating(agent: str, prompt: str, request: TurnRequest) -> tuple[str, str]:
    """R2 holds C, everyone else B; knowledge agents cite the first passage in the pool,
    the safety agent raises a flag, the judge marks NEW: no."""
    if agent.startswith("K"):
        found = _PASSAGE.search(prompt)
        return "B", f"SUPPORTED [{found.group(1)}] fits the findings." if found else "SUPPORTED, no passage."
    if agent.startswith("S"):
        return "B", "FLAG: check the dose before acting\nOtherwise consistent."
    if agent.startswith("J"):
        return "B", "The panel mostly agrees on B. NEW: no"
    return ("C" if agent == "R2" else "B"), "It fits the findings best."


def telling_seed() -> int:
    """The first draw seed whose items make the page's tests telling: three different truth
    letters, none B (every scripted group answers B), exactly one C (so the all-C majority run
    scores 1/3), and a ``sag-6-dcem`` draw with no item in common with the ``sag-6`` one.

    Searched rather than fixed, so a change of the held-out pool (the training split) cannot
    quietly turn the tests' premises false."""
    items = load_items("medqa")
    for seed in range(1000):
        drawn, _ = SagRunSpec("medqa", preset("sag-6"), n_items=GROUP_RUN_ITEMS, seed=seed).split(items)
        other, _ = SagRunSpec("medqa", _DCEM, n_items=GROUP_RUN_ITEMS, seed=seed).split(items)
        truths = [it.answer for it in drawn]
        if ("B" not in truths and truths.count("C") == 1 and len(set(truths)) == GROUP_RUN_ITEMS
                and not {it.item_id for it in drawn} & {it.item_id for it in other}):
            return seed
    raise AssertionError("no MedQA draw seed below 1000 gives the group-run tests their premises")


_DCEM = preset("sag-6-dcem").with_changes(n_cal=4, t_max=2)


def build_group_runs(path: Path, index_cache: Path) -> dict[str, WorkSummary]:
    """Write the three runs into the DuckDB file ``path``; returns their summaries by name."""
    out: dict[str, WorkSummary] = {}
    corpora = retrievers(("medlineplus", "pubmedqa"), cache_dir=index_cache)
    specs = {"sag": (preset("sag-6").with_changes(t_max=2), debating, corpora),
             "majority": (preset("sag-6-majority"), constant("C"), corpora),
             "dcem": (_DCEM, debating, {})}
    seed = telling_seed()
    with SagStore(path) as store:
        for name, (cfg, policy, found) in specs.items():
            spec = SagRunSpec("medqa", cfg, n_items=GROUP_RUN_ITEMS, seed=seed)
            out[name] = run_sag(store, spec, runners={m: ScriptedTurns(policy) for m in cfg.models()},
                                retrievers=found)
    return out
