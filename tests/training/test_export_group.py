"""A trained group's export: its adapters copied under the export's name, a group file
that names them by registry key (no path of the training machine), every file checked on
reading, and a report that says the group is measured by playing it."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from common.errors import InputError
from training.export import read_training_export, write_training_export
from training.report import export_markdown
from training.store import StepRow, TrainingStore

SETTINGS = {"steps": 1, "batch_size": 2, "learning_rate": 5e-4, "updates_per_batch": 1,
            "lora": {"r": 16, "alpha": 32.0, "layers": 4}, "grpo": {"eps": 0.2, "beta": 0.04, "group_size": 4}}


def _group_run(tmp_path: Path, *, missing: bool = False) -> Path:
    run_dir = tmp_path / "runs" / "g1"
    run_dir.mkdir(parents=True)
    files = {}
    for name in ("reasoning", "judge"):
        files[name] = run_dir / f"adapter-{name}.gguf"
        if not (missing and name == "judge"):
            files[name].write_bytes(f"GGUF {name} bytes".encode())
    lora = {k: f"smollm2-135m+lora:file:{p.resolve()}" for k, p in files.items()}
    group = {"name": "sag-6-ctde-g1", "method": "sag",
             "backbones": [lora["reasoning"], "smollm2-135m", lora["judge"], lora["judge"]]}
    path = run_dir / "group.json"
    path.write_text(json.dumps(group), encoding="utf-8")
    db = tmp_path / "t.duckdb"
    with TrainingStore(db) as store:
        store.start_run("g1", kind="sag-group", method="ctde", base_model="smollm2-135m", settings=SETTINGS,
                        data_name="ddxplus8:train", data_hash="h", n_train=10)
        store.add_step("g1", StepRow(1, 0.1, -0.5, 0.25, 0.01, 0.0, 2, 2500, 3.0))
        store.finish("g1", "finished", str(path), hashlib.sha256(path.read_bytes()).hexdigest())
    return db


def test_a_group_exports_its_adapters_by_registry_key(tmp_path: Path) -> None:
    db = _group_run(tmp_path)
    out, adapters = tmp_path / "export", tmp_path / "adapters"
    with TrainingStore(db, read_only=True) as store:
        write_training_export(store, "g1", out, adapters, "sag6-ctde", command="python -m sag train --group sag-6")
    got = read_training_export(out, adapters)
    assert got.group_file == out / "group.json"
    assert got.adapter_keys == ("smollm2-135m+lora:sag6-ctde-reasoning", "smollm2-135m+lora:sag6-ctde-judge")
    assert sorted(p.name for p in adapters.iterdir()) == ["sag6-ctde-judge.gguf", "sag6-ctde-reasoning.gguf"]
    assert (adapters / "sag6-ctde-judge.gguf").read_bytes() == b"GGUF judge bytes"
    group = json.loads(got.group_file.read_text())
    assert group == {"name": "sag6-ctde", "method": "sag",
                     "backbones": ["smollm2-135m+lora:sag6-ctde-reasoning", "smollm2-135m",
                                   "smollm2-135m+lora:sag6-ctde-judge", "smollm2-135m+lora:sag6-ctde-judge"]}
    assert str(tmp_path) not in got.group_file.read_text()
    with pytest.raises(ValueError, match="one adapter per role"):
        _ = got.adapter_key
    text = export_markdown(got)
    assert text.startswith("Group `export/group.json` (adapters `smollm2-135m+lora:sag6-ctde-reasoning`, ")
    assert "4 debates per item" in text and "measured by playing it" in text and "| held-out set" not in text
    assert "central critic" not in text  # the run records no critic settings
    with TrainingStore(db) as store:
        store.con.execute("UPDATE train_runs SET settings_json = ?", [json.dumps(
            {**SETTINGS, "critic": {"hidden": 64, "learning_rate": 1e-3, "epochs": 20, "warmup": 5}})])
    out2 = tmp_path / "export2"
    with TrainingStore(db, read_only=True) as store:
        write_training_export(store, "g1", out2, adapters, "sag6-ctde", command="c")
    assert ("4 debates per item, a central critic (64 hidden units, learning rate 0.001, 20 passes per step; "
            "the first 5 steps train only the critic)") in export_markdown(read_training_export(out2, adapters))


def test_a_changed_group_file_or_adapter_of_an_export_is_refused(tmp_path: Path) -> None:
    db = _group_run(tmp_path)
    out, adapters = tmp_path / "export", tmp_path / "adapters"
    with TrainingStore(db, read_only=True) as store:
        write_training_export(store, "g1", out, adapters, "g", command="c")
    (adapters / "g-judge.gguf").write_bytes(b"other")
    with pytest.raises(InputError, match="the adapter .*g-judge.gguf has sha256 .* modified or is corrupt"):
        read_training_export(out, adapters)
    (adapters / "g-judge.gguf").write_bytes(b"GGUF judge bytes")
    read_training_export(out, adapters)
    (out / "group.json").write_text("{}")
    with pytest.raises(InputError, match="the group file .*group.json has sha256 .* modified or is corrupt"):
        read_training_export(out, adapters)


def test_a_group_file_naming_a_missing_adapter_is_refused(tmp_path: Path) -> None:
    db = _group_run(tmp_path, missing=True)
    with TrainingStore(db, read_only=True) as store, \
            pytest.raises(InputError, match="names an adapter that is missing: .*adapter-judge.gguf"):
        write_training_export(store, "g1", tmp_path / "e", tmp_path / "a", "g", command="c")


def test_the_export_command_names_every_adapter_file_it_wrote(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    from training.__main__ import main

    db = _group_run(tmp_path)
    out, adapters = tmp_path / "export", tmp_path / "adapters"
    assert main(["export", "--run", "g1", "--name", "sag6-ctde", "--db", str(db), "--out", str(out),
                 "--adapters", str(adapters), "--command", "c"]) == 0
    printed = capsys.readouterr().out
    assert printed == (f"wrote {out / 'manifest.json'} and {adapters / 'sag6-ctde-reasoning.gguf'}, "
                       f"{adapters / 'sag6-ctde-judge.gguf'}\n")
