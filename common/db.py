"""Opening the project's DuckDB file.

The file defaults to ``data/dcem.duckdb`` in the project, is overridden by the
environment variable ``DCEM_DB`` and by an explicit path.  DuckDB allows one writing
process per file; when another program holds it, opening says so in one line.
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import duckdb

from common.errors import ProjectError

__all__ = ["Database", "StoreError", "default_db_path", "git_revision", "PROJECT_ROOT"]

PROJECT_ROOT = Path(__file__).resolve().parents[1]


class StoreError(ProjectError):
    """The store cannot be opened, is busy, or holds no such record."""


def default_db_path() -> Path:
    """``$DCEM_DB`` if set, else ``data/dcem.duckdb`` in the project directory."""
    env = os.environ.get("DCEM_DB")
    return Path(env) if env else PROJECT_ROOT / "data" / "dcem.duckdb"


def git_revision() -> str:
    """The project's current git commit, or ``"unknown"`` outside a checkout."""
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=PROJECT_ROOT, capture_output=True,
                             text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() if out.returncode == 0 and out.stdout.strip() else "unknown"


def connect(path: Path, *, read_only: bool) -> duckdb.DuckDBPyConnection:
    """A connection to ``path``; a file held by another process becomes a clear StoreError."""
    if not read_only:
        path.parent.mkdir(parents=True, exist_ok=True)
    try:
        return duckdb.connect(str(path), read_only=read_only)
    except duckdb.Error as exc:
        if "lock" in str(exc).lower():
            raise StoreError(
                f"the store {path.name} is in use by another program (a running dashboard or "
                "experiment); wait for it to finish, run the experiment from the dashboard's "
                "Experiments page, or use another file with --db / DCEM_DB") from None
        raise StoreError(f"cannot open the store {path}: {exc}") from None


class Database:
    """A connection to the project's DuckDB file; use as a context manager.

    Subclasses add their package's tables by applying its migrations on open (see
    :func:`common.migrations.migrate`); ``con`` is the DuckDB connection.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *, read_only: bool = False) -> None:
        self.path = Path(path) if path is not None else default_db_path()
        self.read_only = read_only
        self.con = connect(self.path, read_only=read_only)

    def session(self) -> "Database":
        """A view of the same database on its own cursor, for use from another thread.

        DuckDB connections are not shared between threads; a cursor is a separate
        connection to the same database instance, so sessions of one server process
        can read and write concurrently without reopening the file.
        """
        view = object.__new__(type(self))
        view.__dict__.update(self.__dict__)
        view.con = self.con.cursor()
        return view

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> "Database":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
