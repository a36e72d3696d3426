"""Fuzz test of the SAG store export's readers: ``sag import-store FOLDER --db NEW`` and
``sag report --from-export FOLDER`` (in-process through :func:`sag.cli.main`) on damaged
copies of a small export.

Each input is the export with one to three mutations: a column cast to another type, a
column renamed, rows doubled, a file cut short, swapped for another table's, deleted or
replaced by a link -- the manifest's sha256, size and row count updated or not; manifest
entries given bad rows, sizes, hashes, names or table names (``..`` and absolute paths
among them) or dropped; the manifest cut, nested 3,000 deep, given a NaN or not JSON at
all.  Every input must end in exit status 2 with one ``error:`` line, no store created
and no scratch file left, or in exit status 0 with the very rows (or report) of the
intact export.  An accepted damaged export that changes them is a silently wrong result.

The default run tries 25 inputs; ``pytest -m fuzz_large -s`` tries 2,000.
"""
from __future__ import annotations

import itertools
import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import duckdb
import pytest
from hypothesis import settings
from hypothesis import strategies as st

from common.export_schema import file_sha256
from tests.dcem.fuzz_support import COUNTS, DEFAULT, LARGE, run_budget
from tests.sag.cli_fakes import run_cli

from tests.sag.evaluation.small_export import fingerprint, small_export

SURFACE = "sag import-store / report --from-export"
TABLES = ("sag_runs", "sag_items", "sag_outcomes", "sag_messages", "llm_calls")
TYPES = ("VARCHAR", "DOUBLE", "INTEGER", "BIGINT", "BOOLEAN", "VARCHAR[]", "INTEGER[]", "TIMESTAMP")
BAD_VALUES = ("30", -1, 1.5, True, None, [], "sag_x/../../outside_items", "../sag_runs.parquet", "/abs/sag_runs.parquet",
              "SAG_RUNS", "sag_runs.parquet\0", "")
FIELDS = ("rows", "size_bytes", "sha256", "name", "table")


@st.composite
def mutation(draw: st.DrawFn) -> tuple[Any, ...]:
    kind = draw(st.sampled_from(["cast", "cast", "rename", "double", "cut", "swap", "delete", "link", "entry",
                                 "entry", "drop_entry", "json"]))
    table = draw(st.sampled_from(TABLES))
    fix = draw(st.sampled_from(["none", "hash", "all", "all"]))
    if kind == "cast":
        return kind, table, draw(st.integers(0, 30)), draw(st.sampled_from(TYPES)), fix
    if kind in ("rename",):
        return kind, table, draw(st.integers(0, 30)), None, fix
    if kind == "cut":
        return kind, table, draw(st.sampled_from([0.0, 0.3, 0.9])), None, fix
    if kind == "swap":
        return kind, table, draw(st.sampled_from(TABLES)), None, fix
    if kind == "entry":
        return kind, table, draw(st.sampled_from(FIELDS)), draw(st.sampled_from(BAD_VALUES)), fix
    if kind == "json":
        return kind, table, draw(st.sampled_from(["cut", "deep", "nan", "text"])), None, fix
    return kind, table, None, None, fix


def _entry(manifest: dict[str, Any], table: str) -> dict[str, Any] | None:
    return next((f for f in manifest["files"] if isinstance(f, dict) and f.get("table") == table), None)


def _columns(path: Path) -> list[str]:
    """The file's columns; none when an earlier mutation left it unreadable."""
    try:
        with duckdb.connect() as con:
            return [str(r[0]) for r in con.execute("DESCRIBE SELECT * FROM read_parquet(?)", [str(path)]).fetchall()]
    except duckdb.Error:
        return []


def _rewrite(path: Path, select: str) -> int | None:
    """Rewrite ``path`` as ``select`` over its rows (``t``); its new row count, or None
    when DuckDB cannot make that file (the mutation is skipped)."""
    out = path.with_name("rewritten.parquet")
    try:
        with duckdb.connect() as con:
            con.execute("CREATE TABLE t AS SELECT * FROM read_parquet(?)", [str(path)])
            con.execute(f"COPY ({select}) TO ? (FORMAT PARQUET)", [str(out)])
            rows = con.execute("SELECT count(*) FROM read_parquet(?)", [str(out)]).fetchone()[0]
    except duckdb.Error:
        out.unlink(missing_ok=True)
        return None
    out.replace(path)
    return int(rows)


