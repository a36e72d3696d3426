"""The ``synthetic`` kind of run (:mod:`common.run_kinds`): a grid of the synthetic
rule-guided world's scenarios and seeds (``python -m dcem run synthetic``)."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from common.run_kinds import RunKind, register
from dcem.store.database import Store
from dcem.store.merge_checks import DCEM_CHECKS
from dcem.store.run_import import import_run_export

__all__ = ["DCEM_TABLES", "SYNTHETIC", "load_dcem_export", "describe_grid"]

# the D-CEM tables holding a grid's rows (synthetic and clinical runs alike)
DCEM_TABLES = ("runs", "cells", "cell_failures", "cases", "case_texts", "traces", "outcomes", "metrics",
               "agent_turns", "ablation", "reviews")


def load_dcem_export(folder: Path, raw: Path, progress: Any) -> None:
    """A D-CEM run export (``dcem-run-export/1``, synthetic and clinical runs) into the new store ``raw``."""
    with Store(raw) as store:
        import_run_export(store, folder, progress)


def describe_grid(spec: Mapping[str, Any]) -> str:
    """A grid in a few words: its scenarios (or dataset) and seeds."""
    inner = spec.get("spec") or {}
    where = inner.get("dataset") or ", ".join(str(s) for s in inner.get("scenarios") or [])
    seeds = spec.get("seeds") or []
    return f"{where}; {len(seeds)} seed(s)" if where else f"{len(seeds)} seed(s)"


def _report(path: Path, run_id: str) -> str:
    from dcem.analysis.run_report import synthetic_report_text

    with Store(path, read_only=True) as store:
        return synthetic_report_text(store, run_id)


SYNTHETIC = register(RunKind(
    "synthetic", "D-CEM and its baselines on the synthetic rule-guided world's scenarios", "Experiments",
    DCEM_TABLES, Store, lambda: DCEM_CHECKS, _report, describe=describe_grid,
    imports={"dcem-run-export/1": load_dcem_export}))
