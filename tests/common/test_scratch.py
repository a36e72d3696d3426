"""Scratch folders go with their process (:mod:`common.scratch`), and Ctrl-C around
DuckDB is seen as an interrupt and kept out of a commit (:mod:`common.interrupts`)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from common.interrupts import deferred_interrupt, is_interrupt
from common.scratch import remove_stale, scratch_folder, scratch_parent


@pytest.fixture
def parent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return scratch_parent()


def _dead_pid() -> int:
    """The id of a process that has ended (and been reaped)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_folder_left_by_a_killed_process_is_removed_at_the_next_start(parent: Path) -> None:
    stale = parent / f"sag-export-{_dead_pid()}-abc123"
    (stale / "nested").mkdir(parents=True)
    (stale / "nested" / "export.duckdb").write_bytes(b"x" * 1000)
    live = parent / f"sag-export-{os.getppid()}-def456"  # a running process (this one's parent)
    live.mkdir()
    other = parent / "notes"  # not a scratch folder's name
    other.mkdir()
    with scratch_folder("sag-export-") as mine:
        assert mine.parent == parent and mine.name.startswith(f"sag-export-{os.getpid()}-") and mine.is_dir()
        assert not stale.exists() and live.is_dir() and other.is_dir()
        (mine / "export.duckdb").write_bytes(b"x")
    assert not mine.exists()
    assert sorted(p.name for p in parent.iterdir()) == sorted([live.name, "notes"])


def test_the_folder_is_removed_after_an_error_or_ctrl_c(parent: Path) -> None:
    for error in (ValueError("bad"), KeyboardInterrupt()):
        with pytest.raises(type(error)), scratch_folder("sag-report-") as mine:
            (mine / "r.duckdb").write_bytes(b"x")
            raise error
        assert not mine.exists()
    assert list(parent.iterdir()) == []


def test_remove_stale_keeps_this_process_and_refuses_a_bad_prefix(parent: Path) -> None:
    mine = parent / f"sag-runs-{os.getpid()}-abc"
    mine.mkdir()
    assert remove_stale(parent) == [] and mine.is_dir()
    with pytest.raises(ValueError, match="scratch prefix"):
        with scratch_folder("../x"):
            pass


def test_duckdb_s_report_of_a_stopped_statement_is_an_interrupt() -> None:
    assert is_interrupt(RuntimeError("Query interrupted")) and is_interrupt(KeyboardInterrupt())
    assert not is_interrupt(RuntimeError("something else")) and not is_interrupt(ValueError("Query interrupted"))


def test_ctrl_c_waits_for_the_end_of_a_deferred_block() -> None:
    with deferred_interrupt() as caught:
        os.kill(os.getpid(), signal.SIGINT)
        finished = True
    assert finished and caught == [signal.SIGINT]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
