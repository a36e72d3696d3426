"""Issue 51, ``python -m training report --name``: the name is checked as the export
command checks it (no absolute path, no ``..``); a manifest nested 100,000 deep, a
changed, missing or emptied column are refused in one line (exit 2) by the schema every
export reader checks (:data:`training.export.SCHEMAS`)."""
from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path
from typing import Any

import duckdb
import pytest

from common.errors import InputError
from common.export_schema import file_sha256
from training.__main__ import main
from training.export import SCHEMAS, check_name, read_training_export, write_training_export
from training.store import TrainingStore

from .test_export import _store

SETTINGS = {"steps": 2, "batch_size": 8, "learning_rate": 5e-4, "updates_per_batch": 2,
            "lora": {"r": 16, "alpha": 32.0, "layers": 8}, "grpo": {"eps": 0.2, "beta": 0.04, "group_size": 0}}


@pytest.fixture()
def shipped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The export ``ddx-t`` among the shipped ones (exports and adapters folders of the test)."""
    db = _store(tmp_path, settings=SETTINGS)
    exports, adapters = tmp_path / "data" / "exports", tmp_path / "data" / "adapters"
    with TrainingStore(db, read_only=True) as store:
        write_training_export(store, "r1", exports / "ddx-t", adapters, "ddx-t", command="c")
    monkeypatch.setattr("training.shipped.exports_dir", lambda: exports)
    monkeypatch.setattr("training.shipped.adapters_dir", lambda: adapters)
    return exports / "ddx-t"


def _report(name: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["report", "--name", name])
    return code, out.getvalue(), err.getvalue()


def _refused(name: str) -> str:
    code, out, err = _report(name)
    assert code == 2 and out == "" and err.startswith("error: ") and err.count("\n") == 1, (code, err)
    return err


def _rewrite(folder: Path, table: str, select: str) -> None:
    path = folder / f"{table}.parquet"
    with duckdb.connect() as con:
        con.execute("CREATE TABLE t AS SELECT * FROM read_parquet(?)", [str(path)])
        con.execute(f"COPY ({select}) TO ? (FORMAT PARQUET)", [str(path)])
        rows = con.execute("SELECT count(*) FROM read_parquet(?)", [str(path)]).fetchone()[0]
    manifest = json.loads((folder / "manifest.json").read_text())
    entry = next(f for f in manifest["files"] if f["table"] == table)
    entry.update(sha256=file_sha256(path), size_bytes=path.stat().st_size, rows=rows)
    (folder / "manifest.json").write_text(json.dumps(manifest))


def test_the_intact_export_reports_and_reads_in_its_schema(shipped: Path) -> None:
    code, out, err = _report("ddx-t")
    assert code == 0 and err == "" and "| heldout | 3 |" in out
    export = read_training_export(shipped, shipped.parent.parent / "adapters")
    for table, schema in SCHEMAS.items():
        assert list(getattr(export, table).columns) == [c for c, _ in schema]


@pytest.mark.parametrize("name", ["../ddx-t", "/etc", "exports/ddx-t", "..", "", ".hidden"])
def test_a_name_that_is_a_path_is_refused_as_the_export_command_refuses_it(shipped: Path, name: str) -> None:
    outside = shipped.parent.parent / "ddx-t"  # "../ddx-t" would name a real export here
    shutil.copytree(shipped, outside)
    assert "name: must be letters, digits" in _refused(name)
    with pytest.raises(InputError, match="name: must be letters"):
        check_name(name)


def test_a_manifest_nested_100000_deep_is_refused_in_one_line(shipped: Path) -> None:
    (shipped / "manifest.json").write_text("[" * 100_000 + "]" * 100_000)
    assert "manifest.json is nested too deeply (more than 64 levels)" in _refused("ddx-t")


@pytest.mark.parametrize("table, select, message", [
    ("steps", "SELECT * REPLACE (CAST(seconds AS VARCHAR) AS seconds) FROM t",
     "steps.parquet column 'seconds' is VARCHAR, expected DOUBLE"),
    ("evals", "SELECT * EXCLUDE (n_options) FROM t", "evals.parquet lacks the column 'n_options'"),
    ("evals", "SELECT * REPLACE (CAST(n_options AS DOUBLE) AS n_options) FROM t",
     "evals.parquet column 'n_options' is DOUBLE, expected INTEGER"),
    ("answers", "SELECT * RENAME (truth AS right_answer) FROM t", "answers.parquet lacks the column 'truth'"),
    ("answers", "SELECT * REPLACE (CAST(NULL AS VARCHAR) AS truth) FROM t", "answers.parquet has an empty 'truth'"),
], ids=["seconds as text", "a dropped column", "a float count", "a renamed column", "an emptied column"])
def test_a_changed_or_missing_column_is_refused_in_one_line(shipped: Path, table: str, select: str,
                                                            message: str) -> None:
    _rewrite(shipped, table, select)
    assert message in _refused("ddx-t")


def _edit_run(folder: Path, change: Any) -> None:
    manifest = json.loads((folder / "manifest.json").read_text())
    change(manifest["run"])
    (folder / "manifest.json").write_text(json.dumps(manifest))


@pytest.mark.parametrize("change, message", [
    (lambda run: run["settings"].pop("lora"), "run.settings.lora.r must be a whole number, got None"),
    (lambda run: run["settings"].update(learning_rate="5e-4"), "run.settings.learning_rate must be a number"),
    (lambda run: run.update(n_train=1.5), "run.n_train must be a whole number, got 1.5"),
    (lambda run: run["settings"]["lora"].update(layers="all"), "run.settings.lora.layers or run.settings.critic"),
], ids=["no lora", "a rate as text", "a fractional count", "layers as text"])
def test_settings_the_report_reads_are_checked_in_one_line(shipped: Path, change: Any, message: str) -> None:
    _edit_run(shipped, change)
    assert message in _refused("ddx-t")


def test_a_key_held_twice_or_a_set_without_its_step_0_row_is_refused(shipped: Path) -> None:
    _rewrite(shipped, "answers", "SELECT * FROM t UNION ALL SELECT * FROM t WHERE item_id = 'c1' AND step = 0")
    assert "answers.parquet holds more than one row for (0, heldout, c1)" in _refused("ddx-t")
    _rewrite(shipped, "answers", "SELECT DISTINCT * FROM t")
    assert _report("ddx-t")[0] == 0
    _rewrite(shipped, "evals", "SELECT * FROM t WHERE step > 0")
    assert "evals.parquet has no step-0 row for the held-out set 'heldout'" in _refused("ddx-t")
