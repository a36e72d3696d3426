"""Issue 51, the D-CEM run export's reader and writer with the one check every export
reader shares (:mod:`common.export_schema`): a folder named ``it's ok`` is read, written
and imported (paths reach DuckDB as bound parameters); a column of the null type (no
value at all) reads as its declared type, and a required one is still refused as empty;
``"rows": "30"`` is refused as not a whole number."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest

from common.errors import InputError
from common.export_schema import file_sha256
from dcem.store.database import Store
from dcem.store.demo import DEMO_EXPORTS
from dcem.store.run_export import MANIFEST, load_run_export, write_run_export
from dcem.store.run_import import import_run_export

CLINICAL = DEMO_EXPORTS[1]


@pytest.fixture()
def export(tmp_path: Path) -> Path:
    return Path(shutil.copytree(CLINICAL, tmp_path / "it's \"ok\""))


def _null_typed(folder: Path, table: str, column: str) -> None:
    """Replace ``column`` of ``table`` by a column of Parquet's null type, the manifest updated."""
    path = folder / f"{table}.parquet"
    with duckdb.connect() as con:
        con.execute("CREATE TABLE t AS SELECT * FROM read_parquet(?)", [str(path)])
        con.execute(f"COPY (SELECT * REPLACE (NULL AS {column}) FROM t) TO ? (FORMAT PARQUET)", [str(path)])
        assert con.execute("DESCRIBE SELECT * FROM read_parquet(?)", [str(path)]).fetchall()[
            [c for c, *_ in con.execute("DESCRIBE t").fetchall()].index(column)][1] == '"NULL"'
    manifest = json.loads((folder / MANIFEST).read_text())
    next(f for f in manifest["files"] if f["table"] == table).update(sha256=file_sha256(path),
                                                                     size_bytes=path.stat().st_size)
    (folder / MANIFEST).write_text(json.dumps(manifest))


def test_an_export_in_a_folder_named_with_quotes_is_read_written_and_imported(export: Path, tmp_path: Path) -> None:
    read = load_run_export(export)
    with Store(tmp_path / "it's mine.duckdb") as store:
        assert import_run_export(store, export) == read.run_ids
        again = tmp_path / "it's \"again\""
        write_run_export(store, read.run_ids, again, command="python -m dcem export ...", models=[])
    assert load_run_export(again).run_ids == read.run_ids


def test_a_column_without_any_value_reads_as_its_type_and_a_required_one_is_refused(export: Path) -> None:
    _null_typed(export, "cases", "source_id")
    assert load_run_export(export).cases["source_id"].isna().all()
    _null_typed(export, "cases", "truth")
    with pytest.raises(InputError, match="cases.parquet has an empty 'truth'"):
        load_run_export(export)


def test_rows_as_text_are_refused_as_not_a_whole_number(export: Path) -> None:
    manifest = json.loads((export / MANIFEST).read_text())
    manifest["files"][0]["rows"] = str(manifest["files"][0]["rows"])
    (export / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(InputError, match=r"files\[0\]\.rows must be a whole number >= 0, got '\d+'"):
        load_run_export(export)
