"""A finished training run, run again, returns what it recorded: nothing is loaded, trained
or measured again, and the store still says finished; a run whose adapter file changed goes
through its last checkpoint again."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import training.base_model
import training.gguf_lora
from runtime.registry import resolve
from tests.training.tiny import cue_items, tiny_base
from training.config import TrainSettings
from training.run import LetterRun, finished_result, run_letter_training
from training.store import TrainingRecorder, TrainingStore


def _run(tmp_path: Path) -> LetterRun:
    return LetterRun("test", "smollm2-135m", resolve("smollm2-135m"), "0" * 64,
                     TrainSettings(steps=2, batch_size=4, device="cpu", threads=1, checkpoint_every=1),
                     cue_items(8, seed=1), "cue", "h", {"held": cue_items(6, seed=2)}, tmp_path / "out")


def _fake_export(model: Any, base: Path, out: Path, **_: Any) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(b"an adapter " + bytes(range(16)))
    return out


def test_a_finished_run_run_again_returns_its_record_without_loading_anything(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    loads: list[Path] = []

    def load_base(path: Path, device: str = "cpu") -> Any:
        loads.append(path)
        return tiny_base()

    monkeypatch.setattr(training.base_model, "load_base", load_base)
    monkeypatch.setattr(training.gguf_lora, "export_lora_gguf", _fake_export)
    db = tmp_path / "store.duckdb"
    first = run_letter_training(TrainingRecorder(db), _run(tmp_path))
    assert loads and first.adapter is not None and not first.stopped
    with TrainingStore(db) as store:
        steps = store.steps(first.run_id)
    loads.clear()
    again = run_letter_training(TrainingRecorder(db), _run(tmp_path))
    assert loads == []  # no model loaded, so nothing trained or measured
    assert again.adapter == first.adapter and again.steps_done == 2 and not again.stopped
    for got, want in ((again.before, first.before), (again.after, first.after)):
        assert set(got) == set(want) == {"held"}
        assert got["held"].n_correct == want["held"].n_correct and got["held"].top_letter == want["held"].top_letter
        assert sorted(zip(got["held"].answers, got["held"].truth)) == sorted(zip(want["held"].answers, want["held"].truth))
    with TrainingStore(db) as store:
        assert store.runs().set_index("run_id").loc[first.run_id, "status"] == "finished"
        assert store.steps(first.run_id).equals(steps)
    first.adapter.write_bytes(b"changed by hand")  # the recorded file is no longer the run's
    with TrainingStore(db) as store:
        assert finished_result(store, first.run_id, 2) is None
    redone = run_letter_training(TrainingRecorder(db), _run(tmp_path))
    assert loads and redone.adapter == first.adapter and redone.adapter.read_bytes().startswith(b"an adapter")


def test_a_run_not_finished_has_no_finished_result(tmp_path: Path) -> None:
    db = tmp_path / "store.duckdb"
    with TrainingStore(db) as store:
        store.start_run("r1", kind="test", method="grpo", base_model="m", settings={}, data_name="d",
                        data_hash="h", n_train=3)
        assert finished_result(store, "r1", 2) is None and store.finished_file("r1") is None
        store.finish("r1", "stopped")
        assert store.finished_file("r1") is None
        store.finish("r1", "finished", str(tmp_path / "gone.gguf"), "0" * 64)
        assert store.finished_file("r1") == (str(tmp_path / "gone.gguf"), "0" * 64)
        assert finished_result(store, "r1", 2) is None  # its file is gone
