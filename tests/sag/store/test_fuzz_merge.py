"""Fuzz tests of merging a store file (surface "merge"): :func:`common.store_merge.merge_store`
with the SAG store's rules, and ``python -m sag merge`` run in-process for some inputs.

A small valid part (two scripted runs with their call log) is built once; each input is a
copy of it with a few rows changed by SQL (values outside or at the edge of their domain,
rows that lose their run or item, runs redefined, keys without a primary key) or a file that
is not a store at all (empty, random bytes, truncated, SQLite, a bare DuckDB file).  It is
merged into an empty store or into one that holds part of it with its runs still running.
Each merge must either be refused with a clean error and the target unchanged, or be
accepted with every source row the target lacked now in it, the target's own rows kept, and
the whole store keeping what its tables mean (:func:`tests.sag.merge_stores.store_problems`).
"""
from __future__ import annotations

import contextlib
import io
import shutil
import sqlite3
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from common.db import Database, StoreError
from common.store_merge import merge_store
from sag.cli import main
from sag.store.merge_checks import sag_store_checks
from sag.store.tables import SagStore
from tests.dcem.fuzz_support import COUNTS, DEFAULT, LARGE

from ..merge_stores import SAG_TABLES, build_part, dump, store_problems

SURFACE = "merge"
_VALUES = {
    "INTEGER": ["-5", "-1", "0", "1", "2", "7", "2147483647", "NULL"],
    "DOUBLE": ["-1.0", "-0.0", "0.0", "0.5", "1.0", "1.5", "1e308", "5e-324", "'nan'", "'inf'", "'-inf'", "NULL"],
    "VARCHAR": ["''", "'A'", "'B'", "'C'", "'E'", "'ZZ'", "'REFUSE'", "'ESCALATE'", "'finished'", "'running'",
                "'{'", "'[]'", "'{}'", "'[[\"A\", \"x\"], [\"B\", \"y\"]]'", "'ghost'", "NULL",
                "'" + "x" * 300 + "'"],
    "BOOLEAN": ["true", "false", "NULL"],
    "DOUBLE[]": ["[]", "[0.5, 0.5]", "[1.5]", "['nan']", "[NULL]", "[0.2, 0.3, 0.5]", "[-0.1, 1.1]", "NULL"],
    "VARCHAR[]": ["[]", "['x']", "['x', 'x']", "[NULL]", "NULL", "list_reverse({col})"],
    "TIMESTAMP": ["NULL", "'2026-01-01'", "{col} + INTERVAL 1 DAY"],
}
_CHILD_TABLES = ("sag_items", "sag_outcomes", "sag_messages", "sag_mediator", "llm_calls")


@dataclass(frozen=True)
class Bases:
    """The built files: the part, its columns, and the two targets with their dumps."""

    part: Path
    columns: dict[str, list[tuple[str, str]]]
    targets: dict[str, Path]
    dumps: dict[str, dict[str, list[tuple[Any, ...]]]]
    prints: dict[str, list[tuple[Any, ...]]]


@pytest.fixture(scope="module")
def bases(tmp_path_factory: pytest.TempPathFactory) -> Bases:
    root = tmp_path_factory.mktemp("fuzz_merge")
    part = root / "part.duckdb"
    build_part(part)
    empty, partial = root / "empty.duckdb", root / "partial.duckdb"
    with SagStore(empty):
        pass
    shutil.copy(part, partial)
    con = duckdb.connect(str(partial))
    con.execute("UPDATE sag_runs SET status = 'running', finished_at = NULL")
    last = "(SELECT max(item_id) FROM sag_outcomes)"
    for table in ("sag_outcomes", "sag_messages", "sag_mediator", "llm_calls"):
        con.execute(f"DELETE FROM {table} WHERE {'case_id' if table == 'llm_calls' else 'item_id'} = {last}")
    columns: dict[str, list[tuple[str, str]]] = {}
    for table, column, dtype in con.execute("SELECT table_name, column_name, data_type FROM information_schema.columns "
                                            "WHERE table_schema = 'main' ORDER BY ordinal_position").fetchall():
        if table in SAG_TABLES:
            columns.setdefault(table, []).append((column, dtype))
    con.close()
    targets = {"empty": empty, "partial": partial}
    prints = {}
    for kind, path in targets.items():
        con = duckdb.connect(str(path), read_only=True)
        prints[kind] = fingerprint(con)
        con.close()
    return Bases(part, columns, targets, {k: dump(p) for k, p in targets.items()}, prints)


