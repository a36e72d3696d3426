"""Fuzz test of ``python -m dcem_clinical report --from-export DIR`` (run in-process through
:func:`dcem_clinical.cli.main`) on damaged copies of the smallest shipped export.

Each input is the shipped ``dcem_clinical`` export with one to three mutations: manifest
fields dropped, replaced by values of the wrong type, nested, renamed to absolute paths,
``..`` or other tables' files, wrong sha256, sizes and row counts, broken JSON; Parquet
files with duplicated rows, a dropped column, a changed type, NaN or infinity, cut short,
missing or swapped -- the manifest's hash, size and row count updated or not.  Every
input must end in exit status 2 with one ``error:`` line, or in exit status 0 with the
very report of the intact export (a mutation that changes nothing it means).  A changed
report from an accepted export is a silently wrong result and fails the test.

The default run tries a few hundred inputs; ``pytest -m fuzz_large -s`` tries 10,000.
"""
from __future__ import annotations

import contextlib
import io
import json
import shutil
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Any

import duckdb
import pytest
from hypothesis import settings
from hypothesis import strategies as st

from dcem_clinical.cli import main
from dcem.store.demo import DEMO_EXPORTS
from dcem.store.export_tables import SCHEMAS, sha256_of
from dcem.store.run_export import MANIFEST, TABLES
from tests.dcem.fuzz_support import COUNTS, DEFAULT, LARGE, run_budget

SURFACE = "dcem_clinical report --from-export"
SOURCE = DEMO_EXPORTS[1]  # data/results/dcem_clinical, the smallest shipped export
MODES: tuple[tuple[str, ...], ...] = ((), ("--markdown",), ("--json",))
# fields whose null (or absence) is a valid, different statement, not damage: not fuzzed with null
_NULLABLE = {"git_revision", "finished_at", "n_cal", "n_test", "file", "size_bytes", "sha256", "run_sha256", "note"}


@lru_cache(maxsize=1)
def _pristine() -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(SOURCE.iterdir())}


@lru_cache(maxsize=1)
def _manifest() -> dict[str, Any]:
    return json.loads(_pristine()[MANIFEST])


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else []
    for key, inner in items:
        out += _paths(inner, (*prefix, key))
    return out


@lru_cache(maxsize=1)
def _manifest_paths() -> list[tuple[Any, ...]]:
    return _paths(_manifest())


def _nullable(path: tuple[Any, ...]) -> bool:
    return path[0] in ("runs", "models") and path[-1] in _NULLABLE


def _bad_values(path: tuple[Any, ...], original: Any) -> list[Any]:
    """Values of the wrong type (or shape) for the field at ``path``."""
    nulls = [] if _nullable(path) else [None]
    if isinstance(original, bool):
        return [*nulls, "true", [original], {}]
    if isinstance(original, int):
        return [*nulls, str(original), original + 0.5, True, -1, [original], {}]
    if isinstance(original, float):
        return [*nulls, str(original), True, -1.0, 1e308, [original], {}]
    if isinstance(original, str):
        return [*nulls, 0, 1.5, False, [original], {"v": original}, "" if path[-1] != "note" else 7]
    if isinstance(original, list):
        dup = [original[0], original[0]] if original and path[-1] not in ("agents", "models") else 5
        return [*nulls, "x", 5, {}, [[]], dup, *([] if path == ("models",) else [[]])]
    return [*nulls, [], "x", 5, [original]]


@st.composite
def _manifest_op(draw: Any) -> tuple[Any, ...]:
    path = draw(st.sampled_from(_manifest_paths()))
    kind = draw(st.sampled_from(["set", "set", "drop", "nest", "name", "sha", "rows", "size", "unknown"]))
    if kind == "set":
        original = _get(_manifest(), path)
        return ("set", path, draw(st.sampled_from(_bad_values(path, original))))
    if kind == "drop":
        droppable = not _nullable(path) and path[:1] != ("models",) and path != ("models",)
        return ("drop", path) if droppable else ("nest", path)
    if kind == "unknown":
        return ("unknown", path)
    if kind == "nest":
        return ("nest", path)
    table = draw(st.sampled_from(TABLES))
    if kind == "name":
        return ("name", table, draw(st.sampled_from(["absolute", "dotdot", "other", "manifest", "dir", "dot",
                                                     "nul", "empty", "backslash", "upper"])))
    return (kind, table, draw(st.sampled_from([-1, 1, 2, 1000, -10**6])))


@st.composite
def _parquet_op(draw: Any) -> tuple[Any, ...]:
    table = draw(st.sampled_from(TABLES))
    columns = [c for c, _ in SCHEMAS[table]]
    doubles = [c for c, t in SCHEMAS[table] if t == "DOUBLE"] or ["__none__"]
    kind = draw(st.sampled_from(["dup", "drop_column", "cast", "nan", "inf", "cut", "delete", "swap", "reorder"]))
    fix = draw(st.sampled_from(["none", "hash", "all", "all"]))
    detail: Any = None
    if kind in ("drop_column", "cast"):
        detail = draw(st.sampled_from(columns))
        if kind == "cast":
            detail = (detail, draw(st.sampled_from(["VARCHAR", "BIGINT", "DOUBLE", "FLOAT", "SMALLINT"])))
    elif kind in ("nan", "inf"):
        detail = draw(st.sampled_from(doubles))
    elif kind == "cut":
        detail = draw(st.floats(0, 1))
    elif kind == "swap":
        detail = draw(st.sampled_from([t for t in TABLES if t != table]))
    return ("parquet", table, kind, detail, fix)


