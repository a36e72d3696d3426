"""A training run's life goes through the run ledger: start, each optimiser step a unit,
steps after a checkpoint forgotten on resume, stopped, finished; ``train_runs`` follows it."""
from __future__ import annotations

from pathlib import Path

import pytest

from common.ledger import Ledger
from common.resume import ResumeRefused
from training.store import StepRow, TrainingStore

_FIELDS = dict(kind="k", method="grpo", base_model="m", settings={"a": 1, "b": [1, 2]}, data_name="d",
               data_hash="h", n_train=4)


def _status(store: TrainingStore) -> tuple[str, bool]:
    status, finished = store.con.execute("SELECT status, finished_at FROM train_runs WHERE run_id = 'r'").fetchone()
    return str(status), finished is not None


def test_start_steps_resume_stop_and_finish_are_kept_by_the_ledger(tmp_path: Path) -> None:
    with TrainingStore(tmp_path / "t.duckdb") as store:
        assert store.start_run("r", **_FIELDS) is True
        for step in (1, 2, 3):
            store.add_step("r", StepRow(step, 0.1, 0.2, 0.5, 0.0, 0.0, 2, 100, 1.0))
        ledger = Ledger(store)
        run = ledger.run("r")
        assert (run.kind, run.status, run.done) == ("training", "running", 3)
        assert run.spec == {"kind": "k", "method": "grpo", "base_model": "m", "settings": {"a": 1, "b": [1, 2]},
                            "data_hash": "h"}
        store.finish("r", "stopped")
        assert ledger.run("r").status == "stopped" and _status(store) == ("stopped", True)
        assert store.start_run("r", **_FIELDS) is False  # a resume
        store.forget_after("r", 1)  # from the checkpoint at step 1: steps 2 and 3 are done again
        assert set(ledger.units("r")["unit_key"]) == {"step 1"} and ledger.run("r").status == "running"
        assert _status(store) == ("running", False)
        store.add_step("r", StepRow(2, 0.1, 0.2, 0.5, 0.0, 0.0, 2, 100, 1.0))
        store.finish("r", "finished", "a.gguf", "0" * 64)
        run = ledger.run("r")
        assert (run.status, run.done) == ("finished", 2)
        assert store.con.execute("SELECT status, finished_at, adapter_file FROM train_runs").fetchone() == (
            "finished", run.finished_at, "a.gguf")
        with pytest.raises(ResumeRefused, match="settings"):
            store.start_run("r", **{**_FIELDS, "settings": {"a": 2}})
        with pytest.raises(ValueError, match="finished or stopped"):
            store.finish("r", "running")
