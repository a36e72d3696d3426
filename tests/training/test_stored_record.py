"""A run of a training store reads as the export it would make: a shipped export imported
into a store gives the same frames, run and Markdown report as the shipped export itself;
a run not finished reports what it has, and an unknown run or one with no step is
refused with one line."""
from __future__ import annotations

import hashlib
from pathlib import Path

import pandas as pd
import pytest

from common.errors import InputError
from training.import_export import import_training_export
from training.report import export_markdown
from training.shipped import read_shipped
from training.store import StepRow, TrainingStore
from training.stored_record import group_adapter_names, stored_export

from .export_copies import copy_export


@pytest.mark.parametrize("name", ["ddx-views-r1", "ddx-views-debate", "sag6-ctde"])
def test_a_shipped_export_reads_back_the_same_from_a_store(tmp_path: Path, name: str) -> None:
    shipped = read_shipped(name)
    with TrainingStore(tmp_path / "t.duckdb") as store:
        (run_id,) = import_training_export(store, copy_export(name, tmp_path))
        got = stored_export(store, run_id)
    for table in ("steps", "evals", "answers"):
        pd.testing.assert_frame_equal(getattr(got, table), getattr(shipped, table))
    assert got.run == shipped.run and got.adapter_keys == shipped.adapter_keys
    assert got.manifest["store"] == str(tmp_path / "t.duckdb") and got.manifest["command"] is None
    assert export_markdown(got) == export_markdown(shipped)


def test_a_group_file_names_its_adapters_in_order_once(tmp_path: Path) -> None:
    path = tmp_path / "group.json"
    path.write_text('{"agents": [{"model": "b+lora:file:/x/adapter-judge.gguf"}, {"model": "b+lora:r1"}, '
                    '{"model": "b+lora:file:/x/adapter-judge.gguf"}], "name": "g"}')
    assert group_adapter_names(path) == ["file:/x/adapter-judge.gguf", "r1"]
    assert group_adapter_names(tmp_path / "gone.json") == []


def _run(store: TrainingStore, run_id: str, *, steps: int, finish: str | None = None, adapter: Path | None = None,
         heldout: bool = True) -> None:
    store.start_run(run_id, kind="diagnostician", method="grpo", base_model="smollm2-135m",
                    settings={"batch_size": 8, "learning_rate": 5e-4, "updates_per_batch": 1,
                              "lora": {"r": 16, "alpha": 32.0, "layers": 8},
                              "grpo": {"group_size": 0, "eps": 0.2, "beta": 0.04}},
                    data_name="ddxplus8:train", data_hash="h", n_train=40)
    if heldout:
        store.add_eval(run_id, 0, "heldout", 4, 1, 8, "A", 0.75)
        store.add_answers(run_id, 0, "heldout", [("c1", "A", "A"), ("c2", "A", "B"), ("c3", "A", "C"),
                                                 ("c4", "B", "D")])
    for k in range(1, steps + 1):
        store.add_step(run_id, StepRow(k, 0.1, -0.5, 0.25, 0.01, 0.0, 8, 2500, 30.0))
    if finish == "finished" and adapter is not None:
        if heldout:
            store.add_eval(run_id, steps, "heldout", 4, 3, 8, "B", 0.5)
            store.add_answers(run_id, steps, "heldout", [("c1", "A", "A"), ("c2", "B", "B"), ("c3", "C", "C"),
                                                         ("c4", "B", "D")])
        store.finish(run_id, "finished", str(adapter), hashlib.sha256(adapter.read_bytes()).hexdigest())
    elif finish is not None:
        store.finish(run_id, finish)


@pytest.mark.parametrize("status", ["running", "stopped"])
def test_a_run_not_finished_reports_its_state_and_its_accuracy_before_training(tmp_path: Path, status: str) -> None:
    with TrainingStore(tmp_path / "t.duckdb") as store:
        _run(store, "r1", steps=3, finish=None if status == "running" else status)
        text = export_markdown(stored_export(store, "r1"))
    lines = text.splitlines()
    assert lines[0].startswith("Training run `r1`: diagnostician trained with GRPO on ddxplus8:train (40 items), "
                               "3 steps of 8 items")
    assert f"This run is {status} after step 3: it has no adapter yet" in text
    assert ("Repeat the command that started it to resume it." in text) == (status == "stopped")
    assert lines[-1] == ("Before training on heldout (4 items): accuracy 0.250 [0.046, 0.699], chance 0.125, "
                         "most frequent answer A 75%.")


def test_a_finished_run_outside_the_shipped_adapters_is_named_by_its_file(tmp_path: Path) -> None:
    adapter = tmp_path / "runs" / "r1" / "adapter.gguf"
    adapter.parent.mkdir(parents=True)
    adapter.write_bytes(b"GGUF adapter bytes")
    with TrainingStore(tmp_path / "t.duckdb") as store:
        _run(store, "r1", steps=2, finish="finished", adapter=adapter)
        got = stored_export(store, "r1")
    assert got.adapter_key == f"smollm2-135m+lora:file:{adapter}" and got.adapters == (adapter,)
    text = export_markdown(got)
    assert text.startswith(f"Adapter `smollm2-135m+lora:file:{adapter}`: diagnostician") and "| heldout | 4 |" in text


def test_an_unknown_run_or_one_without_a_step_is_refused_in_one_line(tmp_path: Path) -> None:
    with TrainingStore(tmp_path / "t.duckdb") as store:
        with pytest.raises(InputError, match="no training run 'nope' in "):
            stored_export(store, "nope")
        _run(store, "r0", steps=0)
        with pytest.raises(InputError, match=r"training run r0 \(running\) has no step recorded yet") as caught:
            stored_export(store, "r0")
    assert "\n" not in str(caught.value)


def test_unreadable_settings_are_refused_in_one_line(tmp_path: Path) -> None:
    with TrainingStore(tmp_path / "t.duckdb") as store:
        _run(store, "r1", steps=1)
        store.con.execute("UPDATE train_runs SET settings_json = '[1, 2]'")
        with pytest.raises(InputError, match="training run r1 has unreadable settings"):
            stored_export(store, "r1")
        store.con.execute("""UPDATE train_runs SET settings_json = '{"lora": {}}'""")
        with pytest.raises(InputError, match=r"training run r1 in .*t\.duckdb: run\.settings\.batch_size must be a "):
            export_markdown(stored_export(store, "r1"))
