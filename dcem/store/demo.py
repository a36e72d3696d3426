"""Demo data for a fresh store: the run exports the project ships.

``data/results/dcem_synthetic`` holds three synthetic runs of the full grid (the three worlds),
``data/results/dcem_clinical`` two clinical runs of language-model agents, the
informative-panel exports (:data:`PANEL_EXPORTS`: the mixed panel and the LLM pair with
few-shot), the views grid (:data:`VIEWS_EXPORT`: two statistical members that each read
part of a case, both datasets) and the panel of three (:data:`TRIO_EXPORT`: those members
and the trained diagnostician, DDXPlus-8) and a case file of one's own
(:data:`OWN_CASES_EXPORT`: the example abdominal-pain file, SmolLM2 beside a statistical
member), all written by ``python -m dcem export`` / ``python -m dcem_clinical export``.  :func:`ensure_demo` imports them into a store that
holds no runs, so the dashboard opens on ready content; a store with runs is never touched.

A first visit opens on :data:`FEATURED_RUN`, the views grid's DDXPlus-8 run, where D-CEM
certifies, steers and escalates cases side by side (:func:`opening_run`).
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Sequence

from common.db import PROJECT_ROOT
from dcem.store.database import Store
from dcem.store.run_import import import_run_export, stored_run_ids

__all__ = ["DEMO_EXPORTS", "FEATURED_RUN", "OWN_CASES_EXPORT", "PANEL_EXPORTS", "TRIO_EXPORT", "VIEWS_EXPORT",
           "demo_run_exports", "demo_run_ids", "ensure_demo", "opening_run"]

_RESULTS = PROJECT_ROOT / "data" / "results"
# a statistical agent fit on CAL beside SmolLM2, both datasets (REPRODUCTION.md, "Informative panels")
PANEL_EXPORTS: tuple[Path, ...] = (_RESULTS / "dcem_clinical_mixed", _RESULTS / "dcem_clinical_pair")
# two statistical members reading different parts of each case (REPRODUCTION.md, "Members that know part of a case")
VIEWS_EXPORT = _RESULTS / "dcem_clinical_views"
# those two members and the trained DDXPlus-8 diagnostician on the symptoms (REPRODUCTION.md, "A panel of three")
TRIO_EXPORT = _RESULTS / "dcem_clinical_trio"
# a researcher's own case file (REPRODUCTION.md, "Your own cases"): SmolLM2 and a statistical member
OWN_CASES_EXPORT = _RESULTS / "own_cases_abdominal"
DEMO_EXPORTS: tuple[Path, ...] = (_RESULTS / "dcem_synthetic", _RESULTS / "dcem_clinical", *PANEL_EXPORTS,
                                  VIEWS_EXPORT, TRIO_EXPORT, OWN_CASES_EXPORT)
FEATURED_RUN = "llm-ab12b25c83e1"  # VIEWS_EXPORT's DDXPlus-8 run: complaint + history members, S1-S3b


def ensure_demo(store: Store, exports: tuple[Path, ...] = DEMO_EXPORTS) -> list[str]:
    """Import ``exports`` into ``store`` when it holds no runs; return the imported run ids
    (empty when the store already had runs).  Raises InputError / StoreError like
    :func:`~dcem.store.run_import.import_run_export`; each export is its own transaction."""
    if stored_run_ids(store):
        return []
    imported: list[str] = []
    for directory in exports:
        imported += import_run_export(store, directory)
    return imported


@lru_cache(maxsize=1)
def demo_run_exports() -> dict[str, str]:
    """The shipped demo exports' run ids, each with the name of its export folder (read from
    their manifests; an export that is missing or unreadable contributes none)."""
    found: dict[str, str] = {}
    for directory in DEMO_EXPORTS:
        try:
            manifest = json.loads((directory / "manifest.json").read_text())
        except (OSError, ValueError):
            continue
        runs = manifest.get("runs") if isinstance(manifest, dict) else None
        found.update({str(r["run_id"]): directory.name for r in runs or () if isinstance(r, dict) and "run_id" in r})
    return found


def demo_run_ids() -> frozenset[str]:
    """The run ids the shipped demo exports hold (:func:`demo_run_exports`)."""
    return frozenset(demo_run_exports())


def opening_run(newest_first: Sequence[str]) -> str | None:
    """The run a picker over ``newest_first`` opens on when the session has no run of its
    own: :data:`FEATURED_RUN` while it is stored and no run newer than the demo data is
    (the newest run is a demo run), else None (the newest run)."""
    if FEATURED_RUN in newest_first and newest_first[0] in demo_run_ids():
        return FEATURED_RUN
    return None
