"""One export format for every kind, one import, a report from an export: shown on the
test-only kind ``toy`` (tests/common/toy_kind.py), registered for each test."""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Iterator

import pytest

from common.db import Database, StoreError
from common.errors import InputError
from common.ledger import Ledger
from common.run_export import FORMAT, import_runs_export, reports_from_export, write_runs_export
from common.run_kinds import RunKind, run_kind, run_kinds
from tests.common.toy_kind import RUN, SPEC, ToyJob, ToySpec, ToyStore, registered, run_toy


@pytest.fixture()
def kinds() -> Iterator[dict[str, RunKind]]:
    with registered():
        yield {"toy": run_kind("toy")}


@pytest.fixture()
def source(tmp_path: Path, kinds: dict[str, RunKind]) -> Path:
    path = tmp_path / "source.duckdb"
    with ToyStore(path) as store:
        run_toy(store)
        run_toy(store, spec=ToySpec(n=2, scale=3))
    return path


def _rows(path: Path) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    with ToyStore(path) as store:
        toy = store.con.execute("SELECT * FROM toy_results ORDER BY ALL").fetchall()
        ledger = store.con.execute("SELECT run_id, kind, spec_json, status FROM ledger_runs ORDER BY ALL").fetchall()
    return toy, ledger


def test_a_run_exported_and_imported_twice_arrives_once(tmp_path: Path, source: Path,
                                                       kinds: dict[str, RunKind]) -> None:
    out = tmp_path / "export"
    manifest = json.loads(write_runs_export(source, [RUN], out, command="make toy", kinds=kinds).read_text())
    assert manifest["format"] == FORMAT and manifest["kinds"] == ["toy"]
    assert manifest["runs"] == [{"run_id": RUN, "kind": "toy", "status": "finished"}]
    assert sorted(f["table"] for f in manifest["files"]) == ["ledger_runs", "ledger_units", "toy_results"]
    assert {f["table"]: f["rows"] for f in manifest["files"]} == {"ledger_runs": 1, "ledger_units": 5,
                                                                   "toy_results": 5}
    target = tmp_path / "target.duckdb"
    report = import_runs_export(target, out, kinds)
    assert report.added == 11
    toy, ledger = _rows(target)
    assert toy == [(RUN, f"u{i}", 10 * i) for i in range(5)]  # the other run of the source stays out
    assert [(r, k, s) for r, k, _, s in ledger] == [(RUN, "toy", "finished")]
    with Database(target) as store:
        run = Ledger(store).run(RUN)
    assert (run.spec, run.done, run.failed) == (SPEC.to_dict(), 5, 0)
    assert import_runs_export(target, out, kinds).added == 0 and _rows(target) == (toy, ledger)
    again = json.loads(write_runs_export(source, [RUN], out, command="make toy", kinds=kinds).read_text())
    assert [f["sha256"] for f in again["files"]] == [f["sha256"] for f in manifest["files"]]  # same rows, same files


def test_a_stopped_run_imported_then_its_finished_export_completes_it(tmp_path: Path,
                                                                       kinds: dict[str, RunKind]) -> None:
    part, whole = tmp_path / "part.duckdb", tmp_path / "whole.duckdb"
    with ToyStore(part) as store:
        with pytest.raises(KeyboardInterrupt):
            run_toy(store, ToyJob(10, stop_after=2))
    with ToyStore(whole) as store:
        run_toy(store)
    target = tmp_path / "target.duckdb"
    import_runs_export(target, _export(part, tmp_path / "p", kinds), kinds)
    with Database(target) as store:
        assert (Ledger(store).run(RUN).status, Ledger(store).run(RUN).done) == ("running", 2)
    import_runs_export(target, _export(whole, tmp_path / "w", kinds), kinds)
    with Database(target) as store:
        assert (Ledger(store).run(RUN).status, Ledger(store).run(RUN).done) == ("finished", 5)


def _export(store: Path, out: Path, kinds: dict[str, RunKind]) -> Path:
    write_runs_export(store, [RUN], out, command="make toy", kinds=kinds)
    return out


