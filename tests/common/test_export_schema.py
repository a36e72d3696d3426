"""The one check every export reader makes (:mod:`common.export_schema`) and the shared
writer (:mod:`common.table_export`): manifest entries checked before any file is
touched, one wording for a link, a missing or a changed file, columns of the declared
type only, strict manifests, and paths (a folder named ``it's ok``) as bound parameters."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pytest

from common import export_schema
from common.errors import InputError
from common.export_schema import check_columns, check_entries, check_file, file_sha256
from common.table_export import (copy_query, export_format, make_out_folder, read_manifest, read_tables,
                                 write_manifest, write_table)

SCHEMA = (("run_id", "VARCHAR"), ("rounds", "INTEGER"), ("seconds", "DOUBLE"), ("correct", "BOOLEAN"))
FRAME = pd.DataFrame({"run_id": ["r1", "r1"], "rounds": [1, 1], "seconds": [0.5, 1.5], "correct": [True, False]})


def _export(folder: Path, frame: pd.DataFrame = FRAME) -> dict[str, Any]:
    folder.mkdir(parents=True, exist_ok=True)
    manifest = {"format": "test/1", "files": [write_table(folder, "outcomes", frame, SCHEMA)]}
    write_manifest(folder, manifest)
    return manifest


def _rewrite(folder: Path, select: str) -> None:
    """Rewrite outcomes.parquet as ``select`` (over its rows as ``t``) makes it, the
    manifest's sha256 and size updated to the new file."""
    path = folder / "outcomes.parquet"
    with duckdb.connect() as con:
        con.execute("CREATE TABLE t AS SELECT * FROM read_parquet(?)", [str(path)])
        con.execute(f"COPY ({select}) TO ? (FORMAT PARQUET)", [str(path)])
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["files"][0].update(sha256=file_sha256(path), size_bytes=path.stat().st_size)
    write_manifest(folder, manifest)


def _read(folder: Path) -> dict[str, pd.DataFrame]:
    return read_tables(folder, read_manifest(folder, "test/1"), {"outcomes": SCHEMA})


def test_a_table_round_trips_in_a_folder_whose_name_holds_quotes(tmp_path: Path) -> None:
    folder = tmp_path / "it's \"ok\""
    _export(folder)
    frame = _read(folder)["outcomes"]
    assert list(frame.columns) == [c for c, _ in SCHEMA] and frame["rounds"].tolist() == [1, 1]
    with duckdb.connect() as con:
        entry = copy_query(con, "SELECT 1 AS a", folder, "more")
    assert entry["rows"] == 1 and (folder / "more.parquet").is_file()


@pytest.mark.parametrize("change, message", [
    ("CAST(rounds AS DOUBLE) + 1.6 AS rounds", "column 'rounds' is DOUBLE, expected INTEGER"),
    ("CAST(seconds AS VARCHAR) AS seconds", "column 'seconds' is VARCHAR, expected DOUBLE"),
    ("CAST(correct AS BIGINT) AS correct", "column 'correct' is BIGINT, expected BOOLEAN"),
], ids=["a float in rounds", "text in seconds", "integers in correct"])
def test_a_column_of_another_type_is_refused_though_the_manifest_hash_is_updated(
        tmp_path: Path, change: str, message: str) -> None:
    _export(tmp_path)
    _rewrite(tmp_path, f"SELECT * REPLACE ({change}) FROM t")
    with pytest.raises(InputError, match=message):
        _read(tmp_path)


def test_a_missing_an_unknown_and_a_reordered_column_are_refused(tmp_path: Path) -> None:
    _export(tmp_path)
    _rewrite(tmp_path, "SELECT * EXCLUDE (seconds) FROM t")
    with pytest.raises(InputError, match="lacks the column 'seconds'"):
        _read(tmp_path)
    _export(tmp_path)
    _rewrite(tmp_path, "SELECT *, 1 AS extra FROM t")
    with pytest.raises(InputError, match="has an unknown column 'extra'"):
        _read(tmp_path)
    _export(tmp_path)
    _rewrite(tmp_path, "SELECT rounds, run_id, seconds, correct FROM t")
    with pytest.raises(InputError, match="has its columns in another order"):
        _read(tmp_path)


def test_a_column_without_any_value_reads_as_its_declared_type() -> None:
    check_columns([("run_id", '"NULL"'), ("rounds", "INTEGER")], SCHEMA[:2], "x.parquet")
    with pytest.raises(InputError, match="x.parquet has the column 'rounds' twice"):
        check_columns([("rounds", "INTEGER"), ("rounds", "INTEGER")], SCHEMA[1:2], "x.parquet")


