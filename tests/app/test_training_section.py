"""Models page, trained adapters: the runs, their curves and the held-out accuracy beside
chance and the answer distribution, read from the store."""
from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from training.store import StepRow, TrainingStore

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "models.py")


def test_an_empty_store_says_no_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DCEM_DB", str(tmp_path / "empty.duckdb"))
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert not at.exception
    assert any("No training run is stored yet" in i.value for i in at.info)


def test_a_finished_run_shows_its_key_curves_and_flagged_heldout(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "t.duckdb"
    with TrainingStore(db) as store:
        store.start_run("r1", kind="diagnostician", method="grpo", base_model="smollm2-135m",
                        settings={"steps": 2}, data_name="ddxplus8:train", data_hash="h", n_train=495)
        for k in (1, 2):
            store.add_step("r1", StepRow(k, 0.1, -0.5 + k / 10, 0.5, 0.01, 0.0, 8, 2500, 12.0))
        store.add_eval("r1", 0, "heldout", 200, 26, 8, "A", 0.98)
        store.add_eval("r1", 2, "heldout", 200, 120, 8, "C", 0.3)
        store.add_answers("r1", 0, "heldout", [(f"i{k}", "A", "ABC"[k % 3]) for k in range(30)])
        store.add_answers("r1", 2, "heldout", [(f"i{k}", "ABC"[k % 3], "ABC"[k % 3]) for k in range(30)])
        store.finish("r1", "finished", "runs/train/r1/adapter.gguf", "ab" * 32)
    monkeypatch.setenv("DCEM_DB", str(db))
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert not at.exception
    assert any("smollm2-135m+lora:file:runs/train/r1/adapter.gguf" in c.value for c in at.code)
    frames = [t.value for t in at.dataframe]
    held = next(f for f in frames if "Held-out set" in f.columns)
    runs = next(f for f in frames if "Steps done" in f.columns)
    assert list(held["Chance"]) == pytest.approx([0.125, 0.125])
    assert held.loc[0, "Flag"] != "" and held.loc[1, "Flag"] == ""
    assert runs.loc[0, "Steps done"] == "2 of 2"
    paired = next(f for f in frames if "Difference" in f.columns)
    assert paired.loc[0, "Before"] == pytest.approx(1 / 3) and paired.loc[0, "After"] == 1.0
    assert paired.loc[0, "Excludes 0"] == "yes"
