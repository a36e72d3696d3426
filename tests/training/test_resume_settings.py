"""A training run resumes only with the settings it was recorded with (issue 51, item 2).

A training run's id is a hash of its recorded settings, kind, base model and data; the
thread count, the device and the step budget are left out on purpose (a run may resume
with one thread, on another device, or be extended).  A store holding the id with other
settings refuses the resume, naming the first field that differs, and writes nothing."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from common.resume import ResumeRefused
from tests.store_rows import store_rows
from training.config import LoraSettings, TrainSettings
from training.store import StepRow, TrainingRecorder, TrainingStore

FIELDS = dict(kind="diagnostician", method="grpo", base_model="smollm2-135m", data_name="d", data_hash="h1",
              n_train=4)


def _started(path: Path, settings: TrainSettings) -> None:
    with TrainingStore(path) as store:
        assert store.start_run("r", settings=settings.recorded(), **FIELDS) is True
        store.add_step("r", StepRow(1, 0.5, 0.1, 0.5, 0.0, 0.0, 4, 100, 1.0))
        store.finish("r", "stopped")


@pytest.mark.parametrize("change, words", [
    ({"settings": replace(TrainSettings(), learning_rate=1e-3).recorded()},
     "settings.learning_rate stored 0.0002, given 0.001"),
    ({"settings": replace(TrainSettings(), lora=LoraSettings(r=8)).recorded()}, "settings.lora.r stored 16, given 8"),
    ({"data_hash": "h2"}, 'data_hash stored "h1", given "h2"'),
    ({"base_model": "gemma3-270m"}, 'base_model stored "smollm2-135m", given "gemma3-270m"'),
])
def test_a_stored_run_with_other_settings_is_refused_and_left_as_it_was(tmp_path: Path, change: dict,  # type: ignore[type-arg]
                                                                         words: str) -> None:
    path = tmp_path / "t.duckdb"
    _started(path, TrainSettings())
    before = store_rows(path)
    given = {"settings": TrainSettings().recorded(), **FIELDS, **change}
    with pytest.raises(ResumeRefused) as caught:
        TrainingRecorder(path).start_run("r", **given)
    text = str(caught.value)
    assert text.startswith(f"training run r is stored with other settings: {words}; nothing was written")
    assert "\n" not in text and store_rows(path) == before  # still "stopped", its step kept


def test_threads_device_and_step_budget_may_change_on_a_resume(tmp_path: Path) -> None:
    path, first = tmp_path / "t.duckdb", TrainSettings(steps=20, threads=2, device="auto", checkpoint_every=10)
    _started(path, first)
    later = replace(first, steps=50, threads=1, device="cpu", checkpoint_every=5)
    assert later.digest("k") == first.digest("k")  # the same run id ...
    with TrainingStore(path) as store:  # ... and the same recorded settings: a resume
        assert store.start_run("r", settings=later.recorded(), **FIELDS) is False
        assert store.runs().loc[0, "status"] == "running"
    assert replace(first, seed=1).digest("k") != first.digest("k")  # a setting of the run is another run
