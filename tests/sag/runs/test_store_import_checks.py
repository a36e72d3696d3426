"""Issue 51, the SAG store export's readers (``sag import-store``, ``sag report
--from-export``, ``sag export-store``): an export in a folder named ``it's ok`` imports; a
column of another type is refused though the manifest's sha256 is updated (as the D-CEM
readers refuse it); a table name with ``..``, ``"rows": "30"``, a link and a manifest
nested 100,000 deep are refused in one line; an unwritable ``--out`` or a D-CEM store is
refused before anything is written; Ctrl-C ends in one line with nothing imported; a
scratch store left by a killed import is removed by the next.  Every refused import
leaves the target store as it was (and creates none)."""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import duckdb
import pytest

from common import export_schema
from common.export_schema import file_sha256
from common.scratch import scratch_parent
from sag.store.tables import SagStore
from tests.sag.cli_fakes import one_error_line, run_cli
from tests.sag.evaluation.small_export import fingerprint, small_export


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(a store of a small scripted evaluation, its export)."""
    return small_export(tmp_path_factory.mktemp("store_import"))


@pytest.fixture(autouse=True)
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The system temp folder of the test (where scratch stores go)."""
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    return temp


def _copy(export: Path, where: Path) -> Path:
    shutil.copytree(export, where)
    return where


def _manifest(folder: Path) -> dict[str, Any]:
    return json.loads((folder / "manifest.json").read_text())


def _entry(manifest: dict[str, Any], table: str) -> dict[str, Any]:
    return next(f for f in manifest["files"] if f["table"] == table)


def _rewrite(folder: Path, table: str, select: str) -> None:
    """Rewrite ``<table>.parquet`` as ``select`` (over its rows as ``t``) makes it, and
    update the manifest's sha256, size and rows to match: only the content is wrong."""
    path = folder / f"{table}.parquet"
    with duckdb.connect() as con:
        con.execute("CREATE TABLE t AS SELECT * FROM read_parquet(?)", [str(path)])
        con.execute(f"COPY ({select}) TO ? (FORMAT PARQUET)", [str(path)])
        rows = con.execute("SELECT count(*) FROM read_parquet(?)", [str(path)]).fetchone()[0]
    manifest = _manifest(folder)
    _entry(manifest, table).update(sha256=file_sha256(path), size_bytes=path.stat().st_size, rows=rows)
    (folder / "manifest.json").write_text(json.dumps(manifest))


_fingerprint = fingerprint


def _empty_store(path: Path) -> dict[str, tuple[Any, ...]]:
    with SagStore(path):
        pass
    return _fingerprint(path)


def _refused_import(folder: Path, tmp_path: Path, message: str) -> None:
    """``import-store`` of ``folder`` is refused with ``message`` in one line, into an
    existing store (left as it was) and into a new one (not created), and ``report
    --from-export`` refuses it alike."""
    existing = tmp_path / "existing.duckdb"
    before = _empty_store(existing)
    for db in (existing, tmp_path / "new.duckdb"):
        err = one_error_line(*run_cli(["import-store", str(folder), "--db", str(db)]))
        assert message in err, err
    assert _fingerprint(existing) == before and not (tmp_path / "new.duckdb").exists()
    err = one_error_line(*run_cli(["report", "--from-export", str(folder)]))
    assert message in err, err


def test_an_export_in_a_folder_named_with_a_quote_imports_reports_and_exports(made: tuple[Path, Path],
                                                                              tmp_path: Path) -> None:
    _, export = made
    folder = _copy(export, tmp_path / "it's ok")
    db = tmp_path / "it's \"mine\".duckdb"
    code, out, err = run_cli(["import-store", str(folder), "--db", str(db)])
    assert code == 0 and out.startswith("imported ") and out != f"imported 0 rows from {folder}\n", err
    code, out, err = run_cli(["report", "--from-export", str(folder)])
    assert code == 0 and "sag-6" in out, err
    again = tmp_path / "it's \"again\""
    assert run_cli(["export-store", "--db", str(db), "--out", str(again)])[0] == 0
    assert run_cli(["import-store", str(again), "--db", str(db)])[1] == f"imported 0 rows from {again}\n"