def fingerprint(con: duckdb.DuckDBPyConnection) -> list[tuple[Any, ...]]:
    """Rows and a hash of their content, per table (one query; equal for equal tables)."""
    return con.execute(" UNION ALL ".join(f"SELECT '{t}', count(*), sum(hash(x)::HUGEINT) FROM \"{t}\" x"
                                          for t in SAG_TABLES) + " ORDER BY 1").fetchall()


@st.composite
def _mutation(draw: Any, columns: dict[str, list[tuple[str, str]]]) -> str:
    table = draw(st.sampled_from(sorted(t for t in columns if t not in ("sag_eval_parts", "sag_eval_cost"))))
    pick = f"rowid = (SELECT rowid FROM {table} ORDER BY rowid LIMIT 1 OFFSET {draw(st.integers(0, 40))} % " \
           f"greatest((SELECT count(*) FROM {table}), 1))"
    op = draw(st.sampled_from(["set"] * 6 + ["orphan", "delete", "no_key"]))
    if op == "delete":
        return f"DELETE FROM {table} WHERE {pick}"
    if op == "orphan":
        key = "item_id" if table in _CHILD_TABLES[:-1] else "run_id"
        call = ", call_id || '-copy' AS call_id" if table == "llm_calls" else ""
        return (f"INSERT INTO {table} SELECT * REPLACE ('ghost-' || {key} AS {key}{call}) FROM {table} "
                f"WHERE {pick}")
    if op == "no_key":  # the same rows twice, the table without its primary key
        return (f"CREATE TABLE fuzz_copy AS SELECT * FROM {table} UNION ALL (SELECT * FROM {table} WHERE {pick}); "
                f"DROP TABLE {table}; ALTER TABLE fuzz_copy RENAME TO {table}")
    column, dtype = draw(st.sampled_from(columns[table]))
    value = draw(st.sampled_from(_VALUES.get(dtype, ["NULL"]))).replace("{col}", column)
    return f"UPDATE {table} SET {column} = {value} WHERE {pick}"


@st.composite
def merge_inputs(draw: Any, bases: Bases) -> tuple[str, str, tuple[str, ...], bool]:
    """(target kind, file kind, SQL mutations, through the command line)."""
    target = draw(st.sampled_from(["empty", "partial"]))
    kind = draw(st.sampled_from(["rows"] * 12 + ["empty", "bytes", "cut", "sqlite", "bare", "header"]))
    mutations = tuple(draw(st.lists(_mutation(bases.columns), max_size=3))) if kind == "rows" else ()
    if kind == "cut":
        mutations = (str(draw(st.integers(0, bases.part.stat().st_size - 1))),)
    elif kind == "bytes":
        mutations = (draw(st.binary(max_size=64)).hex(),)
    return target, kind, mutations, draw(st.integers(0, 7)) == 0


