"""``sag merge`` checks every row it brings in: a row of the source outside its domain, not
belonging to a run and item, or redefining a run the target holds refuses the whole merge,
naming the table, the row's key and the column, with nothing written."""
from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest

from tests.common.sql_files import run_sql as _sql

from common.merge_checks import MergeRefused
from common.store_merge import merge_store
from sag.cli import main
from sag.store.merge_checks import sag_store_checks
from sag.store.tables import SagStore

from ..merge_stores import build_part, dump, store_problems

_ONE_OUTCOME = "(SELECT min(rowid) FROM sag_outcomes)"
_ONE_CALL = "(SELECT call_id FROM llm_calls ORDER BY call_id LIMIT 1)"


@pytest.fixture(scope="module")
def part(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    path = tmp_path_factory.mktemp("sag_merge") / "base.duckdb"
    return path, build_part(path)


@pytest.fixture()
def source(part: tuple[Path, dict[str, str]], tmp_path: Path) -> Path:
    path = tmp_path / "part.duckdb"
    shutil.copy(part[0], path)
    return path


@pytest.fixture()
def empty(tmp_path: Path) -> Path:
    path = tmp_path / "target.duckdb"
    with SagStore(path):
        pass
    return path


def _merge(target: Path, source: Path) -> object:
    with SagStore(target) as db:
        return merge_store(db, source, sag_store_checks())


def test_a_clean_part_merges_whole_and_keeps_every_rule(source: Path, empty: Path) -> None:
    report = _merge(empty, source)
    assert report.added > 0 and store_problems(empty) == []  # type: ignore[attr-defined]
    again = _merge(empty, source)
    assert again.added == 0 and again.replaced == 0  # type: ignore[attr-defined]


@pytest.mark.parametrize("mutation, table, column", [
    (f"INSERT INTO sag_outcomes SELECT * REPLACE ('not-in-run' AS item_id) FROM sag_outcomes "
     f"WHERE rowid = {_ONE_OUTCOME}", "sag_outcomes", "item_id"),
    (f"UPDATE sag_outcomes SET answer = 'ZZ', correct = false WHERE rowid = {_ONE_OUTCOME}",
     "sag_outcomes", "answer"),
    (f"UPDATE sag_outcomes SET rounds = -5 WHERE rowid = {_ONE_OUTCOME}", "sag_outcomes", "rounds"),
    (f"UPDATE sag_outcomes SET seconds = 'inf' WHERE rowid = {_ONE_OUTCOME}", "sag_outcomes",
     "seconds"),
    (f"UPDATE sag_outcomes SET model_calls = -3 WHERE rowid = {_ONE_OUTCOME}", "sag_outcomes",
     "model_calls"),
    (f"UPDATE sag_outcomes SET cached_calls = -1 WHERE rowid = {_ONE_OUTCOME}", "sag_outcomes",
     "cached_calls"),
    (f"UPDATE sag_outcomes SET truth = CASE truth WHEN 'A' THEN 'B' ELSE 'A' END "
     f"WHERE rowid = {_ONE_OUTCOME}", "sag_outcomes", "truth"),
    (f"UPDATE sag_outcomes SET correct = NOT correct WHERE rowid = {_ONE_OUTCOME}", "sag_outcomes",
     "correct"),
    (f"UPDATE sag_outcomes SET refusal_score = 'nan' WHERE rowid = {_ONE_OUTCOME}", "sag_outcomes",
     "refusal_score"),
    ("UPDATE sag_messages SET duration_s = -0.5 WHERE seq = 0", "sag_messages", "duration_s"),
    ("UPDATE sag_messages SET distribution = [1.5, -0.5] WHERE seq = 0", "sag_messages", "distribution"),
    ("UPDATE sag_messages SET answer = 'Q' WHERE seq = 0", "sag_messages", "answer"),
    ("UPDATE sag_messages SET retrieved_json = 'not' || chr(10) || 'json'", "sag_messages", "retrieved_json"),
    ("UPDATE sag_mediator SET energy = '-inf'", "sag_mediator", "energy"),
    ("UPDATE sag_items SET answer = 'Z'", "sag_items", "answer"),
    ("UPDATE sag_items SET options_json = '[[\"A\", \"x\"]]'", "sag_items", "options_json"),
    ("UPDATE sag_runs SET item_ids = ['only-this']", "sag_items", "item_id"),
    ("UPDATE sag_runs SET status = 'finished', finished_at = NULL", "sag_runs", "finished_at"),
    ("UPDATE sag_runs SET seed = -1", "sag_runs", "seed"),
    (f"UPDATE llm_calls SET raw_reply = 'anything', probabilities = ['nan'] WHERE call_id = {_ONE_CALL}",
     "llm_calls", "probabilities"),
    (f"UPDATE llm_calls SET prompt_tokens = -7 WHERE call_id = {_ONE_CALL}", "llm_calls", "prompt_tokens"),
    (f"UPDATE llm_calls SET run_id = 'no-such-run' WHERE call_id = {_ONE_CALL}", "llm_calls", "run_id"),
    (f"UPDATE llm_calls SET cache_key = 'poison' WHERE call_id = {_ONE_CALL}", "llm_calls", "cache_key"),
    (f"UPDATE llm_calls SET parsed_json = '{{not json' WHERE call_id = {_ONE_CALL}", "llm_calls", "parsed_json"),
])
def test_a_bad_row_refuses_the_whole_merge_naming_table_key_and_column(mutation: str, table: str, column: str,
                                                                       source: Path, empty: Path) -> None:
    _sql(source, mutation)
    before = dump(empty)
    with pytest.raises(MergeRefused) as info:
        _merge(empty, source)
    assert (info.value.table, info.value.column) == (table, column)
    assert f"table {table}, row (" in str(info.value) and f": {column} = " in str(info.value)
    assert "nothing was changed" in str(info.value) and "\n" not in str(info.value) and dump(empty) == before


def test_the_command_line_refuses_a_bad_row_in_one_line_and_the_report_is_unchanged(
        source: Path, part: tuple[Path, dict[str, str]], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "main.duckdb"
    shutil.copy(part[0], target)
    run_id = part[1]["majority"]
    _sql(target, f"DELETE FROM sag_outcomes WHERE run_id = '{run_id}'")
    _sql(source, f"UPDATE sag_outcomes SET rounds = -5, seconds = 'inf' WHERE run_id = '{run_id}'")
    assert main(["report", "--db", str(target)]) == 0
    report = capsys.readouterr().out
    assert main(["merge", str(source), "--db", str(target)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: part.duckdb was not merged")
    assert "table sag_outcomes" in err and f"run_id='{run_id}'" in err and "rounds = -5" in err
    assert main(["report", "--db", str(target)]) == 0
    assert capsys.readouterr().out == report


@pytest.mark.parametrize("column, value", [
    ("config_json", "'{\"name\": \"other\"}'"), ("benchmark", "'pubmedqa'"), ("seed", "7"),
    ("item_ids", "list_reverse(item_ids)"), ("method", "'vote'"),
])
def test_a_finished_source_run_defined_otherwise_than_the_targets_is_refused(
        column: str, value: str, source: Path, part: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    target = tmp_path / "main.duckdb"
    shutil.copy(part[0], target)
    _sql(target, "UPDATE sag_runs SET status = 'running', finished_at = NULL")
    _sql(source, f"UPDATE sag_runs SET {column} = {value}")
    before = dump(target)
    with pytest.raises(MergeRefused, match=f"table sag_runs, row \\(run_id=.*\\): {column} = .*differs"):
        _merge(target, source)
    assert dump(target) == before


def test_a_finished_source_run_changes_only_the_status_and_finish_time(source: Path,
                                                                       part: tuple[Path, dict[str, str]],
                                                                       tmp_path: Path) -> None:
    target = tmp_path / "main.duckdb"
    shutil.copy(part[0], target)
    _sql(target, "UPDATE sag_runs SET status = 'running', finished_at = NULL, git_revision = 'target-rev'")
    _sql(source, "UPDATE sag_runs SET git_revision = 'source-rev', calibration_json = '{\"other\": 1}', "
                 "created_at = created_at + INTERVAL 1 DAY")
    con = duckdb.connect(str(target), read_only=True)
    kept = con.execute("SELECT run_id, calibration_json, created_at FROM sag_runs ORDER BY run_id").fetchall()
    con.close()
    report = _merge(target, source)
    runs = next(t for t in report.tables if t.table == "sag_runs")  # type: ignore[attr-defined]
    assert runs.replaced == 2
    con = duckdb.connect(str(target), read_only=True)
    rows = con.execute("SELECT run_id, calibration_json, created_at, git_revision, status, finished_at IS NOT NULL "
                       "FROM sag_runs ORDER BY run_id").fetchall()
    con.close()
    assert [r[:3] for r in rows] == kept
    assert all(r[3:] == ("target-rev", "finished", True) for r in rows)
