"""The shipped SAG run exports, ``data/results/sag_runs/<name>/`` (:mod:`sag.runs.run_export`),
and the comparisons they hold for a group: in each export the first run is the base (the
untrained group) and every other run is compared with it on the items both answered.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from common.db import PROJECT_ROOT
from common.errors import ProjectError
from common.table_export import export_folders
from sag.runs.run_export import read_run_export
from sag.runs.versus import VersusRow, run_rows

__all__ = ["runs_dir", "shipped_run_exports", "GroupComparison", "group_comparisons"]


def runs_dir() -> Path:
    return PROJECT_ROOT / "data" / "results" / "sag_runs"


def shipped_run_exports() -> list[Path]:
    """The export folders (those holding a manifest), by name."""
    return export_folders(runs_dir())


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
        group_of = runs["group_name"].astype(str).to_dict()
        base = export.run_ids()[0]
        for run_id in export.run_ids()[1:]:
            if group_of[run_id] != group:
                continue
            rows = run_rows(group_of, {r: export.outcomes_of(r) for r in (base, run_id)}, export.items_of(base), base)
            found.append(GroupComparison(folder.name, str(runs.loc[run_id, "benchmark"]), base, run_id, tuple(rows)))
    return found, problems
