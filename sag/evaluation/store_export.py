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

:func:`import_store_export` checks every file against the manifest, loads the tables into
a temporary store of the current schema (a column the export lacks takes its default) and
merges that into the target (:func:`common.store_merge.merge_store`: rows the target
lacks, every row checked, one transaction), so importing twice adds nothing.
"""
from __future__ import annotations

import datetime as _dt
import tempfile
from pathlib import Path
from typing import Any, Sequence

import duckdb

from common.errors import InputError
from common.store_merge import MergeReport, merge_store
from common.table_export import MANIFEST, check_out_folder, copy_query, file_sha256, read_manifest, write_manifest
from sag.store.merge_checks import sag_store_checks
from sag.store.tables import SagStore

__all__ = ["FORMAT", "CALL_LOG", "write_store_export", "read_store_manifest", "import_store_export"]

FORMAT = "sag-store-export/1"
CALL_LOG = "llm_calls"


def _selection(run_ids: Sequence[str] | None) -> str:
    """The SAG runs an export keeps: the named ones, else every SAG run of the store."""
    if run_ids is None:
        return "SELECT run_id FROM sag_runs"
    return "SELECT unnest(" + _literal(list(run_ids)) + ")"


def _literal(values: Sequence[str]) -> str:
    return "[" + ", ".join("'" + v.replace("'", "''") + "'" for v in values) + "]"


def _source_rows(con: duckdb.DuckDBPyConnection, table: str, runs: str) -> str:
    """The rows of ``table`` an export keeps: those of the chosen runs (``runs``: a query
    of run ids); an evaluation's costs go with its parts; of the call log, the calls of
    those runs (a store shared with D-CEM runs keeps theirs out)."""
    columns = {str(c) for (c,) in con.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_name = ?", [table]).fetchall()}
    order = " ORDER BY run_id, created_at, call_id" if table == CALL_LOG else ""
    if "run_id" in columns:
        return f'SELECT * FROM "{table}" WHERE run_id IN ({runs}){order}'
    if table == "sag_eval_cost":
        return ('SELECT * FROM sag_eval_cost c WHERE EXISTS (SELECT 1 FROM sag_eval_parts p WHERE '
                f"p.eval_id = c.eval_id AND p.group_name = c.group_name AND p.run_id IN ({runs}))")
    return f'SELECT * FROM "{table}"'


def _tables(con: duckdb.DuckDBPyConnection, runs: str) -> list[str]:
    """The SAG tables with rows of the chosen runs, then the call log."""
    names = [str(n) for (n,) in con.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' "
        "AND table_name LIKE 'sag\\_%' ESCAPE '\\' ORDER BY table_name").fetchall()]
    return [n for n in names if con.execute(f"SELECT count(*) FROM ({_source_rows(con, n, runs)})").fetchone()[0]] \
        + [CALL_LOG]


def write_store_export(store_path: str | Path, out: str | Path, *, command: str,
                       run_ids: Sequence[str] | None = None) -> Path:
    """Export the SAG rows of ``run_ids`` (every SAG run when None) of the store file
    ``store_path`` (read only) into ``out``; returns the manifest's path.  Refuses a store
    without SAG runs, a run id named twice or not stored, and an ``out`` folder holding
    other files."""
    out = Path(out)
    if run_ids is not None and (not run_ids or len(set(run_ids)) != len(run_ids)):
        raise InputError("runs", "give at least one run id, each once")
    with SagStore(store_path, read_only=True) as store:
        con = store.con
        stored = {str(r) for (r,) in con.execute("SELECT run_id FROM sag_runs").fetchall()}
        if not stored:
            raise InputError("store", f"{store_path} holds no SAG run to export")
        unknown = [r for r in (run_ids or ()) if r not in stored]
        if unknown:
            raise InputError("runs", f"no SAG run {unknown[0]!r} in {store_path}")
        runs = _selection(run_ids)
        tables = _tables(con, runs)
        check_out_folder(out, tuple(f"{t}.parquet" for t in tables))
        out.mkdir(parents=True, exist_ok=True)
        files = [copy_query(con, _source_rows(con, table, runs), out, table, level=19) for table in tables]
        evaluations = sorted(str(e) for (e,) in con.execute(
            f"SELECT DISTINCT eval_id FROM sag_eval_parts WHERE run_id IN ({runs})").fetchall())
        exported = sorted(str(r) for (r,) in con.execute(runs).fetchall())
        migrations = sorted(str(m) for (m,) in con.execute("SELECT name FROM schema_migrations").fetchall())
    manifest = {"format": FORMAT, "created_at": _dt.datetime.now().replace(microsecond=0).isoformat(),
                "command": command, "runs": exported, "evaluations": evaluations, "migrations": migrations,
                "files": files}
    return write_manifest(out, manifest)


def read_store_manifest(folder: str | Path) -> dict[str, Any]:
    """The export's manifest, its files listed once each as ``<table>.parquet`` and every
    file present with the manifest's sha256; InputError naming the first that is not."""
    folder = Path(folder)
    manifest = read_manifest(folder, FORMAT)
    files = manifest.get("files")
    if not isinstance(files, list) or not files or not all(isinstance(f, dict) for f in files):
        raise InputError("export", f"{folder / MANIFEST}: files must list the export's tables")
    tables = [str(f.get("table")) for f in files]
    if len(set(tables)) != len(tables) or not all(t.startswith("sag_") or t == CALL_LOG for t in tables):
        raise InputError("export", f"{folder / MANIFEST}: files must list SAG tables and the call log once each")
    for entry in files:
        path = folder / f"{entry['table']}.parquet"
        if entry.get("name") != path.name or path.is_symlink() or not path.is_file() \
                or file_sha256(path) != entry.get("sha256"):
            raise InputError("export", f"{path} is missing or changed (its sha256 is not the manifest's)")
    if not isinstance(manifest.get("evaluations"), list):
        raise InputError("export", f"{folder / MANIFEST}: evaluations must list the evaluations it holds")
    return manifest


