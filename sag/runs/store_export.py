"""SAG runs and evaluations as a compact export: their tables in zstd-compressed Parquet.

The one export form of SAG results (``python -m sag export`` for chosen runs,
``python -m sag export-store`` for a whole store).  A store holds every debate (each
message, passage, flag and mediator round), every outcome and failure, an evaluation's
parts and costs, and the call log that lets the same runs play again without asking a
model.  :func:`write_store_export` writes the rows of the chosen runs (all SAG runs when
none are named) as ``<table>.parquet`` files beside a ``manifest.json`` (format
:data:`FORMAT`: each file's rows, size and sha256, the runs and evaluations it holds and
the schema migrations of the store it came from), small enough to commit; a packed store
file is not, and git would keep every version of it.

:func:`import_store_export` checks the manifest's entries (table names before any file is
touched), every file against the manifest and each file's columns against its table in
the current schema (:mod:`common.export_schema`: the same type, no unknown column; a
column the export lacks takes its default), loads the tables into a temporary store
(:func:`common.scratch.scratch_folder`: removed at the end, or by the next import after
a kill) and merges that into the target (:func:`common.store_merge.merge_store`: rows
the target lacks, every row checked, one transaction), so importing twice adds nothing.
Ctrl-C at any point leaves the target as it was.  Paths and run ids reach DuckDB as
bound parameters only.
"""
from __future__ import annotations

import contextlib
import datetime as _dt
from pathlib import Path
from typing import Any, Iterator, Sequence


from common.db import default_db_path
from common.errors import InputError
from common.export_schema import check_entries, check_file, check_unlisted, load_files
from common.interrupts import is_interrupt
from common.scratch import scratch_folder
from common.store_merge import MergeReport, merge_store
from common.table_export import MANIFEST, make_out_folder, read_manifest, write_manifest
from common.work import Progress
from sag.store.export_rows import CALL_LOG
from sag.store.merge_checks import sag_store_checks
from sag.store.tables import SagStore

__all__ = ["FORMAT", "CALL_LOG", "write_store_export", "read_store_manifest", "import_store_export",
           "import_into_store", "load_store_export"]

FORMAT = "sag-store-export/1"


def write_store_export(store_path: str | Path, out: str | Path, *, command: str,
                       run_ids: Sequence[str] | None = None) -> Path:
    """Export the SAG rows of ``run_ids`` (every SAG run when None) of the store file
    ``store_path`` (read only) into ``out``; returns the manifest's path.  Refuses a store
    that is not a SAG store or holds no SAG run, a run id named twice or not stored, and
    an ``out`` folder that holds other files or cannot be written."""
    out = Path(out)
    if run_ids is not None and (not run_ids or len(set(run_ids)) != len(run_ids)):
        raise InputError("runs", "give at least one run id, each once")
    with SagStore(store_path, read_only=True) as store:
        if not store.is_sag_store():
            raise InputError("store", f"{store_path} is not a SAG store (it has no sag_runs table); a D-CEM "
                                      "store's runs are exported with `python -m dcem export`")
        stored = store.run_ids()
        if not stored:
            raise InputError("store", f"{store_path} holds no SAG run to export")
        unknown = [r for r in (run_ids or ()) if r not in stored]
        if unknown:
            raise InputError("runs", f"no SAG run {unknown[0]!r} in {store_path}")
        with store.export_selection(run_ids) as chosen:
            tables = chosen.tables()
            make_out_folder(out, tuple(f"{t}.parquet" for t in tables))
            files = [chosen.copy(table, out, level=19) for table in tables]
            evaluations = chosen.evaluations()
            exported = chosen.run_ids()
        migrations = store.migration_names()
    manifest = {"format": FORMAT, "created_at": _dt.datetime.now().replace(microsecond=0).isoformat(),
                "command": command, "runs": exported, "evaluations": evaluations, "migrations": migrations,
                "files": files}
    return write_manifest(out, manifest)


