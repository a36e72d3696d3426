"""Issue 51, the older SAG runs export (``sag report --from-export``, ``sag compare
--export``): each table is read in its declared schema (:data:`sag.runs.run_export.SCHEMAS`),
so a float ``rounds`` (which printed 1.40 where 1.00 is right) or text in a number column
is refused in one line, as the other export readers refuse it; so are ``"rows": "30"`` and
a manifest nested 100,000 deep."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest

from common.export_schema import file_sha256
from sag.runs.run_export import SCHEMAS, read_run_export

from ..cli_fakes import one_error_line, run_cli

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "sag_runs_export_before_units"


@pytest.fixture()
def export(tmp_path: Path) -> Path:
    return Path(shutil.copytree(FIXTURE, tmp_path / "it's a runs export"))


def _rewrite(folder: Path, table: str, select: str) -> None:
    path = folder / f"{table}.parquet"
    with duckdb.connect() as con:
        con.execute("CREATE TABLE t AS SELECT * FROM read_parquet(?)", [str(path)])
        con.execute(f"COPY ({select}) TO ? (FORMAT PARQUET)", [str(path)])
    manifest = json.loads((folder / "manifest.json").read_text())
    entry = next(f for f in manifest["files"] if f["table"] == table)
    entry.update(sha256=file_sha256(path), size_bytes=path.stat().st_size)
    (folder / "manifest.json").write_text(json.dumps(manifest))


def test_the_intact_export_reads_in_its_declared_schema(export: Path) -> None:
    read = read_run_export(export)
    for table, schema in SCHEMAS.items():
        assert list(getattr(read, table).columns) == [c for c, _ in schema]
    code, out, err = run_cli(["report", "--from-export", str(export)])
    assert code == 0 and err == "" and "1.00" in out


@pytest.mark.parametrize("table, change, message", [
    ("outcomes", "CAST(rounds AS DOUBLE) + 0.4 AS rounds", "column 'rounds' is DOUBLE, expected INTEGER"),
    ("outcomes", "CAST(seconds AS VARCHAR) AS seconds", "column 'seconds' is VARCHAR, expected DOUBLE"),
    ("outcomes", "CAST(correct AS VARCHAR) AS correct", "column 'correct' is VARCHAR, expected BOOLEAN"),
    ("outcomes", "CAST(model_calls AS VARCHAR) AS model_calls", "column 'model_calls' is VARCHAR, expected INTEGER"),
    ("answers", "CAST(round AS DOUBLE) AS round", "column 'round' is DOUBLE, expected INTEGER"),
], ids=["rounds 1.4", "seconds as text", "correct as text", "calls as text", "a float round"])
def test_a_column_of_another_type_is_refused_not_averaged(export: Path, table: str, change: str,
                                                          message: str) -> None:
    _rewrite(export, table, f"SELECT * REPLACE ({change}) FROM t")
    err = one_error_line(*run_cli(["report", "--from-export", str(export)]))
    assert f"{table}.parquet {message}" in err and "1.40" not in err
    runs = json.loads((export / "manifest.json").read_text())["runs"]
    err = one_error_line(*run_cli(["compare", "--export", str(export), runs[0]["run_id"], runs[1]["run_id"]]))
    assert message in err


def test_a_dropped_column_is_refused(export: Path) -> None:
    _rewrite(export, "outcomes", "SELECT * EXCLUDE (seconds) FROM t")
    assert "outcomes.parquet lacks the column 'seconds'" in one_error_line(
        *run_cli(["report", "--from-export", str(export)]))


def test_rows_as_text_and_a_deep_manifest_are_refused_in_one_line(export: Path) -> None:
    manifest = json.loads((export / "manifest.json").read_text())
    manifest["files"][0]["rows"] = str(manifest["files"][0]["rows"])
    (export / "manifest.json").write_text(json.dumps(manifest))
    err = one_error_line(*run_cli(["report", "--from-export", str(export)]))
    assert "files[0].rows must be a whole number >= 0, got '2'" in err
    (export / "manifest.json").write_text("[" * 100_000 + "]" * 100_000)
    err = one_error_line(*run_cli(["report", "--from-export", str(export)]))
    assert "manifest.json is nested too deeply" in err
