"""A training export imports into a store once: its run row, steps, evaluations and answers;
a second import adds nothing, and a changed or missing file, a bad manifest or a value a
merge would refuse writes nothing and is refused with one line."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from common.db import StoreError
from common.errors import InputError
from common.table_export import write_table
from training.export import SCHEMAS, read_training_export
from training.import_export import import_training_export
from training.shipped import adapters_dir
from training.store import TrainingStore

from .export_copies import copy_export, dump

SINGLE, GROUP, OTHER = "ddx-views-r1", "ddx-views-debate", "sag6-grpo"


def _rows(manifest: dict, table: str) -> int:
    return next(f["rows"] for f in manifest["files"] if f["table"] == table)


@pytest.fixture()
def db(tmp_path: Path) -> Path:
    """A store already holding another run, so an unchanged store is not merely an empty one."""
    path = tmp_path / "t.duckdb"
    with TrainingStore(path) as store:
        assert len(import_training_export(store, copy_export(OTHER, tmp_path))) == 1
    return path


def test_an_export_imports_once_with_its_rows_and_names_its_adapter(tmp_path: Path, db: Path) -> None:
    folder = copy_export(SINGLE, tmp_path)
    manifest = json.loads((folder / "manifest.json").read_text())
    run_id = manifest["run"]["run_id"]
    with TrainingStore(db) as store:
        assert import_training_export(store, folder) == [run_id]
        assert import_training_export(store, folder) == []
        assert len(store.runs()) == 2
        assert len(store.steps(run_id)) == _rows(manifest, "steps") == manifest["run"]["settings"]["steps"]
        assert len(store.evals(run_id)) == _rows(manifest, "evals")
        assert len(store.answers(run_id)) == _rows(manifest, "answers") > 0
        assert store.finished_file(run_id) == (str((adapters_dir() / f"{SINGLE}.gguf").resolve()),
                                               manifest["adapter"]["sha256"])
        settings = json.loads(store.runs().set_index("run_id").loc[run_id, "settings_json"])
    # the recorded settings leave the step budget out, as the run recorded them
    assert "steps" not in settings and settings["lora"] == manifest["run"]["settings"]["lora"]


def test_a_group_names_its_group_file_and_an_old_run_keeps_its_budget(tmp_path: Path) -> None:
    folder, old = copy_export(GROUP, tmp_path), copy_export("ddxplus8-grpo", tmp_path)
    group = json.loads((folder / "manifest.json").read_text())
    with TrainingStore(tmp_path / "g.duckdb") as store:
        (run_id,) = import_training_export(store, folder)
        (old_id,) = import_training_export(store, old)
        assert store.finished_file(run_id) == (str((folder / "group.json").resolve()), group["group"]["sha256"])
        runs = store.runs().set_index("run_id")
    assert json.loads(runs.loc[old_id, "settings_json"])["steps"] == 100  # recorded with checkpoint_every


def _corrupt(folder: Path) -> None:
    path = folder / "answers.parquet"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def _set_run(field: str, value: object):
    def change(folder: Path) -> None:
        manifest = json.loads((folder / "manifest.json").read_text())
        manifest["run"][field] = value
        (folder / "manifest.json").write_text(json.dumps(manifest))
    return change


@pytest.mark.parametrize("damage, says", [
    (_corrupt, r"answers\.parquet has sha256 .* modified or is corrupt"),
    (lambda f: (f / "evals.parquet").unlink(), r"evals\.parquet is listed in the manifest but missing"),
    (lambda f: (f / "manifest.json").write_text("{not json"), r"manifest\.json is not valid JSON"),
    (lambda f: (f / "manifest.json").unlink(), r"manifest\.json is missing"),
    (_set_run("status", "running"), r"run\.status must be 'finished'"),
    (_set_run("n_train", -3), r"run\.n_train must be a non-negative whole number"),
    (_set_run("created_at", "yesterday"), r"run\.created_at must be a date and time"),
    (_set_run("finished_at", "2020-01-01T00:00:00"), r"run\.finished_at is before run\.created_at"),
    (_set_run("kind", ""), r"run\.kind must be text on one line"),
    (_set_run("settings", [1]), r"run\.settings must be an object"),
])
def test_a_damaged_export_is_refused_in_one_line_and_writes_nothing(tmp_path: Path, db: Path, damage, says) -> None:
    folder = copy_export(SINGLE, tmp_path)
    damage(folder)
    before = dump(db)
    with TrainingStore(db) as store, pytest.raises(InputError, match=says) as caught:
        import_training_export(store, folder)
    assert "\n" not in str(caught.value) and dump(db) == before


def _rewrite(table: str, change) -> object:
    """Rewrite one table of the export (manifest entry updated, so only its values are wrong)."""
    def damage(folder: Path) -> None:
        frame = getattr(read_training_export(folder, adapters_dir()), table).copy()
        change(frame)
        entry = write_table(folder, table, frame, SCHEMAS[table])
        manifest = json.loads((folder / "manifest.json").read_text())
        manifest["files"] = [entry if f["table"] == table else f for f in manifest["files"]]
        (folder / "manifest.json").write_text(json.dumps(manifest))
    return damage


@pytest.mark.parametrize("damage, says", [
    (_rewrite("steps", lambda f: f.__setitem__("loss", float("inf"))), r"steps\.parquet: row 1: loss = inf must be"),
    (_rewrite("steps", lambda f: f.__setitem__("accuracy", 1.5)), r"accuracy = 1\.5 must be a number in \[0, 1\]"),
    (_rewrite("evals", lambda f: f.__setitem__("n_correct", f["n_items"] + 1)), r"n_correct = \d+ must be at most"),
    (_rewrite("answers", lambda f: f.__setitem__("answer", " ")), r"row 1: answer = ' ' must be text, not empty"),
    (_rewrite("answers", lambda f: f.__setitem__("item_id", "same")),
     r"answers\.parquet: holds more than one row for \(0, "),
])
def test_values_a_merge_would_refuse_are_refused_before_any_write(tmp_path: Path, db: Path, damage, says) -> None:
    folder = copy_export(SINGLE, tmp_path)
    damage(folder)
    read_training_export(folder, adapters_dir())  # the files themselves read back checked
    before = dump(db)
    with TrainingStore(db) as store, pytest.raises(InputError, match=says):
        import_training_export(store, folder)
    assert dump(db) == before


def test_a_changed_adapter_is_refused(tmp_path: Path, db: Path) -> None:
    folder, adapters = copy_export(SINGLE, tmp_path), tmp_path / "adapters"
    adapters.mkdir()
    data = bytearray((adapters_dir() / f"{SINGLE}.gguf").read_bytes())
    data[-1] ^= 0xFF
    (adapters / f"{SINGLE}.gguf").write_bytes(bytes(data))
    before = dump(db)
    with TrainingStore(db) as store, pytest.raises(InputError, match=rf"the adapter .*{SINGLE}\.gguf"):
        import_training_export(store, folder, adapters)
    assert dump(db) == before


def test_a_read_only_store_is_refused(tmp_path: Path, db: Path) -> None:
    folder = copy_export(SINGLE, tmp_path)
    with TrainingStore(db, read_only=True) as store, pytest.raises(StoreError, match="read-only"):
        import_training_export(store, folder)
