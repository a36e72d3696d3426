"""A run export is trusted only as far as it checks out: file names plain and inside the
folder, sizes, sha256, row counts, schemas, unique keys, no orphan rows, finite numbers
and every manifest field of the right type -- each refusal one clear message, on the
command line one ``error:`` line with status 2, and a store that imports nothing."""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import duckdb
import pytest

from dcem.cli import main
from common.errors import InputError
from dcem.store.database import Store
from dcem.store.demo import DEMO_EXPORTS
from dcem.store.export_tables import sha256_of
from dcem.store.run_export import MANIFEST, load_run_export
from dcem.store.run_import import import_run_export, stored_run_ids

CLINICAL = DEMO_EXPORTS[1]
MIXED = DEMO_EXPORTS[2]


@pytest.fixture()
def export(tmp_path: Path) -> Path:
    target = tmp_path / "export"
    shutil.copytree(CLINICAL, target)
    return target


def _manifest(directory: Path) -> dict[str, Any]:
    return json.loads((directory / MANIFEST).read_text(encoding="utf-8"))


def _save(directory: Path, manifest: dict[str, Any]) -> None:
    (directory / MANIFEST).write_text(json.dumps(manifest, indent=1), encoding="utf-8")


def _entry(manifest: dict[str, Any], table: str) -> dict[str, Any]:
    return next(f for f in manifest["files"] if f["table"] == table)


def _rewrite(directory: Path, table: str, select: str, *, fix_rows: bool = True) -> None:
    """Replace ``<table>.parquet`` by ``select`` over it (``t``) and record the new file's
    size and sha256 in the manifest -- and its row count unless ``fix_rows`` is False."""
    path, tmp = directory / f"{table}.parquet", directory / "rewritten.parquet"
    con = duckdb.connect()
    con.execute(f"CREATE TABLE t AS SELECT * FROM read_parquet('{path}')")
    con.execute(f"COPY ({select}) TO '{tmp}' (FORMAT PARQUET)")
    rows = con.execute(f"SELECT count(*) FROM ({select})").fetchone()[0]
    con.close()
    tmp.replace(path)
    manifest = _manifest(directory)
    entry = _entry(manifest, table)
    entry.update(size_bytes=path.stat().st_size, sha256=sha256_of(path))
    if fix_rows:
        entry["rows"] = int(rows)
    _save(directory, manifest)


def _report(directory: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str, str]:
    code = main(["report", "--from-export", str(directory), *extra])
    out, err = capsys.readouterr()
    return code, out, err


def _refused(directory: Path, capsys: pytest.CaptureFixture[str], pattern: str) -> None:
    """The CLI prints one error line naming the problem; the library raises InputError."""
    code, out, err = _report(directory, capsys, "--markdown")
    assert code == 2 and out == "" and err.startswith("error: ") and err.count("\n") == 1, (code, err)
    with pytest.raises(InputError, match=pattern):
        load_run_export(directory)


