"""A finished training run exported (adapter + manifest + Parquet) reads back checked; a
changed file, an unfinished run and a bad name are refused with one line."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from common.errors import InputError
from training.export import read_training_export, write_training_export
from training.store import StepRow, TrainingStore

ROOT = Path(__file__).resolve().parents[2]


def _store(tmp_path: Path, *, finish: bool = True, settings: dict | None = None) -> Path:
    db, adapter = tmp_path / "t.duckdb", tmp_path / "runs" / "r1" / "adapter.gguf"
    adapter.parent.mkdir(parents=True)
    adapter.write_bytes(b"GGUF adapter bytes")
    import hashlib
    with TrainingStore(db) as store:
        store.start_run("r1", kind="diagnostician", method="grpo", base_model="smollm2-135m",
                        settings=settings or {"steps": 2, "lora": {"r": 16}}, data_name="ddxplus8:train",
                        data_hash="h",
                        n_train=495)
        for k in (1, 2):
            store.add_step("r1", StepRow(k, 0.1, -0.5, 0.25, 0.01, 0.0, 8, 2500, 3.0))
        store.add_eval("r1", 0, "heldout", 3, 1, 8, "A", 1.0)
        store.add_eval("r1", 2, "heldout", 3, 3, 8, "B", 0.34)
        store.add_answers("r1", 0, "heldout", [("c1", "A", "A"), ("c2", "A", "B"), ("c3", "A", "C")])
        store.add_answers("r1", 2, "heldout", [("c1", "A", "A"), ("c2", "B", "B"), ("c3", "C", "C")])
        if finish:
            store.finish("r1", "finished", str(adapter), hashlib.sha256(adapter.read_bytes()).hexdigest())
    return db


def test_an_export_round_trips_and_names_its_adapter(tmp_path: Path) -> None:
    db = _store(tmp_path)
    out, adapters = tmp_path / "export", tmp_path / "adapters"
    with TrainingStore(db, read_only=True) as store:
        write_training_export(store, "r1", out, adapters, "ddx-test", command="python -m dcem_clinical train ...")
    got = read_training_export(out, adapters)
    assert got.adapter_key == "smollm2-135m+lora:ddx-test" and got.adapter.read_bytes() == b"GGUF adapter bytes"
    assert list(got.steps["step"]) == [1, 2] and len(got.evals) == 2 and len(got.answers) == 6
    assert got.run["settings"]["lora"] == {"r": 16} and got.manifest["command"].startswith("python -m dcem_clinical")
    assert sorted(p.name for p in out.iterdir()) == ["answers.parquet", "evals.parquet", "manifest.json",
                                                     "steps.parquet"]
    (out / "steps.parquet").write_bytes((out / "steps.parquet").read_bytes() + b"x")
    with pytest.raises(InputError, match="steps.parquet has sha256 .* the file was modified or is corrupt"):
        read_training_export(out, adapters)


def test_the_export_names_the_steps_a_run_trained_though_its_store_keeps_no_budget(tmp_path: Path) -> None:
    db = _store(tmp_path, settings={"lora": {"r": 16}})  # recorded settings leave the step budget out
    out, adapters = tmp_path / "export", tmp_path / "adapters"
    with TrainingStore(db, read_only=True) as store:
        write_training_export(store, "r1", out, adapters, "ddx-test", command="python -m dcem_clinical train ...")
    assert read_training_export(out, adapters).run["settings"] == {"lora": {"r": 16}, "steps": 2}


def test_a_changed_adapter_or_manifest_is_refused(tmp_path: Path) -> None:
    db = _store(tmp_path)
    out, adapters = tmp_path / "export", tmp_path / "adapters"
    with TrainingStore(db, read_only=True) as store:
        write_training_export(store, "r1", out, adapters, "a1", command="c")
    (adapters / "a1.gguf").write_bytes(b"other")
    with pytest.raises(InputError, match="the adapter .*a1.gguf has sha256 .* the file was modified or is corrupt"):
        read_training_export(out, adapters)
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["format"] = "other/9"
    (out / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(InputError, match="format must be 'training-run-export/1'"):
        read_training_export(out, adapters)
    (out / "manifest.json").write_text("{not json")
    with pytest.raises(InputError, match="is not valid JSON"):
        read_training_export(out, adapters)


def test_unfinished_runs_bad_names_and_busy_folders_are_refused(tmp_path: Path) -> None:
    db = _store(tmp_path, finish=False)
    with TrainingStore(db, read_only=True) as store:
        with pytest.raises(InputError, match="^run: training run r1 is running, without an adapter"):
            write_training_export(store, "r1", tmp_path / "e", tmp_path / "a", "ok", command="c")
        with pytest.raises(InputError, match="^run: no training run 'nope'"):
            write_training_export(store, "nope", tmp_path / "e", tmp_path / "a", "ok", command="c")
        with pytest.raises(InputError, match="^name: must be letters"):
            write_training_export(store, "r1", tmp_path / "e", tmp_path / "a", "../x", command="c")
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    db2 = _store(tmp_path / "two")
    with TrainingStore(db2, read_only=True) as store:
        with pytest.raises(InputError, match="^out: .*holds other files"):
            write_training_export(store, "r1", busy, tmp_path / "a", "ok", command="c")
    assert (busy / "notes.txt").read_text() == "mine"


def test_the_export_command_names_the_adapter_file_it_wrote(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from training.__main__ import main

    db = _store(tmp_path)
    out, adapters = tmp_path / "e", tmp_path / "a"
    assert main(["export", "--run", "r1", "--name", "x", "--db", str(db), "--out", str(out), "--adapters",
                 str(adapters)]) == 0
    assert capsys.readouterr().out == f"wrote {out / 'manifest.json'} and {adapters / 'x.gguf'}\n"


def test_the_export_command_exits_2_with_one_line(tmp_path: Path) -> None:
    db = _store(tmp_path, finish=False)
    done = subprocess.run([sys.executable, "-m", "training", "export", "--run", "r1", "--name", "x", "--db", str(db),
                           "--out", str(tmp_path / "e"), "--adapters", str(tmp_path / "a")],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.strip().splitlines() == [
        "error: run: training run r1 is running, without an adapter; only a finished run is exported"]


def test_the_report_prints_intervals_chance_and_the_paired_difference(tmp_path: Path) -> None:
    from training.report import export_markdown

    db = _store(tmp_path)
    with TrainingStore(db) as store:  # the run's settings as a real run records them
        store.con.execute("UPDATE train_runs SET settings_json = ?", [json.dumps({
            "steps": 2, "batch_size": 8, "learning_rate": 5e-4, "updates_per_batch": 2,
            "lora": {"r": 16, "alpha": 32.0, "layers": 8}, "grpo": {"eps": 0.2, "beta": 0.04, "group_size": 0}})])
    out, adapters = tmp_path / "export", tmp_path / "adapters"
    with TrainingStore(db, read_only=True) as store:
        write_training_export(store, "r1", out, adapters, "ddx-t", command="c")
    text = export_markdown(read_training_export(out, adapters))
    assert "`smollm2-135m+lora:ddx-t`" in text and "LoRA r=16 alpha=32 on the top 8 layers" in text
    row = [line for line in text.splitlines() if line.startswith("| heldout |")][0]
    # truths A, B, C: answering "A" everywhere gets one of three (ties go to the first letter)
    assert row.startswith("| heldout | 3 | 0.125 | A 0.333 | 0.333 [0.061, 0.792] | A 100% | 1.000 [0.439, 1.000] | ")
    assert text.strip().splitlines()[-1].startswith("Where the most frequent answer exceeds 50% of the answers")
    assert "| +0.667 [" in row