@st.composite
def mutations(draw: Any) -> list[tuple[Any, ...]]:
    ops = draw(st.lists(st.one_of(_manifest_op(), _manifest_op(), _parquet_op(),
                                  st.sampled_from([("reorder_files",), ("json", "cut"), ("json", "nan"),
                                                   ("json", "deep"), ("json", "text"), ("json", "cut")])),
                        min_size=1, max_size=3))
    return [(*op, draw(st.floats(0, 1))) if op[0] == "json" and op[1] == "cut" else op for op in ops]


# ------------------------------------------------------------------ applying them


def _get(value: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        value = value[key]
    return value


def _parent(manifest: Any, path: tuple[Any, ...]) -> tuple[Any, Any] | None:
    """The container of ``path`` and its key there (None when a mutation removed it)."""
    try:
        parent = _get(manifest, path[:-1])
        key = path[-1]
        if (isinstance(parent, dict) and key in parent) or (isinstance(parent, list) and isinstance(key, int)
                                                             and 0 <= key < len(parent)):
            return parent, key
    except (KeyError, IndexError, TypeError):
        pass
    return None


def _entry(manifest: Any, table: str) -> dict[str, Any] | None:
    files = manifest.get("files") if isinstance(manifest, dict) else None
    for entry in files if isinstance(files, list) else []:
        if isinstance(entry, dict) and entry.get("table") == table:
            return entry
    return None


@lru_cache(maxsize=512)
def _transformed_bytes(table: str, kind: str, detail: Any) -> bytes | None:
    source = SOURCE / f"{table}.parquet"
    selects = {"dup": "SELECT * FROM t UNION ALL (SELECT * FROM t LIMIT 1)",
               "reorder": "SELECT * FROM t ORDER BY random()",
               "drop_column": f"SELECT * EXCLUDE ({detail}) FROM t",
               "nan": f"SELECT * REPLACE ('NaN'::DOUBLE AS {detail}) FROM t",
               "inf": f"SELECT * REPLACE (CASE WHEN {detail} IS NULL THEN NULL ELSE 'inf'::DOUBLE END AS {detail}) "
                      "FROM t"}
    select = selects.get(kind)
    if select is None:
        column, kind_to = detail
        select = f"SELECT * REPLACE (CAST({column} AS {kind_to}) AS {column}) FROM t"
    if kind in ("nan", "inf") and detail == "__none__":
        return None
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "x.parquet"
        con = duckdb.connect()
        try:
            con.execute("CREATE TABLE t AS SELECT * FROM read_parquet(?)", [str(source)])
            con.execute(f"COPY ({select}) TO '{out}' (FORMAT PARQUET)")
        except duckdb.Error:
            return None
        finally:
            con.close()
        return out.read_bytes()


def _apply_parquet(directory: Path, manifest: Any, op: tuple[Any, ...]) -> None:
    _, table, kind, detail, fix = op
    path = directory / f"{table}.parquet"
    if kind == "delete":
        path.unlink(missing_ok=True)
        return
    if kind in ("cut", "swap") and not path.exists():  # an earlier mutation deleted it
        return
    if kind == "cut":
        data = path.read_bytes()
        path.write_bytes(data[: int(len(data) * detail)])
        rows = None
    elif kind == "swap":
        path.write_bytes((directory / f"{detail}.parquet").read_bytes() if (directory / f"{detail}.parquet").exists()
                         else b"")
        rows = (_entry(_manifest(), detail) or {}).get("rows")
    else:
        data = _transformed_bytes(table, kind, detail)
        if data is None:
            return
        path.write_bytes(data)
        con = duckdb.connect()
        rows = con.execute("SELECT count(*) FROM read_parquet(?)", [str(path)]).fetchone()[0]
        con.close()
    entry = _entry(manifest, table)
    if entry is not None and fix in ("hash", "all"):
        entry.update(sha256=sha256_of(path), size_bytes=path.stat().st_size)
        if fix == "all" and rows is not None:
            entry["rows"] = int(rows)


def _apply_name(directory: Path, manifest: Any, table: str, variant: str) -> None:
    entry = _entry(manifest, table)
    if entry is None:
        return
    foreign = directory.parent / "foreign" / f"{table}.parquet"
    names = {"absolute": str(foreign), "dotdot": f"../foreign/{table}.parquet",
             "other": f"{TABLES[(TABLES.index(table) + 1) % len(TABLES)]}.parquet", "manifest": MANIFEST,
             "dir": f"sub/{table}.parquet", "dot": f"./{table}.parquet", "nul": f"{table}.parquet\0",
             "empty": "", "backslash": f"..\\foreign\\{table}.parquet", "upper": f"{table.upper()}.parquet"}
    entry["name"] = names[variant]
    if variant in ("absolute", "dotdot", "dir"):  # the file is really there, with its hash in the manifest
        target = foreign if variant != "dir" else directory / "sub" / f"{table}.parquet"
        target.parent.mkdir(exist_ok=True)
        target.write_bytes(_pristine()[f"{table}.parquet"])


def _apply(directory: Path, ops: list[tuple[Any, ...]]) -> bytes:
    """Mutate the export in ``directory``; return the manifest text to write."""
    manifest: Any = json.loads(_pristine()[MANIFEST])
    text_ops = []
    for op in ops:
        kind = op[0]
        if kind == "parquet":
            _apply_parquet(directory, manifest, op)
        elif kind == "name":
            _apply_name(directory, manifest, op[1], op[2])
        elif kind in ("sha", "rows", "size"):
            entry = _entry(manifest, op[1])
            if entry is not None:
                key = {"sha": "sha256", "rows": "rows", "size": "size_bytes"}[kind]
                value = entry.get(key)
                if kind == "sha" and isinstance(value, str) and value:
                    entry[key] = ("0" if value[0] != "0" else "1") + value[1:] if op[2] > 0 else value.upper()
                elif isinstance(value, int) and not isinstance(value, bool):
                    entry[key] = value + op[2]
        elif kind in ("set", "drop", "nest", "unknown"):
            found = _parent(manifest, op[1])
            if found is None:
                continue
            parent, key = found
            if kind == "set":
                parent[key] = op[2]
            elif kind == "drop":
                del parent[key]
            elif kind == "nest":
                parent[key] = [parent[key]]
            elif isinstance(parent[key], dict):
                parent[key]["unexpected"] = 1
        elif kind == "reorder_files" and isinstance(manifest.get("files"), list):
            manifest["files"].reverse()
        elif kind == "json":
            text_ops.append(op)
    text = json.dumps(manifest, indent=1)
    for op in text_ops:
        if op[1] == "cut":
            text = text[: int(len(text) * op[2])]
        elif op[1] == "nan":
            text = text.replace('"rows": ', '"rows": NaN, "x": ', 1)
        elif op[1] == "deep":
            text = "[" * 3000 + text + "]" * 3000
        else:
            text = "not json at all"
    return text.encode("utf-8")


# ------------------------------------------------------------------ the check


def _run(directory: Path, mode: tuple[str, ...]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["report", "--from-export", str(directory), *mode])
    return code, out.getvalue(), err.getvalue()


class _Checker:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.export = root / "export"
        self.baseline: dict[tuple[str, ...], str] = {}

    def _fresh(self) -> None:
        for sub in (self.export, self.root / "foreign"):
            if sub.exists():
                shutil.rmtree(sub)
        self.export.mkdir()
        for name, data in _pristine().items():
            (self.export / name).write_bytes(data)

    def expected(self, mode: tuple[str, ...]) -> str:
        if mode not in self.baseline:
            self._fresh()
            code, out, err = _run(self.export, mode)
            assert code == 0 and err == "" and out, (code, err)
            self.baseline[mode] = out
        return self.baseline[mode]

    def __call__(self, case: tuple[list[tuple[Any, ...]], int]) -> str:
        ops, pick = case
        seen = COUNTS[SURFACE]
        if seen["inputs"] % 1000 == 0:  # a long run shows where it is
            print(f"fuzz {SURFACE}: {seen['inputs']} inputs so far, {seen['error']} clean errors, "
                  f"{seen['valid']} valid results", flush=True)
        mode = MODES[pick]
        want = self.expected(mode)
        self._fresh()
        manifest = _apply(self.export, ops)
        (self.export / MANIFEST).write_bytes(manifest)
        code, out, err = _run(self.export, mode)
        if code == 2:
            assert err.startswith("error: ") and err.count("\n") == 1 and out == "", (ops, err)
            assert "Traceback" not in err
            return "error"
        assert code == 0 and err == "", (ops, code, err)
        if out != want:
            COUNTS[SURFACE]["wrong"] += 1
            raise AssertionError(f"an accepted damaged export changed the report: {ops}")
        return "valid"


def _fuzz(tmp_path: Path, budget: settings) -> None:
    strategy = st.tuples(mutations(), st.sampled_from([0, 1, 1, 2, 2, 2, 2, 2]))  # JSON: the cheapest report
    counts = run_budget(SURFACE, strategy, _Checker(tmp_path), budget)
    print(f"fuzz {SURFACE}: silent wrong results {counts['wrong']}")
    assert counts["error"] and counts["valid"] and counts["wrong"] == 0


def test_fuzz_export_report(tmp_path: Path) -> None:
    _fuzz(tmp_path, settings(DEFAULT, max_examples=40))  # an accepted input costs a whole report


@pytest.mark.fuzz_large
@pytest.mark.timeout(5400)  # 10,000 inputs, a few hundred of them whole reports
def test_fuzz_export_report_large(tmp_path: Path) -> None:
    _fuzz(tmp_path, LARGE)