@pytest.mark.parametrize("table, change, message", [
    ("sag_outcomes", "CAST(rounds AS DOUBLE) + 1.6 AS rounds", "column 'rounds' is DOUBLE, expected INTEGER"),
    ("sag_outcomes", "CAST(seconds AS VARCHAR) AS seconds", "column 'seconds' is VARCHAR, expected DOUBLE"),
    ("sag_outcomes", "CAST(rounds AS BIGINT) AS rounds", "column 'rounds' is BIGINT, expected INTEGER"),
    ("sag_outcomes", "CAST(correct AS INTEGER) AS correct", "column 'correct' is INTEGER, expected BOOLEAN"),
    ("sag_outcomes", "CAST(correct AS VARCHAR) AS correct", "column 'correct' is VARCHAR, expected BOOLEAN"),
    ("sag_messages", "CAST(citations AS VARCHAR) AS citations", "column 'citations' is VARCHAR, expected VARCHAR[]"),
    ("sag_messages", "[1] AS citations", "column 'citations' is INTEGER[], expected VARCHAR[]"),
], ids=["rounds 2.6", "seconds as text", "rounds as BIGINT", "correct as integer", "correct as text",
        "citations as text", "citations as integers"])
def test_a_column_of_another_type_is_refused_though_the_manifest_hash_is_updated(
        made: tuple[Path, Path], tmp_path: Path, table: str, change: str, message: str) -> None:
    folder = _copy(made[1], tmp_path / "export")
    _rewrite(folder, table, f"SELECT * REPLACE ({change}) FROM t")
    _refused_import(folder, tmp_path, f"{table}.parquet {message}")


def test_an_unknown_column_is_refused(made: tuple[Path, Path], tmp_path: Path) -> None:
    folder = _copy(made[1], tmp_path / "export")
    _rewrite(folder, "sag_runs", "SELECT *, 1 AS planted FROM t")
    _refused_import(folder, tmp_path, "sag_runs.parquet has an unknown column 'planted'")