def _apply(folder: Path, manifest: dict[str, Any], op: tuple[Any, ...]) -> str | None:
    """Apply one mutation; the manifest text to write instead, for a JSON mutation."""
    kind, table, a, b, fix = op
    path = folder / f"{table}.parquet"
    entry = _entry(manifest, table)
    rows: int | None = None
    if kind == "json":
        text = json.dumps(manifest)
        return {"cut": text[: len(text) // 2], "deep": "[" * 3000 + text + "]" * 3000,
                "nan": text.replace('"rows": ', '"rows": NaN, "x": ', 1), "text": "not json"}[a]
    if kind == "entry" and entry is not None:
        entry[a] = b
        return None
    if kind == "drop_entry" and entry is not None:
        manifest["files"].remove(entry)
        return None
    if not path.is_file() or path.is_symlink():
        return None
    if kind in ("cast", "rename"):
        columns = _columns(path)
        if not columns:
            return None
        column = columns[a % len(columns)]
        change = f"CAST({column} AS {b}) AS {column}" if kind == "cast" else None
        select = f"SELECT * REPLACE ({change}) FROM t" if change else f"SELECT * RENAME ({column} AS planted) FROM t"
        rows = _rewrite(path, select)
        if rows is None:
            return None
    elif kind == "double":
        rows = _rewrite(path, "SELECT * FROM t UNION ALL SELECT * FROM t")
    elif kind == "cut":
        data = path.read_bytes()
        path.write_bytes(data[: int(len(data) * a)])
    elif kind == "swap":
        other = folder / f"{a}.parquet"
        if other.is_file() and not other.is_symlink():
            path.write_bytes(other.read_bytes())
            rows = (_entry(manifest, a) or {}).get("rows")
    elif kind == "delete":
        path.unlink()
        return None
    elif kind == "link":
        keep = folder.parent / f"linked-{table}.parquet"
        keep.write_bytes(path.read_bytes())
        path.unlink()
        path.symlink_to(keep)
        return None
    if entry is not None and fix in ("hash", "all") and path.is_file():
        entry.update(sha256=file_sha256(path), size_bytes=path.stat().st_size)
        if fix == "all" and rows is not None:
            entry["rows"] = rows
    return None


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return small_export(tmp_path_factory.mktemp("fuzz_store_import"))


class _Checker:
    def __init__(self, root: Path, export: Path, temp: Path) -> None:
        self.root, self.source, self.temp = root, export, temp
        self.count = itertools.count()
        self.baseline: dict[str, Any] = {}

    def _fresh(self) -> tuple[Path, dict[str, Any]]:
        work = self.root / "work"
        if work.exists():
            shutil.rmtree(work)
        work.mkdir()
        folder = Path(shutil.copytree(self.source, work / "it's the export"))
        return folder, json.loads((folder / "manifest.json").read_text())

    def expected(self, mode: str) -> Any:
        if mode not in self.baseline:
            folder, _ = self._fresh()
            self.baseline[mode] = self._run(folder, mode)[1]
        return self.baseline[mode]

    def _run(self, folder: Path, mode: str) -> tuple[int, Any, str]:
        if mode == "report":
            code, out, err = run_cli(["report", "--from-export", str(folder)])
            return code, out, err
        db = self.root / f"new-{next(self.count)}.duckdb"
        code, out, err = run_cli(["import-store", str(folder), "--db", str(db)])
        if code == 2:
            assert not db.exists(), "a refused import created the store"
            return code, out, err
        return code, fingerprint(db, skip=("schema_migrations",)), err  # (its times differ)

    def __call__(self, case: tuple[list[tuple[Any, ...]], str]) -> str:
        ops, mode = case
        want = self.expected(mode)
        folder, manifest = self._fresh()
        text = None
        for op in ops:
            text = _apply(folder, manifest, op) or text
        (folder / "manifest.json").write_text(text if text is not None else json.dumps(manifest))
        code, got, err = self._run(folder, mode)
        assert not [p for p in self.temp.rglob("*") if p.is_file()], "a scratch file was left behind"
        if code == 2:
            assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err, (ops, err)
            return "error"
        assert code == 0 and err == "", (ops, code, err)
        if got != want:
            COUNTS[SURFACE]["wrong"] += 1
            raise AssertionError(f"an accepted damaged export changed what was read: {ops}")
        return "valid"


def _fuzz(made: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, budget: settings) -> None:
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    strategy = st.tuples(st.lists(mutation(), min_size=1, max_size=3),
                         st.sampled_from(["import", "import", "import", "report"]))
    counts = run_budget(SURFACE, strategy, _Checker(tmp_path, made[1], temp), budget)
    print(f"fuzz {SURFACE}: silent wrong results {counts['wrong']}")
    assert counts["error"] and counts["wrong"] == 0


@pytest.mark.timeout(2400)  # a whole import per input; minutes on a loaded machine
def test_fuzz_store_import(made: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fuzz(made, tmp_path, monkeypatch, settings(DEFAULT, max_examples=25))  # each input is a whole import


@pytest.mark.fuzz_large
@pytest.mark.timeout(7200)
def test_fuzz_store_import_large(made: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fuzz(made, tmp_path, monkeypatch, settings(LARGE, max_examples=2000))