def test_an_absolute_file_name_is_refused_without_reading_the_file(export: Path, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("not for the report\n", encoding="utf-8")
    manifest = _manifest(export)
    _entry(manifest, "cells")["name"] = str(outside)
    _save(export, manifest)
    _refused(export, capsys, r"files\[0\]\.name must be a plain file name inside the export folder")
    assert sha256_of(outside)[:12] not in capsys.readouterr().err


def test_a_file_of_another_export_named_with_its_hash_is_refused(export: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    other = MIXED / "outcomes.parquet"
    manifest = _manifest(export)
    entry = _entry(manifest, "outcomes")
    entry.update(name=str(other), sha256=sha256_of(other), size_bytes=other.stat().st_size,
                 rows=_entry(_manifest(MIXED), "outcomes")["rows"])
    _save(export, manifest)
    _refused(export, capsys, r"files\[3\]\.name must be a plain file name")
    entry["name"] = "../" + other.parent.name + "/outcomes.parquet"
    _save(export, manifest)
    _refused(export, capsys, r"files\[3\]\.name must be a plain file name")


def test_a_file_listed_under_another_tables_name_is_refused(export: Path) -> None:
    manifest = _manifest(export)
    _entry(manifest, "metrics")["name"] = "outcomes.parquet"
    _save(export, manifest)
    with pytest.raises(InputError, match=r"files\[4\]\.name must be metrics.parquet for the table 'metrics'"):
        load_run_export(export)


def test_a_linked_file_is_refused(export: Path) -> None:
    target = export / "outcomes.parquet"
    moved = export.parent / "elsewhere.parquet"
    target.replace(moved)
    target.symlink_to(moved)
    with pytest.raises(InputError, match="outcomes.parquet is a link"):
        load_run_export(export)


def test_duplicated_outcome_rows_are_refused_by_count_and_by_key(export: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    _rewrite(export, "outcomes", "SELECT * FROM t UNION ALL SELECT * FROM t", fix_rows=False)
    _refused(export, capsys, r"outcomes.parquet holds 640 rows, the manifest says 320")
    manifest = _manifest(export)
    _entry(manifest, "outcomes")["rows"] = 640
    _save(export, manifest)
    _refused(export, capsys, r"outcomes.parquet holds more than one row for the key \(llm-")


def test_row_counts_are_required_whole_numbers(export: Path) -> None:
    manifest = _manifest(export)
    del _entry(manifest, "turns")["rows"]
    _save(export, manifest)
    with pytest.raises(InputError, match=r"files\[5\] lacks the field 'rows'"):
        load_run_export(export)
    _entry(manifest, "turns")["rows"] = "2496"
    _save(export, manifest)
    with pytest.raises(InputError, match=r"files\[5\]\.rows must be a whole number >= 0, got '2496'"):
        load_run_export(export)


@pytest.mark.parametrize(("field", "value", "pattern"), [
    ("spec", None, r"runs\[0\]\.spec must be an object, got None"),
    ("spec", [], r"runs\[0\]\.spec must be an object"),
    ("config", None, r"runs\[0\]\.config must be an object"),
    ("seeds", [0, 0], r"runs\[0\]\.seeds lists a seed twice"),
    ("seeds", [1], r"runs\[0\]\.spec\.seeds must equal the run's seeds"),
    ("kind", "other", r"runs\[0\]\.kind must be one of synthetic, clinical"),
    ("created_at", 5, r"runs\[0\]\.created_at must be a date and time"),
    ("extra", 1, r"runs\[0\] has an unknown field 'extra'"),
])
def test_a_damaged_run_entry_names_its_field(export: Path, capsys: pytest.CaptureFixture[str], field: str,
                                             value: Any, pattern: str) -> None:
    manifest = _manifest(export)
    manifest["runs"][0][field] = value
    _save(export, manifest)
    _refused(export, capsys, pattern)


@pytest.mark.parametrize(("key", "value", "pattern"), [
    ("agents", "smollm2-135m", r"runs\[0\]\.spec\.agents must be a non-empty list"),
    ("scenarios", ["S1", 2], r"runs\[0\]\.spec\.scenarios\[1\] must be one of S1, S2, S3a, S3b"),
    ("n_cal", 1.5, r"runs\[0\]\.spec\.n_cal must be a whole number >= 1"),
    ("dataset", None, r"runs\[0\]\.spec\.dataset must be non-empty text"),
    ("base_config", {"t_max": -1}, r"runs\[0\]\.spec\.base_config is not a valid mediator config"),
])
def test_a_damaged_run_spec_names_its_field(export: Path, key: str, value: Any, pattern: str) -> None:
    manifest = _manifest(export)
    manifest["runs"][0]["spec"][key] = value
    _save(export, manifest)
    with pytest.raises(InputError, match=pattern):
        load_run_export(export)


def test_a_manifest_that_is_not_strict_json_is_refused(export: Path, capsys: pytest.CaptureFixture[str]) -> None:
    text = (export / MANIFEST).read_text(encoding="utf-8")
    (export / MANIFEST).write_text(text.replace('"rows": 8,', '"rows": NaN,', 1), encoding="utf-8")
    _refused(export, capsys, "cannot read .*manifest.json: NaN is not a number")
    (export / MANIFEST).write_text("[" * 5000 + "]" * 5000, encoding="utf-8")
    _refused(export, capsys, "nested too deeply")


def test_a_dropped_column_and_a_changed_type_are_refused(export: Path) -> None:
    _rewrite(export, "metrics", "SELECT * EXCLUDE (value) FROM t")
    with pytest.raises(InputError, match="metrics.parquet lacks the column 'value'"):
        load_run_export(export)
    shutil.copy(CLINICAL / "metrics.parquet", export / "metrics.parquet")
    _rewrite(export, "metrics", "SELECT * REPLACE (CAST(seed AS BIGINT) AS seed) FROM t")
    with pytest.raises(InputError, match="metrics.parquet column 'seed' is BIGINT, expected INTEGER"):
        load_run_export(export)


def test_a_nan_where_a_number_must_be_finite_is_refused(export: Path) -> None:
    _rewrite(export, "outcomes", "SELECT * REPLACE (CASE WHEN case_id = (SELECT min(case_id) FROM t) "
                                 "THEN 'NaN'::DOUBLE ELSE loss END AS loss) FROM t")
    with pytest.raises(InputError, match="outcomes.parquet holds a NaN or infinite number in 'loss'"):
        load_run_export(export)


def test_orphan_rows_are_refused(export: Path) -> None:
    _rewrite(export, "outcomes", "SELECT * REPLACE (CASE WHEN case_id = (SELECT min(case_id) FROM t) "
                                 "THEN 'nowhere' ELSE case_id END AS case_id) FROM t")
    with pytest.raises(InputError, match=r"outcomes.parquet holds a outcome with no cases row: \(llm-.*, nowhere"):
        load_run_export(export)


def test_a_truncated_file_with_its_hash_is_refused(export: Path) -> None:
    path = export / "traces.parquet"
    path.write_bytes(path.read_bytes()[:1000])
    manifest = _manifest(export)
    _entry(manifest, "traces").update(size_bytes=1000, sha256=sha256_of(path))
    _save(export, manifest)
    with pytest.raises(InputError, match="traces.parquet cannot be read"):
        load_run_export(export)


def test_an_older_turns_table_without_the_later_columns_still_loads(export: Path) -> None:
    _rewrite(export, "turns", "SELECT * EXCLUDE (note, reply) FROM t")  # the first version of the format
    turns = load_run_export(export).turns
    assert list(turns.columns)[-1] == "examples_json" and len(turns) == 2496
    assert turns["note"].isna().all() and turns["examples_json"].isna().all()


def test_a_refused_export_imports_nothing(export: Path, tmp_path: Path) -> None:
    _rewrite(export, "outcomes", "SELECT * FROM t UNION ALL SELECT * FROM t")
    with Store(tmp_path / "s.duckdb") as store:
        with pytest.raises(InputError, match="more than one row for the key"):
            import_run_export(store, export)
        assert stored_run_ids(store) == set()
        assert store.con.execute("SELECT count(*) FROM outcomes").fetchone()[0] == 0