def test_a_required_column_with_an_empty_value_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "e"
    _export(folder, FRAME.assign(seconds=[0.5, None]))
    with pytest.raises(InputError, match="has an empty 'seconds'"):
        read_tables(folder, read_manifest(folder, "test/1"), {"outcomes": SCHEMA}, required={"outcomes": ["seconds"]})
    assert _read(folder)["outcomes"]["seconds"].isna().sum() == 1  # not required: read as empty


def _entry(**change: Any) -> dict[str, Any]:
    return {"name": "sag_runs.parquet", "table": "sag_runs", "rows": 30, "size_bytes": 10, "sha256": "a" * 64,
            **change}


@pytest.mark.parametrize("change, message", [
    ({"rows": "30"}, r"files\[0\]\.rows must be a whole number >= 0, got '30'"),
    ({"rows": True}, r"files\[0\]\.rows must be a whole number >= 0, got True"),
    ({"size_bytes": -1}, r"files\[0\]\.size_bytes must be a whole number >= 0"),
    ({"sha256": "A" * 64}, r"files\[0\]\.sha256 must be 64 lowercase hex digits"),
    ({"table": "sag_x/../../outside_items", "name": "sag_x/../../outside_items.parquet"},
     r"files\[0\]\.table must be a plain table name"),
    ({"name": "../sag_runs.parquet"}, r"files\[0\]\.name must be a plain file name inside the export folder"),
    ({"name": "sag_items.parquet"}, r"files\[0\]\.name must be sag_runs.parquet for the table 'sag_runs'"),
    ({"extra": 1}, r"files\[0\] has an unknown field 'extra'"),
    ({"table": "runs"}, r"files\[0\]\.table is not a table of this export"),
], ids=["rows as text", "rows as true", "negative size", "upper-case sha", "a path as table", "a path as name",
        "another table's file", "an unknown field", "a table of another export"])
def test_a_bad_file_entry_is_refused_naming_the_field(change: dict[str, Any], message: str) -> None:
    with pytest.raises(InputError, match=message):
        check_entries([_entry(**change)], "m.json", allowed=lambda t: t.startswith("sag_"))


def test_entries_are_checked_before_any_file_is_hashed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hashed: list[Path] = []
    monkeypatch.setattr(export_schema, "file_sha256", lambda path: hashed.append(path) or "0" * 64)
    folder = tmp_path / "export"
    (tmp_path / "outside_items.parquet").write_bytes(b"outside")
    files = [_entry(), _entry(table="sag_x/../../outside_items", name="sag_x/../../outside_items.parquet")]
    with pytest.raises(InputError, match="must be a plain table name"):
        for entry in check_entries(files, "m.json").values():
            check_file(folder, entry)
    assert hashed == []


def test_a_link_a_missing_file_and_a_changed_file_have_one_wording_each(tmp_path: Path) -> None:
    _export(tmp_path / "a")
    entry = read_manifest(tmp_path / "a", "test/1")["files"][0]
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "outcomes.parquet").symlink_to(tmp_path / "a" / "outcomes.parquet")
    with pytest.raises(InputError, match=r"b/outcomes.parquet is a link; an export holds its own files"):
        check_file(tmp_path / "b", entry)
    with pytest.raises(InputError, match=r"is listed in the manifest but missing from"):
        check_file(tmp_path / "c", entry)
    with pytest.raises(InputError, match=r"has sha256 .*, the manifest says .*: the file was modified or is corrupt"):
        check_file(tmp_path / "a", {**entry, "sha256": "0" * 64})


def test_a_manifest_nested_100000_deep_is_refused_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(InputError, match=r"manifest.json is nested too deeply \(more than 64 levels\)"):
        read_manifest(tmp_path, "test/1")
    assert export_format(tmp_path) is None
    (tmp_path / "manifest.json").write_text('{"format": "test/1", "rows": NaN}')
    with pytest.raises(InputError, match="NaN is not a number"):
        read_manifest(tmp_path, "test/1")


def test_an_out_folder_that_cannot_be_made_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    (tmp_path / "a file").write_text("x")
    with pytest.raises(InputError, match="out: cannot write to .*a file/export: Not a directory"):
        make_out_folder(tmp_path / "a file" / "export", ("t.parquet",))
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "notes.txt").write_text("mine")
    with pytest.raises(InputError, match="holds other files"):
        make_out_folder(tmp_path / "busy", ("t.parquet",))
    with pytest.raises(InputError, match="give the folder"):
        make_out_folder("", ("t.parquet",))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a file", "busy"]


def test_the_writer_refuses_a_frame_that_is_not_its_schema(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="its schema"):
        write_table(tmp_path, "outcomes", FRAME.drop(columns=["correct"]), SCHEMA)
    assert list(tmp_path.iterdir()) == []