def _export_table(table: str) -> bool:
    return table.startswith("sag_") or table == CALL_LOG


def read_store_manifest(folder: str | Path) -> dict[str, Any]:
    """The export's manifest: its file entries checked before any file is touched (SAG
    tables and the call log, once each, as ``<table>.parquet``), no Parquet file of the
    folder left unlisted, then every file present with the manifest's sha256 and size;
    InputError naming the first that is not."""
    folder = Path(folder)
    where = folder / MANIFEST
    manifest = read_manifest(folder, FORMAT)
    entries = check_entries(manifest.get("files"), str(where), allowed=_export_table)
    for key in ("evaluations", "runs"):
        listed = manifest.get(key, [] if key == "runs" else None)
        if not isinstance(listed, list) or not all(isinstance(v, str) for v in listed):
            raise InputError("export", f"{where}: {key} must list the {key} it holds by id")
    check_unlisted(folder, entries)
    for entry in entries.values():
        check_file(folder, entry)
    return manifest


def _load(raw: Path, folder: Path, files: Sequence[dict[str, Any]], progress: Progress | None = None) -> None:
    """A store of the current schema at ``raw`` holding the export's rows, each file's
    columns checked against its table first (``progress`` hears of each file)."""
    with SagStore(raw) as store:
        load_files(store, folder, files, progress)


def load_store_export(folder: str | Path, raw: str | Path, progress: Progress | None = None) -> None:
    """The export in ``folder``, checked (:func:`read_store_manifest`), loaded into the new
    store file ``raw`` (each file's columns checked against its table first)."""
    folder = Path(folder)
    _load(Path(raw), folder, read_store_manifest(folder)["files"], progress)


@contextlib.contextmanager
def _unpacked(folder: Path, eval_id: str | None, progress: Progress | None = None) -> Iterator[Path]:
    """The export in ``folder`` checked and loaded into a scratch store (its path), which
    is removed when the block ends."""
    manifest = read_store_manifest(folder)
    if eval_id is not None and eval_id not in manifest["evaluations"]:
        raise InputError("export", f"{folder.name} does not hold the evaluation {eval_id!r}; nothing was imported")
    try:
        with scratch_folder("sag-export-") as tmp:
            raw = tmp / "export.duckdb"
            _load(raw, folder, manifest["files"], progress)
            yield raw
    except RuntimeError as exc:  # Ctrl-C inside a DuckDB statement
        if is_interrupt(exc):
            raise KeyboardInterrupt from None
        raise


def import_store_export(target: SagStore, folder: str | Path, eval_id: str | None = None,
                        progress: Progress | None = None) -> MergeReport:
    """Merge the export in ``folder`` into ``target`` (rows it lacks, in one transaction);
    with ``eval_id``, the export must hold that evaluation.  InputError for an export that
    is incomplete, changed or malformed; StoreError from the merge; KeyboardInterrupt for
    Ctrl-C.  The target is unchanged after any of them.  ``progress(done, total, label)``
    hears of each file read and each table merged."""
    with _unpacked(Path(folder), eval_id, progress) as raw:
        return merge_store(target, raw, sag_store_checks(), progress)


def import_into_store(db: str | Path | None, folder: str | Path) -> MergeReport:
    """:func:`import_store_export` into the store file ``db`` (None: the default store),
    which is opened (or created) only once the export is checked and loaded; a store this
    import created is removed again when the merge refuses a row or is interrupted, so a
    refused import leaves no new store behind (its empty lock file stays, as every
    store's does)."""
    path = Path(db) if db is not None else default_db_path()
    new = not path.exists()
    with _unpacked(Path(folder), None) as raw:
        try:
            with SagStore(path) as store:
                return merge_store(store, raw, sag_store_checks())
        except BaseException:
            if new:
                for made in (path, path.with_name(path.name + ".wal")):
                    made.unlink(missing_ok=True)
            raise
