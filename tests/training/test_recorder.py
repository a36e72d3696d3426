"""A training run's writes leave the store free between them, so another program (the
dashboard showing this run's curves) can open it while the run trains."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from common.db import StoreBusyError
from training.store import StepRow, TrainingRecorder, TrainingStore

_READ = ("import sys, duckdb; c = duckdb.connect(sys.argv[1], read_only=True); "
         "print(c.execute('SELECT count(*) FROM train_steps').fetchall()[0][0])")


def _other_program_reads(path: Path) -> str:
    done = subprocess.run([sys.executable, "-c", _READ, str(path)], capture_output=True, text=True, timeout=60)
    return done.stdout.strip() if done.returncode == 0 else "busy: " + done.stderr.strip().splitlines()[-1]


def test_another_program_reads_the_store_between_a_runs_writes(tmp_path: Path) -> None:
    path = tmp_path / "t.duckdb"
    rec = TrainingRecorder(path)
    assert rec.start_run("r1", kind="k", method="grpo", base_model="m", settings={"a": 1}, data_name="d",
                         data_hash="h", n_train=3)
    for step in (1, 2):
        rec.add_step("r1", StepRow(step, 0.1, -0.5, 0.25, 0.01, 0.0, 8, 2000, 1.5))
        assert _other_program_reads(path) == str(step)
    rec.finish("r1", "finished")
    with TrainingStore(path, read_only=True) as store:
        assert store.runs()["status"].tolist() == ["finished"] and len(store.steps("r1")) == 2
    held = TrainingStore(path)  # for contrast: a store held open shuts the other program out
    try:
        assert _other_program_reads(path).startswith("busy:")
    finally:
        held.close()


def test_a_recorder_waits_for_a_holder_then_gives_up_with_one_line(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t.duckdb"
    rec = TrainingRecorder(path)
    holder = subprocess.Popen([sys.executable, "-c", "import sys, duckdb, time; c = duckdb.connect(sys.argv[1]); "
                               "print('held', flush=True); time.sleep(30)", str(path)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        monkeypatch.setattr("training.store.retry_busy",
                            lambda work, timeout: __import__("common.db").db.retry_busy(work, timeout=0.5))
        with pytest.raises(StoreBusyError):
            rec.add_step("r1", StepRow(1, 0.1, -0.5, 0.25, 0.01, 0.0, 8, 2000, 1.5))
    finally:
        holder.kill()
        holder.wait()
