"""A SAG evaluation's store as a compact export: every table and the call log round-trip
row for row, a second import adds nothing, and an export that is incomplete, changed or
of another evaluation changes nothing and says why."""
from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from common.errors import InputError
from sag.group.config import preset
from sag.evaluation.export import latest_eval_id
from sag.evaluation.runner import run_group_eval
from sag.evaluation.shipped import companion_store, import_shipped_store
from sag.runs.store_export import CALL_LOG, import_store_export, write_store_export
from sag.evaluation.suite import SuiteSpec
from sag.store.tables import SagStore
from tests.sag.fakes import ScriptedTurns


def _answer_b(agent: str, prompt: str, request) -> tuple[str, str]:  # type: ignore[no-untyped-def]
    return ("B" if "B" in request.options else request.options[0]), "It fits. NEW: no"


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """(store, its export, the evaluation id): an accuracy and safety evaluation of a scripted group."""
    folder = tmp_path_factory.mktemp("store_export")
    raw = folder / "made.duckdb"
    with SagStore(raw) as store:
        cfg = preset("sag-6")
        run_group_eval(store, SuiteSpec("safety", n_items=2), cfg,
                       runners={m: ScriptedTurns(_answer_b) for m in cfg.models()}, measure_memory=False)
        eval_id = latest_eval_id(store)
    write_store_export(raw, folder / "sag_eval_small", command="made by the test")
    return raw, folder / "sag_eval_small", eval_id


def _rows(path: Path, table: str) -> pd.DataFrame:
    with duckdb.connect(str(path), read_only=True) as con:
        frame = con.execute(f'SELECT * FROM "{table}"').df()
    return frame.sort_values(list(frame.columns[:3])).reset_index(drop=True)


def test_every_table_and_the_call_log_round_trip_row_for_row(made: tuple[Path, Path, str], tmp_path: Path) -> None:
    raw, export, eval_id = made
    manifest = json.loads((export / "manifest.json").read_text())
    tables = [f["table"] for f in manifest["files"]]
    assert CALL_LOG in tables and {"sag_runs", "sag_messages", "sag_outcomes", "sag_eval_parts"} <= set(tables)
    assert manifest["evaluations"] == [eval_id] and all(f["size_bytes"] > 0 for f in manifest["files"])
    target = tmp_path / "mine.duckdb"
    with SagStore(target) as store:
        assert not store.has_eval_parts()
        report = import_store_export(store, export, eval_id)
        assert report.added > 0 and store.has_eval_parts()
        assert import_store_export(store, export).added == 0  # a second import adds nothing
    for table in tables:
        pd.testing.assert_frame_equal(_rows(target, table), _rows(raw, table), check_dtype=False)


def test_the_shipped_store_beside_an_evaluation_file_is_its_export_folder(made: tuple[Path, Path, str],
                                                                          tmp_path: Path) -> None:
    _, export, eval_id = made
    assert companion_store(export.with_suffix(".json")) == export
    with SagStore(tmp_path / "page.duckdb") as store:
        assert import_shipped_store(store, export, eval_id).added > 0
        with pytest.raises(InputError, match="does not hold the evaluation 'other'"):
            import_shipped_store(store, export, "other")


def test_a_changed_or_missing_file_imports_nothing(made: tuple[Path, Path, str], tmp_path: Path) -> None:
    _, export, _ = made
    broken = tmp_path / "broken"
    broken.mkdir()
    for path in export.iterdir():
        (broken / path.name).write_bytes(path.read_bytes())
    messages = broken / "sag_messages.parquet"
    messages.write_bytes(messages.read_bytes()[:-40] + b"\0" * 40)
    target = tmp_path / "target.duckdb"
    with SagStore(target) as store:
        with pytest.raises(InputError, match="sag_messages.parquet has sha256 .* modified or is corrupt"):
            import_store_export(store, broken)
        assert store.runs().empty  # nothing arrived
    messages.unlink()
    with SagStore(target) as store, pytest.raises(InputError, match="sag_messages.parquet is listed in the manifest "
                                                                    "but missing"):
        import_store_export(store, broken)


def test_a_store_without_a_run_or_a_busy_folder_is_refused(made: tuple[Path, Path, str],
                                                                   tmp_path: Path) -> None:
    raw, _, _ = made
    with SagStore(tmp_path / "empty.duckdb"):
        pass
    with pytest.raises(InputError, match="holds no SAG run to export"):
        write_store_export(tmp_path / "empty.duckdb", tmp_path / "out", command="")
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    with pytest.raises(InputError, match="holds other files"):
        write_store_export(raw, busy, command="")
    assert (busy / "notes.txt").read_text() == "mine"


def test_the_commands_export_and_import_a_store(made: tuple[Path, Path, str], tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    from sag.cli import main

    raw, _, eval_id = made
    out, target = tmp_path / "cli_export", tmp_path / "cli.duckdb"
    assert main(["export-store", "--db", str(raw), "--out", str(out)]) == 0
    assert "every SAG table and the call log" in capsys.readouterr().out
    assert json.loads((out / "manifest.json").read_text())["evaluations"] == [eval_id]
    assert main(["import-store", str(out), "--db", str(target)]) == 0
    assert main(["import-store", str(out), "--db", str(target)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("imported ") and lines[0] != "imported 0 rows from " + str(out)
    assert lines[1] == f"imported 0 rows from {out}"
