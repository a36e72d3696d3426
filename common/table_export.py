"""Compact result exports: a ``manifest.json`` beside Parquet tables, each table's rows,
size and sha256 in the manifest, so a reader can refuse any file that is missing, changed
or malformed with one line naming it.

:func:`write_table` writes one table and returns its manifest entry; :func:`write_manifest`
writes the manifest last (a crash leaves no manifest, so no half export is ever read);
:func:`read_manifest` and :func:`read_tables` read them back, checking each entry.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from common.errors import InputError

__all__ = ["MANIFEST", "export_format", "file_sha256", "export_folders", "write_table", "copy_query", "write_manifest",
           "read_manifest", "read_tables", "check_out_folder"]

MANIFEST = "manifest.json"


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def export_folders(folder: Path) -> list[Path]:
    """The export folders inside ``folder`` (those holding a manifest), by name; none when
    ``folder`` does not exist."""
    folder = Path(folder)
    return sorted(p for p in folder.iterdir() if (p / MANIFEST).is_file()) if folder.is_dir() else []


def check_out_folder(out: Path, allowed: Sequence[str]) -> None:
    """Refuse an ``out`` folder that holds files other than ``allowed`` (an export never
    mixes with other files, and rewriting one replaces only its own)."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise InputError("out", f"{out} is a file; give an empty or new folder")
    if out.exists() and any(p.name not in (MANIFEST, *allowed) for p in out.iterdir()):
        raise InputError("out", f"{out} holds other files; give an empty or new folder")


def write_table(folder: Path, table: str, frame: pd.DataFrame) -> dict[str, Any]:
    """Write ``<folder>/<table>.parquet`` (through a partial file) and return its entry."""
    path = Path(folder) / f"{table}.parquet"
    tmp = path.with_name(f".{path.name}.{os.getpid()}.partial")
    frame.reset_index(drop=True).to_parquet(tmp, index=False)
    os.replace(tmp, path)
    return {"name": path.name, "table": table, "rows": int(len(frame)), "size_bytes": path.stat().st_size,
            "sha256": file_sha256(path)}


def copy_query(con: Any, query: str, folder: Path, table: str, *, level: int | None = None) -> dict[str, Any]:
    """Write the rows of ``query`` (a DuckDB connection's) as ``<folder>/<table>.parquet``,
    zstd-compressed (at ``level`` when given), through a partial file; return its entry."""
    path = Path(folder) / f"{table}.parquet"
    tmp = path.with_name(f".{path.name}.{os.getpid()}.partial")
    options = "FORMAT PARQUET, COMPRESSION ZSTD" + (f", COMPRESSION_LEVEL {int(level)}" if level is not None else "")
    quoted = str(tmp).replace("'", "''")
    con.execute(f"COPY ({query}) TO '{quoted}' ({options})")
    os.replace(tmp, path)
    rows = con.execute(f"SELECT count(*) FROM read_parquet('{str(path).replace(chr(39), chr(39) * 2)}')").fetchone()[0]
    return {"name": path.name, "table": table, "rows": int(rows), "size_bytes": path.stat().st_size,
            "sha256": file_sha256(path)}


def write_manifest(folder: Path, manifest: dict[str, Any]) -> Path:
    path = Path(folder) / MANIFEST
    tmp = path.with_name(f".{path.name}.{os.getpid()}.partial")
    tmp.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def export_format(folder: Path) -> str | None:
    """The ``format`` a folder's manifest names (None when there is no readable manifest
    with a format: :func:`read_manifest` then says what is wrong)."""
    try:
        manifest = json.loads((Path(folder) / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    found = manifest.get("format") if isinstance(manifest, dict) else None
    return found if isinstance(found, str) else None


def read_manifest(folder: Path, fmt: str) -> dict[str, Any]:
    """The manifest of the export in ``folder``, whose format must be ``fmt``."""
    where = Path(folder) / MANIFEST
    try:
        manifest = json.loads(where.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("export", f"{where} is missing") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError("export", f"{where} is not readable JSON ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != fmt:
        raise InputError("export", f"{where}: format must be {fmt!r}")
    return manifest


def read_tables(folder: Path, manifest: dict[str, Any], tables: Sequence[str]) -> dict[str, pd.DataFrame]:
    """Every table the manifest's ``files`` list (exactly ``tables``, once each), each
    checked against its sha256 and row count."""
    folder, where = Path(folder), Path(folder) / MANIFEST
    files = manifest.get("files")
    if not isinstance(files, list) or not all(isinstance(f, dict) for f in files) \
            or sorted(str(f.get("table")) for f in files) != sorted(tables):
        raise InputError("export", f"{where}: files must list the tables {', '.join(tables)} once each")
    frames: dict[str, pd.DataFrame] = {}
    for entry in files:
        if entry.get("name") != f"{entry['table']}.parquet":
            raise InputError("export", f"{where}: the file of table {entry['table']} must be {entry['table']}.parquet")
        path = folder / entry["name"]
        if path.is_symlink():
            raise InputError("export", f"{path} is a link; an export holds its own files")
        if not path.is_file() or file_sha256(path) != entry.get("sha256"):
            raise InputError("export", f"{path} is missing or changed (its sha256 is not the manifest's)")
        try:
            frame = pd.read_parquet(path)
        except Exception as exc:  # a file with the manifest's hash that pyarrow cannot read
            raise InputError("export", f"{path} is not a readable Parquet file ({type(exc).__name__})") from None
        if len(frame) != entry.get("rows"):
            raise InputError("export", f"{path} has {len(frame)} rows, the manifest says {entry.get('rows')}")
        frames[entry["table"]] = frame
    return frames
