"""The checks every export reader makes of an export's files, in one place.

An export is a folder: ``manifest.json`` lists each table's file (name, rows, size,
sha256) beside the Parquet files.  Every reader (D-CEM run exports, SAG run and store
exports, training exports) checks, in this order and before it reads a row:

1. the manifest's file entries (:func:`check_entries`): a table name is a plain word of
   lowercase letters, digits and ``_``, its file is ``<table>.parquet`` in the folder
   itself, rows and size are whole numbers, the sha256 is 64 hex digits.  No file is
   touched before every entry holds, so ``sag_x/../../outside`` is refused by its name;
2. each file (:func:`check_file`): not a link, a regular file, the manifest's sha256 and
   size;
3. its columns (:func:`check_columns`) against the schema the reader declares once
   (:data:`Schema`: column names and DuckDB types): each column with exactly its type
   ("column 'rounds' is DOUBLE, expected INTEGER"), no unknown column, none missing
   unless the reader allows it.  A column without any value (Parquet's null type, which
   pandas writes for an empty text column) passes as any type and is read as the
   declared one;
4. its row count against the manifest (:func:`check_rows`).

Files are read with DuckDB's ``read_parquet(?)``, the path always a bound parameter.
"""
from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import duckdb
import pandas as pd

from common.errors import InputError
from common.fields import Instance, Seq, Text, Whole, check

__all__ = ["Schema", "file_sha256", "NULL_TYPE", "TABLE_NAME", "refuse", "check_entries", "check_unlisted",
           "check_file", "parquet_columns", "check_columns", "select_sql", "check_rows", "read_frame", "quote"]

Schema = tuple[tuple[str, str], ...]  # (column, DuckDB type) in the order the writer writes them
NULL_TYPE = '"NULL"'  # DuckDB's name for Parquet's null type: a column that holds no value
TABLE_NAME = re.compile(r"[a-z][a-z0-9_]{0,62}")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_ENTRY = ("name", "table", "rows", "size_bytes", "sha256")


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def refuse(label: str, problem: str) -> InputError:
    """The one-line refusal of an export's file or field ``label``."""
    return InputError("export", f"{label} {problem}")


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


_FILES = Seq(min_len=1, types=(list,), msg="files must be a non-empty list, got {got}")
_OBJECT = Instance(dict, msg="must be an object, got {got}")
_TABLE = Text(nonempty=False, pattern=TABLE_NAME, msg="must be a plain table name (lowercase letters, digits and _), "
                                                      "got {got}")
_FILE_NAME = Text(nonempty=False, printable=True, pattern=re.compile(r"(?!\.\.?\Z)[^/\\\0:]+"),
                  msg="must be a plain file name inside the export folder, got {got}")
_SHA = Text(nonempty=False, pattern=_SHA256, msg="must be 64 lowercase hex digits, got {got}")


def check_entries(files: Any, where: str, tables: Sequence[str] | None = None,
                  allowed: Callable[[str], bool] | None = None) -> dict[str, dict[str, Any]]:
    """The manifest's ``files`` (read from ``where``) by table, each entry checked (see the
    module docstring); ``tables``: exactly these, once each; ``allowed``: which table
    names this kind of export may hold.  No file is read here."""
    check(f"{where}:", files, _FILES, error=refuse, show=_show)
    listed: dict[str, dict[str, Any]] = {}
    for i, entry in enumerate(files):
        field = f"{where}: files[{i}]"
        check(field, entry, _OBJECT, error=refuse, show=_show)
        unknown = [k for k in entry if k not in _ENTRY]
        if unknown:
            raise refuse(field, f"has an unknown field {_show(unknown[0])}")
        missing = [k for k in _ENTRY if k not in entry]
        if missing:
            raise refuse(field, f"lacks the field {missing[0]!r}")
        table = entry["table"]
        if tables is not None and table not in tables:
            raise refuse(f"{field}.table", f"must be one of {', '.join(tables)}, got {_show(table)}")
        check(f"{field}.table", table, _TABLE, error=refuse, show=_show)
        if allowed is not None and not allowed(table):
            raise refuse(f"{field}.table", f"is not a table of this export, got {_show(table)}")
        if table in listed:
            raise refuse(f"{field}.table", f"lists the table {table!r} twice")
        name = check(f"{field}.name", entry["name"], _FILE_NAME, error=refuse, show=_show)
        if name != f"{table}.parquet":
            raise refuse(f"{field}.name", f"must be {table}.parquet for the table {table!r}, "
                                          f"got {_show(entry['name'])}")
        for key in ("rows", "size_bytes"):
            check(f"{field}.{key}", entry[key], Whole(0), error=refuse, show=_show)
        check(f"{field}.sha256", entry["sha256"], _SHA, error=refuse, show=_show)
        listed[table] = entry
    absent = [t for t in tables or () if t not in listed]
    if absent:
        raise refuse(f"{where}:", f"files lists no file for {', '.join(absent)}")
    return listed