def _load(raw: Path, folder: Path, files: Sequence[dict[str, Any]]) -> None:
    """A store of the current schema at ``raw`` holding the export's rows."""
    with SagStore(raw) as store:
        known = {str(n) for (n,) in store.con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'").fetchall()}
        for entry in files:
            table, path = str(entry["table"]), folder / str(entry["name"])
            if table not in known:
                raise InputError("export", f"{path}: this version has no table {table}; nothing was imported")
            try:
                store.con.execute(f"INSERT INTO \"{table}\" BY NAME SELECT * FROM read_parquet('{path}')")
            except duckdb.Error as exc:
                reason = str(exc).splitlines()[0]
                raise InputError("export", f"{path} cannot be read into {table} ({reason}); nothing was imported") \
                    from None
            rows = store.con.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]
            if rows != entry.get("rows"):
                raise InputError("export", f"{path} has {rows} rows, the manifest says {entry.get('rows')}")


def import_store_export(target: SagStore, folder: str | Path, eval_id: str | None = None) -> MergeReport:
    """Merge the export in ``folder`` into ``target`` (rows it lacks, in one transaction);
    with ``eval_id``, the export must hold that evaluation.  InputError for an export that
    is incomplete, changed or malformed; StoreError from the merge.  The target is
    unchanged after any of them."""
    folder = Path(folder)
    manifest = read_store_manifest(folder)
    if eval_id is not None and eval_id not in manifest["evaluations"]:
        raise InputError("export", f"{folder.name} does not hold the evaluation {eval_id!r}; nothing was imported")
    with tempfile.TemporaryDirectory(prefix="sag-export-") as tmp:
        raw = Path(tmp) / "export.duckdb"
        _load(raw, folder, manifest["files"])
        return merge_store(target, raw, sag_store_checks())
