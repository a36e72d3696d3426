"""A real `run synthetic` process killed mid-run resumes to the same results."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dcem.store.database import Store

ROOT = Path(__file__).resolve().parents[2]
ARGS = ["-m", "dcem", "run", "synthetic", "--scenarios", "S1,S3b", "--seeds", "6",
        "--n-train", "3000", "--n-eval", "40", "--no-ablation"]


def _run(db: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, *ARGS, "--db", str(db), "--quiet"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_killed_run_resumes_without_duplicates(tmp_path: Path) -> None:
    db = tmp_path / "killed.duckdb"
    proc = subprocess.Popen([sys.executable, *ARGS, "--db", str(db)], cwd=ROOT,
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=False)
    assert proc.stderr is not None
    seen, deadline = b"", time.monotonic() + 240
    while time.monotonic() < deadline:
        chunk = os.read(proc.stderr.fileno(), 4096)
        if not chunk:
            break
        seen += chunk
        done = [int(m) for m in re.findall(rb"\| (\d+)/12", seen)]
        if done and max(done) >= 3:
            proc.send_signal(signal.SIGKILL)
            break
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL, "the run finished before it could be killed"

    with Store(db) as store:
        run_id = store.latest_run()
        partial = len(store.done_cells(run_id))
    assert 3 <= partial < 12

    resumed = _run(db)
    assert resumed.returncode == 0, resumed.stderr
    assert f"{12 - partial} cells computed, {partial} already stored" in resumed.stdout

    fresh_db = tmp_path / "fresh.duckdb"
    assert _run(fresh_db).returncode == 0
    with Store(db) as a, Store(fresh_db) as b:
        ma, mb = a.metrics(run_id), b.metrics(run_id)
        dup = a.con.execute("SELECT count(*) - count(DISTINCT (case_id, method, round)) FROM traces").fetchone()
        assert dup == (0,)
        assert a.con.execute("SELECT count(*) FROM cases").fetchone() == (12 * 40,)
    assert ma.equals(mb)  # resumed results are identical to an uninterrupted run


def test_a_store_in_use_by_another_process_gives_a_clear_message(tmp_path: Path) -> None:
    db = tmp_path / "busy.duckdb"
    holder = subprocess.Popen([sys.executable, "-c", "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); "
                               "print('ready', flush=True); time.sleep(60)", str(db)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ready"
        from dcem.store.database import StoreError
        with pytest.raises(StoreError, match="in use by another program"):
            Store(db)
        out = subprocess.run([sys.executable, "-m", "dcem", "runs", "--db", str(db)], cwd=ROOT,
                             capture_output=True, text=True, timeout=60)
        assert out.returncode == 2 and "in use by another program" in out.stderr
        assert out.stderr.count("\n") == 1
    finally:
        holder.kill()
        holder.wait()