def check_unlisted(folder: Path, entries: Mapping[str, Mapping[str, Any]]) -> None:
    """Refuse a Parquet file in ``folder`` that the manifest does not list: where the
    tables an export holds vary (a SAG store export lists those with rows), dropping a
    table's entry would otherwise drop its rows without a word."""
    listed = {str(e["name"]) for e in entries.values()}
    for path in sorted(Path(folder).glob("*.parquet")):
        if path.name not in listed:
            raise refuse(str(path), "is in the export folder but not in its manifest; an export folder holds its "
                                    "manifest's files only")


def check_file(folder: Path, entry: Mapping[str, Any], label: str | None = None) -> Path:
    """The file of a checked entry, refused (named ``label``, default its path) when it is
    a link, missing, not a regular file, or differs from the manifest's sha256 or size
    (a size of None: not given)."""
    path = Path(folder) / str(entry["name"])
    label = label or str(path)
    if path.is_symlink():
        raise refuse(label, "is a link; an export holds its own files")
    if not path.exists():
        raise refuse(label, f"is listed in the manifest but missing from {folder}")
    if not path.is_file():
        raise refuse(label, "is not a regular file")
    try:
        digest = file_sha256(path)
    except OSError as exc:
        raise refuse(label, f"cannot be read: {exc.strerror or exc}") from None
    if digest != entry["sha256"]:
        raise refuse(label, f"has sha256 {digest[:12]}…, the manifest says {entry['sha256'][:12]}…: "
                            "the file was modified or is corrupt")
    size = path.stat().st_size
    if entry["size_bytes"] is not None and size != entry["size_bytes"]:
        raise refuse(label, f"has {size:,} bytes, the manifest says {entry['size_bytes']:,}: the manifest is wrong")
    return path


def parquet_columns(con: duckdb.DuckDBPyConnection, path: Path, label: str) -> list[tuple[str, str]]:
    """(column, DuckDB type) of the Parquet file ``path``; refused when DuckDB cannot read it."""
    try:
        rows = con.execute("DESCRIBE SELECT * FROM read_parquet(?)", [str(path)]).fetchall()
    except duckdb.Error as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise refuse(label, f"cannot be read: {first}") from None
    return [(str(r[0]), str(r[1])) for r in rows]


def check_columns(found: Sequence[tuple[str, str]], want: Schema, label: str, *, ordered: bool = True,
                  may_lack: Iterable[str] = ()) -> None:
    """Refuse the columns ``found`` (of the file ``label``) unless they are ``want``'s:
    no unknown or repeated column, none missing except those of ``may_lack``, each of
    its declared type (or of the null type), in the declared order when ``ordered``."""
    names = [c for c, _ in found]
    twice = next((c for c in names if names.count(c) > 1), None)
    if twice is not None:
        raise refuse(label, f"has the column {twice!r} twice")
    have, need, optional = dict(found), dict(want), set(may_lack)
    missing = [c for c in need if c not in have and c not in optional]
    if missing:
        raise refuse(label, f"lacks the column {missing[0]!r}")
    extra = [c for c in names if c not in need]
    if extra:
        raise refuse(label, f"has an unknown column {extra[0]!r}")
    wrong = [c for c in need if c in have and have[c] not in (need[c], NULL_TYPE)]
    if wrong:
        raise refuse(label, f"column {wrong[0]!r} is {have[wrong[0]]}, expected {need[wrong[0]]}")
    if ordered and names != [c for c in need if c in have]:
        raise refuse(label, "has its columns in another order")


