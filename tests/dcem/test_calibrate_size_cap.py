"""Issue 51: ``python -m dcem calibrate`` counts the bytes it reads, so a file without a size
to stat (``/dev/zero``, a pipe that never ends) stops at the limit with one line instead of
growing without end (it reached 4.6 GB in 20 s when the limit was checked with stat only)."""
from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

import dcem.analysis.calibration_summary
from common.errors import ProjectError
from dcem.analysis.calibration_summary import read_calibration_file
from tests.cli_inprocess import run_main

CAP = 4096


def _endless_pipe(folder: Path) -> Path:
    """A named pipe a thread writes into until its reader goes away."""
    pipe = folder / "endless.csv"
    os.mkfifo(pipe)

    def write() -> None:
        try:
            with open(pipe, "wb") as out:
                while True:
                    out.write(b"case_id,agent,reported_label\n" * 512)
        except (BrokenPipeError, OSError):
            return

    threading.Thread(target=write, daemon=True).start()
    return pipe


@pytest.mark.skipif(not Path("/dev/zero").exists() or not hasattr(os, "mkfifo"), reason="needs /dev/zero and FIFOs")
@pytest.mark.parametrize("source", ["/dev/zero", "pipe"])
def test_an_endless_input_stops_at_the_cap_with_one_line(tmp_path: Path, source: str,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(dcem.analysis.calibration_summary, "MAX_BYTES", CAP)
    path = "/dev/zero" if source == "/dev/zero" else str(_endless_pipe(tmp_path))
    out = run_main("dcem", ["calibrate", path])
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 2 and len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
    assert lines[0] == f"error: {path}: has more than {CAP:,} bytes (the limit); stopped reading there"


def test_the_library_reads_at_most_the_cap(tmp_path: Path) -> None:
    big = tmp_path / "big.csv"
    big.write_bytes(b"x" * 101)
    with pytest.raises(ProjectError, match="is 101 bytes; the limit is 100 bytes"):
        read_calibration_file(str(big), max_bytes=100)
    with pytest.raises(ProjectError, match="has more than 100 bytes"):
        read_calibration_file("/dev/zero", max_bytes=100)
    small = tmp_path / "small.csv"
    small.write_text("case_id,agent,reported_label,true_label\nc1,A,x,x\nc1,B,y,x\nc2,A,y,y\nc2,B,y,y\n")
    cset, _ = read_calibration_file(str(small), max_bytes=small.stat().st_size)  # exactly at the cap: read
    assert cset.n_cases == 2