class _Harness:
    """Runs the inputs with few file openings: one connection writes the changed parts,
    each target stays open between inputs and is copied afresh only after an accepted merge."""

    def __init__(self, bases: Bases, work: Path, counts: Counter[str]) -> None:
        self.bases, self.counts = bases, counts
        self.source = work / "part.duckdb"
        self.writer = duckdb.connect()
        self.copies = {kind: work / f"target-{kind}.duckdb" for kind in bases.targets}
        self.open: dict[str, Database] = {}
        self.dirty = set(bases.targets)
        self.checks = sag_store_checks()

    def close(self) -> None:
        for db in self.open.values():
            db.close()
        self.open.clear()
        self.writer.close()

    def _target(self, kind: str, *, opened: bool) -> Path:
        """The target file of ``kind``, fresh, and open or closed as asked."""
        if kind in self.dirty or not opened:
            db = self.open.pop(kind, None)
            if db is not None:
                db.close()
        if kind in self.dirty:
            shutil.copy(self.bases.targets[kind], self.copies[kind])
            self.dirty.discard(kind)
        if opened and kind not in self.open:
            self.open[kind] = Database(self.copies[kind])
        return self.copies[kind]

    def make_source(self, kind: str, mutations: tuple[str, ...]) -> None:
        path = self.source
        path.unlink(missing_ok=True)
        if kind == "rows":
            shutil.copy(self.bases.part, path)
            self.writer.execute(f"ATTACH '{path}' AS part")
            self.writer.execute("USE part")
            for sql in mutations:
                try:
                    self.writer.execute(sql)
                except duckdb.Error:  # a value the column cannot hold: that change is not made
                    pass
            self.writer.execute("USE memory")
            self.writer.execute("DETACH part")
        elif kind == "cut":
            path.write_bytes(self.bases.part.read_bytes()[:int(mutations[0])])
        elif kind == "bytes":
            path.write_bytes(bytes.fromhex(mutations[0]) * 64)
        elif kind == "empty":
            path.write_bytes(b"")
        elif kind == "sqlite":
            con3 = sqlite3.connect(path)
            con3.execute("CREATE TABLE schema_migrations (name TEXT PRIMARY KEY)")
            con3.close()
        elif kind == "bare":
            duckdb.connect(str(path)).close()
        else:
            path.write_bytes(bytes(8) + b"DUCK" + bytes(100))

    def merge(self, target_kind: str, via_cli: bool) -> tuple[bool, duckdb.DuckDBPyConnection]:
        """(accepted, a connection to the target after the merge)."""
        target = self._target(target_kind, opened=not via_cli)
        if via_cli:
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main(["merge", str(self.source), "--db", str(target)])
            accepted = code == 0
            if code == 2:
                message = err.getvalue()
                assert message.startswith("error: ") and message.count("\n") == 1 and out.getvalue() == "", message
            else:
                assert code == 0 and err.getvalue() == "", (code, err.getvalue())
            self.open[target_kind] = Database(target)
        else:
            db = self.open[target_kind]
            try:
                merge_store(db, self.source, self.checks)
                accepted = True
            except StoreError as exc:
                assert str(exc) and "\n" not in str(exc) and "Traceback" not in str(exc)
                accepted = False
        if accepted:
            self.dirty.add(target_kind)
        return accepted, self.open[target_kind].con

    def __call__(self, value: tuple[str, str, tuple[str, ...], bool]) -> None:
        target_kind, kind, mutations, via_cli = value
        self.make_source(kind, mutations)
        self.counts["inputs"] += 1
        try:
            accepted, con = self.merge(target_kind, via_cli)
        except Exception:
            self.counts["tracebacks"] += 1
            raise
        try:
            if accepted:
                _check_accepted(self.bases.dumps[target_kind], con, self.source)
            else:
                assert fingerprint(con) == self.bases.prints[target_kind]
        except AssertionError:
            self.counts["wrong"] += 1
            raise
        self.counts["valid" if accepted else "error"] += 1
        if self.counts["inputs"] % 250 == 0:
            print(f"fuzz {SURFACE} so far: {dict(self.counts)}", flush=True)


def _check_accepted(before: dict[str, list[tuple[Any, ...]]], target: duckdb.DuckDBPyConnection,
                    source: Path) -> None:
    after, theirs = dump(target), dump(source)
    assert store_problems(target) == [], store_problems(target)
    for table in SAG_TABLES:
        cut = 10 if table == "sag_runs" else None  # a run's status and finish time may come from the source
        mine, now, other = ({r[:cut] for r in rows[table]} for rows in (before, after, theirs))
        assert mine <= now, table  # the target's own rows stay
        assert now <= mine | other, table  # and nothing comes but the source's rows
        assert len(after[table]) >= len(before[table])
    for row in theirs["sag_outcomes"]:  # every outcome the target lacked came in
        assert row in after["sag_outcomes"] or row[:2] in {r[:2] for r in before["sag_outcomes"]}


def _fuzz(bases: Bases, work: Path, budget: settings) -> Counter[str]:
    counts = COUNTS.setdefault(SURFACE, Counter())
    harness = _Harness(bases, work, counts)

    @budget
    @given(merge_inputs(bases))
    def one(value: tuple[str, str, tuple[str, ...], bool]) -> None:
        harness(value)

    try:
        one()
    finally:
        harness.close()
    print(f"\nfuzz {SURFACE}: {counts['inputs']} inputs, {counts['error']} clean errors, {counts['valid']} valid "
          f"results, {counts['tracebacks']} tracebacks, {counts['wrong']} silent wrong results")
    assert counts["tracebacks"] == 0 and counts["wrong"] == 0
    return counts


def test_fuzz_merge(bases: Bases, tmp_path: Path) -> None:
    counts = _fuzz(bases, tmp_path, settings(DEFAULT, max_examples=15))
    assert counts["error"] and counts["valid"]


@pytest.mark.fuzz_large
@pytest.mark.timeout(6 * 3600)  # each input is a whole merge of a store file: longer than the usual limit
def test_fuzz_merge_large(bases: Bases, tmp_path: Path) -> None:
    counts = _fuzz(bases, tmp_path, LARGE)
    assert counts["inputs"] >= 10_000 and counts["error"] and counts["valid"]
