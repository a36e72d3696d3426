"""SQL only in the store modules: no module outside them (tests/ and benchmarks/ aside) runs
SQL, opens DuckDB, reaches into a store's connection or holds SQL text.

The store modules are the two store packages and the short list of single modules below;
everything else asks a store method (a store class's, or a function of a store module
that takes the store)."""
from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SKIPPED = ("tests", "benchmarks")
STORE_PACKAGES = ("dcem/store/", "sag/store/")
STORE_MODULES = (
    "common/db.py",  # Database: opening the file, generic reads and Parquet loads
    "common/migrations.py",  # migrate()
    "common/transactions.py",  # cursors and retried transactions
    "common/ledger.py",  # Ledger: the runs and units of every kind of run
    "common/ledger_adopt.py",  # the old run tables copied into the ledger
    "common/run_rows.py",  # the rows of chosen runs, for an export
    "common/table_export.py",  # an export's Parquet files written
    "common/export_schema.py",  # an export's Parquet files checked
    "common/store_merge.py",  # one store merged into another
    "common/merge_checks.py",  # the row checks of a merge, run
    "runtime/call_log.py",  # CallLog: the llm_calls table
    "runtime/migrations.py",  # the llm_calls table's schema
    "runtime/merge_checks.py",  # the llm_calls rows a merge refuses
    "training/store.py",  # TrainingStore: the training tables and their schema
)

_RUNS = {"execute", "executemany", "sql", "fetchone", "fetchall", "fetchdf", "fetchnumpy", "fetch_df", "df", "cursor"}
_PLUMBING = "common.transactions"  # a store's cursor and transactions
_REGISTERS = {"register", "unregister"}
_CONNECTION = re.compile(r"(^|\.)(con|conn|connection|cur|cursor|cursor\(\))$")
_SQL = re.compile("|".join((
    r"\bSELECT\b.*\bFROM\b", r"\bINSERT\s+(OR\s+\w+\s+)?INTO\b", r"\bUPDATE\s+\S+\s+SET\b", r"\bDELETE\s+FROM\b",
    r"\bCREATE\s+(OR\s+REPLACE\s+)?(TEMP\s+|TEMPORARY\s+)?(TABLE|VIEW|INDEX|SEQUENCE)\b", r"\bDROP\s+(TABLE|VIEW)\b",
    r"\bALTER\s+TABLE\b", r"\bCOPY\s*\(", r"\bCOPY\s+\S+\s+(TO|FROM)\b", r"\bread_parquet\s*\(",
    r"\bDESCRIBE\s+\S", r"\b(BEGIN\s+TRANSACTION|COMMIT|ROLLBACK)\b\s*$", r"\bATTACH\s+\S",
)), re.DOTALL)


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring nodes of the module, its classes and functions."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                out.add(id(first.value))
    return out


def _duckdb_names(tree: ast.AST) -> set[str]:
    """``duckdb`` and every name it or one of its functions is imported as."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(a.asname or a.name for a in node.names if a.name == "duckdb")
        elif isinstance(node, ast.ImportFrom) and node.module == "duckdb":
            names.update(a.asname or a.name for a in node.names if a.name[:1].islower())
    return names


def _text(node: ast.AST) -> str | None:
    """A string constant's text; an f-string's with ``{}`` for each value."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
    return None


def _imported(node: ast.Import | ast.ImportFrom) -> set[str]:
    if isinstance(node, ast.Import):
        return {a.name for a in node.names}
    module = node.module or ""
    return {module} | {f"{module}.{a.name}" for a in node.names}


def _call(node: ast.Call, duckdb: set[str]) -> str | None:
    func = node.func
    if isinstance(func, ast.Name) and func.id in duckdb:
        return f"calls duckdb's {func.id}()"
    if not isinstance(func, ast.Attribute):
        return None
    receiver = ast.unparse(func.value)
    if isinstance(func.value, ast.Name) and func.value.id in duckdb:
        return None if func.attr[:1].isupper() else f"calls {receiver}.{func.attr}()"
    if func.attr == "cursor":
        return "opens a cursor (.cursor)"
    if func.attr in _RUNS and (func.attr != "df" or isinstance(func.value, ast.Call)):
        return f"runs SQL (.{func.attr})"
    if func.attr in _REGISTERS and _CONNECTION.search(receiver):
        return f"registers on a connection (.{func.attr})"
    return None


