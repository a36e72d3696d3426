"""The shipped SAG run exports, ``data/results/sag_runs/<name>/`` (:mod:`sag.run_export`),
and the comparisons they hold for a group: in each export the first run is the base (the
untrained group) and every other run is compared with it on the items both answered.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from common.db import PROJECT_ROOT
from common.errors import ProjectError
from common.table_export import MANIFEST
from sag.run_export import read_run_export
from sag.versus import VersusRow, versus_rows

__all__ = ["runs_dir", "shipped_run_exports", "GroupComparison", "group_comparisons"]


def runs_dir() -> Path:
    return PROJECT_ROOT / "data" / "results" / "sag_runs"


def shipped_run_exports() -> list[Path]:
    """The export folders (those holding a manifest), by name."""
    folder = runs_dir()
    return sorted(p for p in folder.iterdir() if (p / MANIFEST).is_file()) if folder.is_dir() else []


@dataclass(frozen=True)
class GroupComparison:
    """One export's comparison of a group's run with the export's base run."""

    export: str
    benchmark: str
    base_run: str
    run: str
    rows: tuple[VersusRow, ...]


def group_comparisons(group: str) -> tuple[list[GroupComparison], list[str]]:
    """(each shipped comparison of a run of ``group`` with its export's base run, one line
    per export that cannot be read)."""
    found, problems = [], []
    for folder in shipped_run_exports():
        try:
            export = read_run_export(folder)
        except ProjectError as exc:
            problems.append(f"{folder.name}: {exc}")
            continue
        runs = export.runs.set_index("run_id")
        base = export.run_ids()[0]
        for run_id in export.run_ids()[1:]:
            if str(runs.loc[run_id, "group_name"]) != group:
                continue
            labels = {r: f"{runs.loc[r, 'group_name']} ({r})" for r in (base, run_id)}
            rows = versus_rows({labels[r]: export.outcomes_of(r) for r in (base, run_id)}, export.items_of(base),
                               labels[base], rng=np.random.default_rng(0))
            found.append(GroupComparison(folder.name, str(runs.loc[run_id, "benchmark"]), base, run_id, tuple(rows)))
    return found, problems
