"""Each package's real ``python -m`` entry point, once: a bad input leaves the new process
with status 2 and one line on stderr (the refusal tests run the commands in-process,
:mod:`tests.cli_inprocess`)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("args, words", [
    (["sag", "run", "--benchmark", "medqa", "--items", "0"], "items"),
    (["sag", "train", "--group", "sag-99"], "unknown group"),
    (["dcem_clinical", "train", "--steps", "0"], "--steps"),
    (["dcem_clinical", "run", "--cases", "0"], "--cases"),
    (["dcem", "run", "synthetic", "--seeds", "0"], "--seeds"),
    (["training", "report", "--name", "no-such-export"], "no-such-export"),
])
def test_a_bad_input_exits_the_process_with_status_2_and_one_line(tmp_path: Path, args: list[str],
                                                                   words: str) -> None:
    out = subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(ROOT), "DCEM_DB": str(tmp_path / "x.duckdb")})
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert out.returncode == 2 and len(lines) == 1 and words in lines[0], out.stderr
    assert "Traceback" not in out.stderr and out.stdout == ""
