"""Demo data for a fresh store: the run exports the project ships.

``data/results/dcem_synthetic`` holds three synthetic runs of the full grid (the three worlds),
``data/results/dcem_clinical`` two clinical runs of language-model agents, and the
informative-panel exports (:data:`PANEL_EXPORTS`: the mixed panel and the LLM pair with
few-shot) the clinical runs of the informative-panel grid (written by
``python -m dcem export`` / ``python -m dcem_clinical export``).  :func:`ensure_demo`
imports them into a store that holds no runs, so the dashboard opens on ready content; a
store with runs is never touched.
"""
from __future__ import annotations

from pathlib import Path

from common.db import PROJECT_ROOT
from dcem.store.database import Store
from dcem.store.run_import import import_run_export, stored_run_ids

__all__ = ["DEMO_EXPORTS", "PANEL_EXPORTS", "ensure_demo"]

_RESULTS = PROJECT_ROOT / "data" / "results"
# a statistical agent fit on CAL beside SmolLM2, both datasets (REPRODUCTION.md, "Informative panels")
PANEL_EXPORTS: tuple[Path, ...] = (_RESULTS / "dcem_clinical_mixed", _RESULTS / "dcem_clinical_pair")
DEMO_EXPORTS: tuple[Path, ...] = (_RESULTS / "dcem_synthetic", _RESULTS / "dcem_clinical", *PANEL_EXPORTS)


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
