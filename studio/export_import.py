"""One import for every export: the sidebar's "Import an export" takes a folder and brings
whatever export it holds into the result store.

It is the import of ``python -m studio runs import`` (:func:`common.run_export.import_runs_export`):
an export of any kind in the one format (``studio-run/1``), or in an older format a kind
still reads (a D-CEM run export, a SAG store export, a training export), is checked whole,
loaded into a scratch store and merged into the result store; importing twice adds
nothing, and nothing is written when an export is incomplete or changed.  An older SAG
runs export brings its runs' outcomes only (:mod:`sag.runs.old_runs_load`: it kept no debate
text), and the panel says so.  The panel
shows each step as it starts (each table read and checked, the rows shaped, each table
merged) with a bar, so a long import never sits on one line.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from common.db import StoreError, default_db_path
from common.errors import ProjectError
from common.work import Progress
from common.table_export import MANIFEST, export_format
from studio.literal import literal

__all__ = ["ImportOutcome", "import_export", "import_panel"]

# how a message names the runs of a kind
_LABELS = {"synthetic": "D-CEM", "clinical": "D-CEM", "sag": "SAG", "training": "training"}


@dataclass(frozen=True)
class ImportOutcome:
    """``kind``: success, info (nothing to do) or error; ``message``: one or two sentences."""

    kind: str
    message: str


def import_export(folder_text: str, db_path: str | None = None, progress: Progress | None = None) -> ImportOutcome:
    """Import the export in the folder ``folder_text`` into the store (see the module
    docstring); ``progress(done, total, label)`` hears of each step."""
    from common.run_export import import_runs_export
    from sag.runs.run_export import FORMAT as SAG_RUNS_FORMAT
    from studio.run_kinds import load_kinds

    text = folder_text.strip()
    if not text:
        return ImportOutcome("error", "Give the folder of an export (the one holding manifest.json).")
    folder = Path(text).expanduser()
    if not (folder / MANIFEST).is_file():
        return ImportOutcome("error", f"{folder} holds no {MANIFEST}: give the folder an export command wrote.")
    kinds = load_kinds()
    try:
        result = import_runs_export(db_path or str(default_db_path()), folder, kinds, progress)
    except (ProjectError, StoreError) as exc:
        return ImportOutcome("error", f"Nothing was imported: {exc}")
    if not result.added:
        return ImportOutcome("info", "The store already holds every row of this export; nothing was added.")
    counts = Counter(_LABELS.get(kind, kind) for _, kind in result.runs)
    pages = sorted({kinds[k].page for _, k in result.runs if k in kinds})
    runs = ", ".join(f"{n} {label} run(s)" for label, n in counts.items())
    held = ("their outcomes only: this older SAG runs export kept no debate text" if
            export_format(folder) == SAG_RUNS_FORMAT else "with every debate and call log the export holds")
    return ImportOutcome("success", f"Imported {runs} ({result.added:,} rows, {held}). They open on the "
                                    f"{', '.join(pages)} page(s); the Runs page lists them all.")


def import_panel() -> None:
    """The sidebar's import: a folder path and one button."""
    with st.expander("Import an export"):
        folder = st.text_input("Export folder", key="import_export_folder",
                               help="A folder written by `python -m dcem export`, `python -m dcem_clinical export`, "
                                    "`python -m sag export` or `python -m sag export-store` (it holds manifest.json "
                                    "beside Parquet files).")
        if st.button("Import", key="import_export_go"):
            with st.status("Importing the export ...", expanded=True) as status:
                bar = st.progress(0.0)

                def progress(done: int, total: int, label: str) -> None:
                    st.caption(label)
                    bar.progress(min(max(done / max(total, 1), 0.0), 1.0), text=label)

                outcome = import_export(folder, progress=progress)
                status.update(label={"success": "Imported", "info": "Nothing to import"}.get(
                    outcome.kind, "Not imported"), state="error" if outcome.kind == "error" else "complete",
                    expanded=False)
            {"success": st.success, "info": st.info}.get(outcome.kind, st.error)(literal(outcome.message))