def test_a_table_name_leading_out_of_the_folder_is_refused_before_any_file_is_read(
        made: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _copy(made[1], tmp_path / "a" / "export")
    outside = tmp_path / "outside_items.parquet"
    shutil.copy(folder / "sag_items.parquet", outside)
    manifest = _manifest(folder)
    entry = _entry(manifest, "sag_items")
    entry.update(table="sag_x/../../outside_items", name="sag_x/../../outside_items.parquet",
                 sha256=file_sha256(outside))
    (folder / "manifest.json").write_text(json.dumps(manifest))
    hashed: list[Path] = []
    real = export_schema.file_sha256
    monkeypatch.setattr(export_schema, "file_sha256", lambda path: hashed.append(Path(path)) or real(path))
    _refused_import(folder, tmp_path, "table must be a plain table name (lowercase letters, digits and _), "
                                      "got 'sag_x/../../outside_items'")
    assert hashed == []


def test_rows_given_as_text_are_refused_as_not_a_whole_number(made: tuple[Path, Path], tmp_path: Path) -> None:
    folder = _copy(made[1], tmp_path / "export")
    manifest = _manifest(folder)
    rows = _entry(manifest, "sag_runs")["rows"]
    _entry(manifest, "sag_runs")["rows"] = str(rows)
    (folder / "manifest.json").write_text(json.dumps(manifest))
    k = [f["table"] for f in manifest["files"]].index("sag_runs")
    _refused_import(folder, tmp_path, f"files[{k}].rows must be a whole number >= 0, got '{rows}'")


def test_a_link_is_called_a_link(made: tuple[Path, Path], tmp_path: Path) -> None:
    folder = _copy(made[1], tmp_path / "export")
    (folder / "sag_items.parquet").unlink()
    (folder / "sag_items.parquet").symlink_to(made[1] / "sag_items.parquet")  # the right bytes, not its own file
    _refused_import(folder, tmp_path, "sag_items.parquet is a link; an export holds its own files")


def test_a_manifest_nested_100000_deep_is_refused_in_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "deep"
    folder.mkdir()
    (folder / "manifest.json").write_text("[" * 100_000 + "]" * 100_000)
    existing = tmp_path / "existing.duckdb"
    before = _empty_store(existing)
    err = one_error_line(*run_cli(["import-store", str(folder), "--db", str(existing)]))
    assert "manifest.json is nested too deeply (more than 64 levels)" in err
    assert _fingerprint(existing) == before
    err = one_error_line(*run_cli(["report", "--from-export", str(folder)]))
    assert "nested too deeply" in err


def test_export_store_refuses_an_unwritable_out_and_a_dcem_store_before_writing(made: tuple[Path, Path],
                                                                                tmp_path: Path) -> None:
    from dcem.store.database import Store

    raw, _ = made
    (tmp_path / "a file").write_text("x")
    err = one_error_line(*run_cli(["export-store", "--db", str(raw), "--out", str(tmp_path / "a file" / "out")]))
    assert "out: cannot write to" in err and "Not a directory" in err
    dcem = tmp_path / "dcem.duckdb"
    Store(dcem).close()
    err = one_error_line(*run_cli(["export-store", "--db", str(dcem), "--out", str(tmp_path / "out")]))
    assert "is not a SAG store (it has no sag_runs table)" in err
    assert not (tmp_path / "out").exists() and (tmp_path / "a file").read_text() == "x"


def _interrupted(folder: Path, tmp_path: Path, scratch: Path) -> None:
    existing = tmp_path / "existing.duckdb"
    before = _empty_store(existing)
    code, out, err = run_cli(["import-store", str(folder), "--db", str(existing)])
    assert (code, out, err) == (130, "", "interrupted: nothing was imported\n")
    assert _fingerprint(existing) == before
    assert [p for p in scratch.rglob("*") if p.is_file()] == []  # the scratch store went with the import


def test_ctrl_c_during_the_merge_imports_nothing(made: tuple[Path, Path], tmp_path: Path, scratch: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import common.store_merge as store_merge

    real = store_merge._merge_all

    def then_ctrl_c(*args: Any) -> Any:  # every row written inside the transaction, then Ctrl-C
        done = real(*args)
        os.kill(os.getpid(), signal.SIGINT)
        return done

    monkeypatch.setattr(store_merge, "_merge_all", then_ctrl_c)
    _interrupted(made[1], tmp_path, scratch)


def test_duckdb_s_query_interrupted_is_ctrl_c_too(made: tuple[Path, Path], tmp_path: Path, scratch: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    import common.store_merge as store_merge

    def stopped(*args: Any) -> None:
        raise RuntimeError("Query interrupted")  # what DuckDB raises when Ctrl-C stops a statement

    monkeypatch.setattr(store_merge, "find_broken", stopped)
    _interrupted(made[1], tmp_path, scratch)


def test_a_scratch_store_left_by_a_killed_import_is_removed_by_the_next(made: tuple[Path, Path],
                                                                       tmp_path: Path, scratch: Path) -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()  # an ended process: its id names the folder it left
    left = scratch_parent() / f"sag-export-{child.pid}-k1ll3d"
    left.mkdir()
    (left / "export.duckdb").write_bytes(b"\0" * 100_000)
    code, out, err = run_cli(["import-store", str(made[1]), "--db", str(tmp_path / "t.duckdb")])
    assert code == 0, err
    assert not left.exists() and list(scratch_parent().iterdir()) == []


def test_a_table_dropped_from_the_manifest_but_left_in_the_folder_is_refused(made: tuple[Path, Path],
                                                                            tmp_path: Path) -> None:
    """A fuzz find: the tables of a store export vary, so without this check dropping an
    entry dropped that table's rows (a run's outcomes) without a word."""
    folder = _copy(made[1], tmp_path / "export")
    manifest = _manifest(folder)
    manifest["files"].remove(_entry(manifest, "sag_outcomes"))
    (folder / "manifest.json").write_text(json.dumps(manifest))
    _refused_import(folder, tmp_path, "sag_outcomes.parquet is in the export folder but not in its manifest")


def test_an_export_whose_rows_the_merge_refuses_leaves_no_new_store(made: tuple[Path, Path],
                                                                   tmp_path: Path) -> None:
    """A fuzz find: a table dropped from the manifest and the folder passes the file checks;
    the merge then refuses its outcomes (their items are missing), and the store the
    command had created for it stayed behind, empty."""
    folder = _copy(made[1], tmp_path / "export")
    manifest = _manifest(folder)
    manifest["files"].remove(_entry(manifest, "sag_items"))
    (folder / "manifest.json").write_text(json.dumps(manifest))
    (folder / "sag_items.parquet").unlink()
    _refused_import(folder, tmp_path, "table sag_outcomes, row (run_id=")
    assert "the run and item must exist" in one_error_line(*run_cli(["import-store", str(folder), "--db",
                                                                 str(tmp_path / "other.duckdb")]))
