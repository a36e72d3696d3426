"""A SAG evaluation's store as a compact export: every table in zstd-compressed Parquet.

The store an evaluation was made in holds every debate (each message, passage, flag and
mediator round), every outcome, the evaluation's parts and costs, and the call log that
lets the same evaluation run again without asking a model.  :func:`write_store_export`
writes all of it as ``<table>.parquet`` files beside a ``manifest.json`` (format
:data:`FORMAT`: each file's rows, size and sha256, the evaluations it holds and the
schema migrations of the store it came from), small enough to commit; a packed store
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
from common.table_export import MANIFEST, check_out_folder, file_sha256, read_manifest, write_manifest
from sag.store.merge_checks import sag_store_checks
from sag.store.tables import SagStore

__all__ = ["FORMAT", "CALL_LOG", "write_store_export", "read_store_manifest", "import_store_export"]

FORMAT = "sag-store-export/1"
CALL_LOG = "llm_calls"
_ZSTD = "(FORMAT parquet, COMPRESSION zstd, COMPRESSION_LEVEL 19)"


def _tables(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The SAG tables with rows, then the call log."""
    names = [str(n) for (n,) in con.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' "
        "AND table_name LIKE 'sag\\_%' ESCAPE '\\' ORDER BY table_name").fetchall()]
    return [n for n in names if con.execute(f'SELECT count(*) FROM "{n}"').fetchone()[0]] + [CALL_LOG]


def _source_rows(table: str) -> str:
    """The rows of ``table`` an export keeps: every SAG row; of the call log, the calls of
    SAG runs (a store shared with D-CEM runs keeps theirs out)."""
    if table == CALL_LOG:
        return f"SELECT * FROM {CALL_LOG} WHERE run_id IN (SELECT run_id FROM sag_runs) ORDER BY run_id, created_at, call_id"
    return f'SELECT * FROM "{table}"'


def write_store_export(store_path: str | Path, out: str | Path, *, command: str) -> Path:
    """Export every SAG table of the store file ``store_path`` (read only) into ``out``;
    returns the manifest's path.  Refuses a store without an evaluation and an ``out``
    folder holding other files."""
    out = Path(out)
    with SagStore(store_path, read_only=True) as store:
        con = store.con
        if not con.execute("SELECT count(*) FROM sag_eval_parts").fetchone()[0]:
            raise InputError("store", f"{store_path} holds no SAG evaluation to export")
        tables = _tables(con)
        check_out_folder(out, tuple(f"{t}.parquet" for t in tables))
        out.mkdir(parents=True, exist_ok=True)
        files = []
        for table in tables:
            path = out / f"{table}.parquet"
            tmp = path.with_name(f".{path.name}.partial")
            con.execute(f"COPY ({_source_rows(table)}) TO '{tmp}' {_ZSTD}")
            tmp.replace(path)
            rows = con.execute(f"SELECT count(*) FROM read_parquet('{path}')").fetchone()[0]
            files.append({"name": path.name, "table": table, "rows": int(rows), "size_bytes": path.stat().st_size,
                          "sha256": file_sha256(path)})
        evaluations = sorted(str(e) for (e,) in con.execute("SELECT DISTINCT eval_id FROM sag_eval_parts").fetchall())
        migrations = sorted(str(m) for (m,) in con.execute("SELECT name FROM schema_migrations").fetchall())
    manifest = {"format": FORMAT, "created_at": _dt.datetime.now().replace(microsecond=0).isoformat(),
                "command": command, "evaluations": evaluations, "migrations": migrations, "files": files}
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