@pytest.mark.parametrize("damage, message", [
    (lambda d: (d / "toy_results.parquet").write_bytes((d / "toy_results.parquet").read_bytes()[:-9] + b"x" * 9),
     "sha256"),
    (lambda d: (d / "ledger_units.parquet").unlink(), "ledger_units.parquet"),
    (lambda d: shutil.copy(d / "toy_results.parquet", d / "extra.parquet"), "not in its manifest"),
    (lambda d: (d / "manifest.json").write_text((d / "manifest.json").read_text().replace('"toy"', '"tooy"')),
     "kind 'tooy'"),
    (lambda d: (d / "manifest.json").write_text("{"), "manifest.json"),
])
def test_a_changed_or_incomplete_export_writes_nothing(tmp_path: Path, source: Path, kinds: dict[str, RunKind],
                                                       damage: object, message: str) -> None:
    out = _export(source, tmp_path / "export", kinds)
    target = tmp_path / "target.duckdb"
    damage(out)  # type: ignore[operator]
    with pytest.raises(InputError, match=message):
        import_runs_export(target, out, kinds)
    assert not target.exists()  # a store the refused import would have created is not left behind
    with ToyStore(target) as store:
        run_toy(store, spec=ToySpec(n=1, scale=7))
    before = _rows(target)
    with pytest.raises(InputError, match=message):
        import_runs_export(target, out, kinds)
    assert _rows(target) == before


def test_a_row_breaking_its_tables_rule_refuses_the_import(tmp_path: Path, kinds: dict[str, RunKind]) -> None:
    bad = tmp_path / "bad.duckdb"
    with ToyStore(bad) as store:
        run_toy(store, ToyJob(-1), spec=ToySpec(n=2, scale=-1))
    out = tmp_path / "export"
    write_runs_export(bad, [ToySpec(n=2, scale=-1).run_id()], out, command="make toy", kinds=kinds)
    with pytest.raises(StoreError, match=r"table toy_results.*value = -1: must be a non-negative whole number"):
        import_runs_export(tmp_path / "target.duckdb", out, kinds)


def test_the_report_of_an_export_is_its_kinds_report(tmp_path: Path, source: Path,
                                                     kinds: dict[str, RunKind]) -> None:
    out = tmp_path / "export"
    write_runs_export(source, [RUN, ToySpec(n=2, scale=3).run_id()], out, command="make toy", kinds=kinds)
    reports = reports_from_export(out, kinds)
    assert sorted(reports) == sorted([
        (RUN, "toy", f"toy run {RUN}: " + ", ".join(f"u{i}={10 * i}" for i in range(5))),
        (ToySpec(n=2, scale=3).run_id(), "toy", f"toy run {ToySpec(n=2, scale=3).run_id()}: u0=0, u1=3")])


def test_an_export_refuses_what_it_cannot_write(tmp_path: Path, source: Path, kinds: dict[str, RunKind]) -> None:
    with pytest.raises(StoreError, match="no run 'nope'"):
        write_runs_export(source, ["nope"], tmp_path / "e", command="x", kinds=kinds)
    with pytest.raises(InputError, match="each once"):
        write_runs_export(source, [RUN, RUN], tmp_path / "e", command="x", kinds=kinds)
    with pytest.raises(InputError, match="kind 'toy', which this version does not know"):
        write_runs_export(source, [RUN], tmp_path / "e", command="x", kinds={})
    with pytest.raises(InputError, match="no store"):
        write_runs_export(tmp_path / "none.duckdb", [RUN], tmp_path / "e", command="x", kinds=kinds)
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    with pytest.raises(InputError, match="holds other files"):
        write_runs_export(source, [RUN], tmp_path / "busy", command="x", kinds=kinds)
    assert (tmp_path / "busy" / "notes.txt").read_text() == "mine"


def test_the_registry_refuses_a_second_kind_under_one_name(kinds: dict[str, RunKind]) -> None:
    from dataclasses import replace

    from common.run_kinds import register

    assert "toy" in run_kinds()
    with pytest.raises(ValueError, match="registered already"):
        register(replace(kinds["toy"], what="another"))
    with pytest.raises(InputError, match="no run kind 'nope'"):
        run_kind("nope")
    with pytest.raises(ValueError, match="lower-case"):
        replace(kinds["toy"], name="Toy")