def select_sql(found: Sequence[tuple[str, str]], want: Schema, *, fill: bool = True) -> str:
    """``SELECT`` of a checked file (``read_parquet(?)``): each declared column as its
    declared type; a column the file lacks as empty (``fill``) or left out."""
    have = dict(found)
    parts = [f"CAST({quote(c)} AS {t}) AS {quote(c)}" if c in have else f"CAST(NULL AS {t}) AS {quote(c)}"
             for c, t in want if c in have or fill]
    return f"SELECT {', '.join(parts)} FROM read_parquet(?)"  # noqa: S608 (declared names and types)


def check_rows(label: str, count: int, rows: int) -> None:
    if count != rows:
        raise refuse(label, f"holds {count:,} rows, the manifest says {rows:,}")


def read_frame(folder: Path, entry: Mapping[str, Any], schema: Schema, required: Sequence[str] = ()) -> pd.DataFrame:
    """The table of a checked entry as a DataFrame of the declared columns and types,
    after every check above (file, columns, rows) and with no empty value in the
    ``required`` columns."""
    path = check_file(folder, entry)
    label = str(path)
    con = duckdb.connect()
    try:
        con.execute("SET enable_progress_bar = false")
        found = parquet_columns(con, path, label)
        check_columns(found, schema, label)
        try:
            con.execute(f"CREATE TEMP TABLE t AS {select_sql(found, schema)}", [str(path)])  # noqa: S608
        except duckdb.Error as exc:
            raise refuse(label, f"cannot be read: {str(exc).splitlines()[0]}") from None
        tests = "".join(f", count(*) - count({quote(c)})" for c in required)
        count, *empty = con.execute(f"SELECT count(*){tests} FROM t").fetchone()  # noqa: S608 (declared names)
        check_rows(label, count, int(entry["rows"]))
        for column, n in zip(required, empty):
            if n:
                raise refuse(label, f"has an empty {column!r}")
        return con.execute("SELECT * FROM t").df()
    finally:
        con.close()


def load_files(store: Any, folder: Path, files: Sequence[Mapping[str, Any]], progress: Any = None) -> None:
    """Append each checked file entry's Parquet rows to its table of ``store`` (a
    :class:`common.db.Database` of the current schema): each file's columns checked against
    its table first, its rows counted after; one line naming the file otherwise
    (``progress(done, total, label)`` hears of each file; Ctrl-C inside DuckDB stays Ctrl-C)."""
    from common.interrupts import is_interrupt

    schemas = store.table_schemas()
    for i, entry in enumerate(files):
        table, path = str(entry["table"]), Path(folder) / str(entry["name"])
        if progress is not None:
            progress(i, len(files), f"reading and checking {entry['name']}")
        if table not in schemas:
            raise refuse(str(path), f"holds the table {table}, which this version does not have; nothing was "
                                    "imported")
        want, may_lack = schemas[table]
        found = store.parquet_columns(path, str(path))
        check_columns(found, want, str(path), ordered=False, may_lack=may_lack)
        try:
            store.insert_parquet(table, path, found, want)
        except duckdb.Error as exc:
            if is_interrupt(exc):
                raise KeyboardInterrupt from None
            reason = str(exc).splitlines()[0]
            raise refuse(str(path), f"cannot be read into {table} ({reason}); nothing was imported") from None
        check_rows(str(path), store.row_count(table), int(entry["rows"]))

