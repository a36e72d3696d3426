"""One import for every export: the sidebar's "Import an export" takes a folder and brings
whatever export it holds into the result store.

The folder's ``manifest.json`` names its format: a D-CEM run export
(:mod:`dcem.store.run_export`: synthetic and clinical runs) is loaded with
:func:`dcem.store.run_import.import_run_export`; a SAG export (runs or a whole evaluation,
:mod:`sag.evaluation.store_export`) is merged with its debates and call log.  Importing
twice adds nothing.  An older SAG runs export (outcomes only) is read where it lies and
has nothing to import; anything else is refused with one sentence.  Nothing is written
when an export is incomplete or changed.  The panel shows each step as it starts (each
table read and checked, the rows shaped, each table written or merged) with a bar, so a
long import never sits on one line.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from common.db import StoreError, default_db_path
from common.errors import ProjectError
from common.work import Progress
from common.table_export import MANIFEST, export_format
from studio.literal import literal
from studio.store_scope import open_for_run

__all__ = ["ImportOutcome", "import_export", "import_panel"]


@dataclass(frozen=True)
class ImportOutcome:
    """``kind``: success, info (nothing to do) or error; ``message``: one or two sentences."""

    kind: str
    message: str


def _dcem(folder: Path, db_path: str, progress: Progress | None) -> ImportOutcome:
    from dcem.store.database import Store
    from dcem.store.run_import import import_run_export

    ids = import_run_export(open_for_run(Store, db_path), folder, progress)
    if not ids:
        return ImportOutcome("info", "The store already holds every run of this export; nothing was added.")
    return ImportOutcome("success", f"Imported {len(ids)} D-CEM run(s): {', '.join(ids)}. They open on the "
                                    "Overview, Loss and thresholds, Case walkthrough and Experiments pages.")


def _sag(folder: Path, db_path: str, progress: Progress | None) -> ImportOutcome:
    from sag.evaluation.store_export import import_store_export, read_store_manifest
    from sag.store.tables import SagStore

    manifest = read_store_manifest(folder)
    report = import_store_export(open_for_run(SagStore, db_path), folder, progress=progress)
    if not report.added:
        return ImportOutcome("info", "The store already holds every row of this export; nothing was added.")
    what = (f"the evaluation(s) {', '.join(manifest['evaluations'])} (Group evaluation page)"
            if manifest["evaluations"] else f"{len(manifest.get('runs') or [])} SAG run(s) (Agent group page)")
    return ImportOutcome("success", f"Imported {report.added:,} rows: {what}, with every debate and its call log.")


def import_export(folder_text: str, db_path: str | None = None, progress: Progress | None = None) -> ImportOutcome:
    """Import the export in the folder ``folder_text`` into the store (see the module
    docstring); ``progress(done, total, label)`` hears of each step."""
    from dcem.store.export_manifest import FORMAT as DCEM_FORMAT
    from sag.evaluation.store_export import FORMAT as SAG_FORMAT
    from sag.run_export import FORMAT as SAG_RUNS_FORMAT

    text = folder_text.strip()
    if not text:
        return ImportOutcome("error", "Give the folder of an export (the one holding manifest.json).")
    folder = Path(text).expanduser()
    if not (folder / MANIFEST).is_file():
        return ImportOutcome("error", f"{folder} holds no {MANIFEST}: give the folder an export command wrote.")
    fmt, path = export_format(folder), db_path or str(default_db_path())
    try:
        if fmt == DCEM_FORMAT:
            return _dcem(folder, path, progress)
        if fmt == SAG_FORMAT:
            return _sag(folder, path, progress)
    except (ProjectError, StoreError) as exc:
        return ImportOutcome("error", f"Nothing was imported: {exc}")
    if fmt == SAG_RUNS_FORMAT:
        return ImportOutcome("info", "This is an older SAG runs export (outcomes only): the Agent group page reads "
                                     "it where it lies, and it has no debates to import. `python -m sag export` "
                                     "writes the full form.")
    known = ", ".join((DCEM_FORMAT, SAG_FORMAT))
    return ImportOutcome("error", f"{folder / MANIFEST} names the format {fmt!r}; this version imports {known}.")


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