def offences(source: str) -> list[str]:
    """``line: what`` for each SQL statement run, DuckDB call, store connection reached and SQL text held."""
    tree = ast.parse(source)
    docs, duckdb = _docstrings(tree), _duckdb_names(tree)
    found: set[tuple[int, str]] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and (what := _call(node, duckdb)):
            found.add((node.lineno, what))
        elif isinstance(node, (ast.Import, ast.ImportFrom)) and _PLUMBING in _imported(node):
            found.add((node.lineno, f"imports {_PLUMBING}"))
        elif isinstance(node, ast.Attribute) and node.attr == "con":
            found.add((node.lineno, "reaches into a store's connection (.con)"))
        elif id(node) not in docs and (text := _text(node)) is not None and _SQL.search(text):
            found.add((node.lineno, "holds SQL text"))
    return [f"{line}: {what}" for line, what in sorted(found)]


def is_store_module(relative: str) -> bool:
    return relative.startswith(STORE_PACKAGES) or relative in STORE_MODULES


def scanned_files() -> list[Path]:
    return sorted(p for p in ROOT.rglob("*.py")
                  if (top := p.relative_to(ROOT).parts[0]) not in SKIPPED and not top.startswith(".")
                  and not is_store_module(p.relative_to(ROOT).as_posix()))


def test_the_scan_finds_sql_however_it_is_run() -> None:
    bad = '''
import duckdb as ddb
from duckdb import connect
from common.transactions import cursor
def rows(store, path, table):
    n = store.con.execute("SELECT count(*) FROM runs").fetchone()[0]
    cur = store.session().cursor()
    cur.register("_t", frame)
    cur.executemany(f"INSERT INTO {table} VALUES (?)", [[1]])
    con = connect(str(path))
    frame = ddb.sql("PRAGMA version")
    query = (f"COPY (SELECT * FROM {table}) TO ? (FORMAT PARQUET)")
    return "DESCRIBE SELECT * FROM read_parquet(?)", cur.execute("x").df()
'''
    assert offences(bad) == [
        "4: imports common.transactions", "6: holds SQL text", "6: reaches into a store's connection (.con)",
        "6: runs SQL (.execute)", "6: runs SQL (.fetchone)", "7: opens a cursor (.cursor)",
        "8: registers on a connection (.register)", "9: holds SQL text", "9: runs SQL (.executemany)",
        "10: calls duckdb's connect()", "11: calls ddb.sql()", "12: holds SQL text", "13: holds SQL text",
        "13: runs SQL (.df)", "13: runs SQL (.execute)"]
    good = '''
"""Reads the runs (SELECT run_id FROM runs happens in the store)."""
import atexit
import duckdb
import pandas as pd
from dcem.store.database import Store
def runs(path, registry, frame):
    """The store runs DELETE FROM and INSERT INTO for us."""
    atexit.register(print)
    registry.register("name", frame)
    try:
        with Store(path, read_only=True) as store:
            return store.holds_runs(), pd.read_parquet(path), frame.df, "Select a run from the list"
    except duckdb.Error as exc:
        raise duckdb.CatalogException(str(exc))
'''
    assert offences(good) == []


def test_the_allow_list_names_only_store_modules_that_hold_sql() -> None:
    """Each single module allowed exists and holds SQL (else it leaves the list)."""
    for relative in STORE_MODULES:
        path = ROOT / relative
        assert path.is_file() and offences(path.read_text(encoding="utf-8")), relative
    assert not is_store_module("sag/runs/store_export.py") and is_store_module("sag/store/export_rows.py")


def test_no_module_outside_the_store_modules_runs_sql() -> None:
    files = scanned_files()
    tops = {p.relative_to(ROOT).parts[0] for p in files}
    assert {"common", "dcem", "runtime", "sag", "studio", "training", "pages", "scripts", "app.py"} <= tops
    found = {f"{p.relative_to(ROOT)}:{o}" for p in files for o in offences(p.read_text(encoding="utf-8"))}
    assert found == set()
