"""Compact result exports: a ``manifest.json`` beside Parquet tables, each table's rows,
size and sha256 in the manifest, so a reader can refuse any file that is missing, changed
or malformed with one line naming it.

:func:`write_table` writes one table in the schema its reader declares and returns its
manifest entry; :func:`copy_query` writes a query's rows; :func:`write_manifest` writes
the manifest last (a crash leaves no manifest, so no half export is ever read);
:func:`read_manifest` (strict JSON, bounded nesting) and :func:`read_tables` read them
back, every entry, file, column and row count checked by :mod:`common.export_schema`.
Paths reach DuckDB as bound parameters only.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping, Sequence

import duckdb
import pandas as pd

from common import strict_json
from common.errors import InputError
from common.export_schema import Schema, check_entries, file_sha256, quote, read_frame
from common.fields import Instance, Satisfies, check, fixed

__all__ = ["MANIFEST", "export_format", "file_sha256", "export_folders", "write_table", "copy_query", "write_manifest",
           "read_manifest", "read_tables", "check_out_folder", "make_out_folder", "writable_folder"]

MANIFEST = "manifest.json"
_MAX_MANIFEST_BYTES = 16 << 20  # a manifest lists a few files and runs; far below this


def export_folders(folder: Path) -> list[Path]:
    """The export folders inside ``folder`` (those holding a manifest), by name; none when
    ``folder`` does not exist."""
    folder = Path(folder)
    return sorted(p for p in folder.iterdir() if (p / MANIFEST).is_file()) if folder.is_dir() else []


def check_out_folder(out: Path, allowed: Sequence[str]) -> None:
    """Refuse an ``out`` folder that holds files other than ``allowed`` (an export never
    mixes with other files, and rewriting one replaces only its own)."""
    out = Path(out)
    try:
        if out.exists() and not out.is_dir():
            raise InputError("out", f"{out} is a file; give an empty or new folder")
        if out.exists() and any(p.name not in (MANIFEST, *allowed) for p in out.iterdir()):
            raise InputError("out", f"{out} holds other files; give an empty or new folder")
    except OSError as exc:
        raise InputError("out", f"cannot use {out}: {exc.strerror or exc}") from None


def writable_folder(folder: str | Path, field: str = "out") -> Path:
    """``folder``, created (with its parents) if need be, once a file could be written in
    it; InputError on ``field`` naming the folder otherwise."""
    if not str(folder).strip():
        raise InputError(field, "give a folder to write to")
    folder = Path(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".probe.{os.getpid()}.partial"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise InputError(field, f"cannot write to {folder}: {exc.strerror or exc}") from None
    return folder


def make_out_folder(out: str | Path, allowed: Sequence[str]) -> Path:
    """:func:`check_out_folder`, then :func:`writable_folder`: the export's folder, ready
    before any export work is done."""
    if not str(out).strip():
        raise InputError("out", "give the folder to write the export to")
    check_out_folder(Path(out), allowed)
    return writable_folder(Path(out))


def _entry(path: Path, table: str, rows: int) -> dict[str, Any]:
    return {"name": path.name, "table": table, "rows": int(rows), "size_bytes": path.stat().st_size,
            "sha256": file_sha256(path)}


def write_table(folder: Path, table: str, frame: pd.DataFrame, schema: Schema) -> dict[str, Any]:
    """Write ``<folder>/<table>.parquet`` (zstd, through a partial file) with exactly the
    columns and DuckDB types of ``schema`` (the one its reader checks) and return its entry."""
    if list(frame.columns) != [c for c, _ in schema]:
        raise ValueError(f"the {table} frame has the columns {list(frame.columns)}, its schema "
                         f"{[c for c, _ in schema]}")
    path = Path(folder) / f"{table}.parquet"
    tmp = path.with_name(f".{path.name}.{os.getpid()}.partial")
    columns = ", ".join(f"CAST({quote(c)} AS {t}) AS {quote(c)}" for c, t in schema)
    con = duckdb.connect()
    try:
        con.execute("SET enable_progress_bar = false")
        con.register("_export_frame", frame.reset_index(drop=True))
        con.execute(f"COPY (SELECT {columns} FROM _export_frame) TO ? (FORMAT PARQUET, COMPRESSION ZSTD)",  # noqa: S608
                    [str(tmp)])
    finally:
        con.close()
    os.replace(tmp, path)
    return _entry(path, table, len(frame))


def copy_query(con: Any, query: str, folder: Path, table: str, *, level: int | None = None) -> dict[str, Any]:
    """Write the rows of ``query`` (a DuckDB connection's) as ``<folder>/<table>.parquet``,
    zstd-compressed (at ``level`` when given), through a partial file; return its entry."""
    path = Path(folder) / f"{table}.parquet"
    tmp = path.with_name(f".{path.name}.{os.getpid()}.partial")
    options = "FORMAT PARQUET, COMPRESSION ZSTD" + (f", COMPRESSION_LEVEL {int(level)}" if level is not None else "")
    con.execute(f"COPY ({query}) TO ? ({options})", [str(tmp)])  # noqa: S608 (the caller's fixed query)
    os.replace(tmp, path)
    rows = con.execute("SELECT count(*) FROM read_parquet(?)", [str(path)]).fetchone()[0]
    return _entry(path, table, rows)


def write_manifest(folder: Path, manifest: dict[str, Any]) -> Path:
    path = Path(folder) / MANIFEST
    tmp = path.with_name(f".{path.name}.{os.getpid()}.partial")
    tmp.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def _load(where: Path) -> Any:
    """The manifest at ``where`` parsed as strict JSON (bounded size and nesting)."""
    if where.is_symlink():
        raise InputError("export", f"{where} is a link; an export holds its own files")
    try:
        with open(where, "rb") as fh:
            data = fh.read(_MAX_MANIFEST_BYTES + 1)
    except FileNotFoundError:
        raise InputError("export", f"{where} is missing") from None
    except OSError as exc:
        raise InputError("export", f"cannot read {where}: {exc.strerror or exc}") from None
    if len(data) > _MAX_MANIFEST_BYTES:
        raise InputError("export", f"{where} is larger than {_MAX_MANIFEST_BYTES >> 20} MB; it is not a manifest")
    try:
        return strict_json.loads(data.decode("utf-8"), str(where))
    except UnicodeDecodeError:
        raise InputError("export", f"{where} is not UTF-8 text") from None
    except InputError as exc:  # "is not valid JSON: ...", "is nested too deeply ...", "number ... is too large"
        problem = str(exc)[len(exc.field) + 2:]
        raise InputError("export", f"{where}{' ' if problem.startswith('is ') else ': '}{problem}") from None


def export_format(folder: Path) -> str | None:
    """The ``format`` a folder's manifest names (None when there is no readable manifest
    with a format: :func:`read_manifest` then says what is wrong)."""
    try:
        manifest = _load(Path(folder) / MANIFEST)
    except InputError:
        return None
    found = manifest.get("format") if isinstance(manifest, dict) else None
    return found if isinstance(found, str) else None


def read_manifest(folder: Path, fmt: str) -> dict[str, Any]:
    """The manifest of the export in ``folder``, whose format must be ``fmt``."""
    where = Path(folder) / MANIFEST
    manifest = _load(where)
    return check("export", manifest, Instance(dict), Satisfies(lambda m: m.get("format") == fmt),
                 msg=fixed(f"{where}: format must be {fmt!r}"), error=InputError)


def read_tables(folder: Path, manifest: dict[str, Any], schemas: Mapping[str, Schema], *,
                required: Mapping[str, Sequence[str]] | None = None) -> dict[str, pd.DataFrame]:
    """Every table the manifest's ``files`` list (exactly those of ``schemas``, once
    each), each checked (:mod:`common.export_schema`: the entries before any file, then
    each file's sha256 and size, its columns against its schema, its row count and the
    ``required`` columns of each table without an empty value)."""
    entries = check_entries(manifest.get("files"), str(Path(folder) / MANIFEST), tuple(schemas))
    return {table: read_frame(Path(folder), entries[table], schemas[table], (required or {}).get(table, ()))
            for table in schemas}
