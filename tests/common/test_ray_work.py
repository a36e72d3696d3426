"""The Ray executor on a local Ray instance of 2 CPUs started by the test: the rows equal the
in-process rows, a dead worker's unit is retried and written once, a raising unit is
recorded and the job goes on, a killed driver loses nothing and the same command resumes."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

from common.errors import ConfigError
from common.ray_work import PROJECT_ROOT, RayExecutor, check_executor
from common.work import run_units
from tests.common.work_jobs import SquareJob, TableSink, units
from tests.spawn_support import kill_driver, start_driver

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def ray_executor() -> Iterator[RayExecutor]:
    with RayExecutor(workers=2, threads=1) as ex:
        yield ex


def test_rows_through_ray_equal_the_in_process_rows(tmp_path: Path, ray_executor: RayExecutor) -> None:
    here, there = TableSink(tmp_path / "a.duckdb"), TableSink(tmp_path / "b.duckdb")
    run_units(here, units(9), SquareJob(), run_id="r")
    summary = run_units(there, units(9), SquareJob(), run_id="r", executor=ray_executor)
    assert (summary.computed, summary.complete) == (9, True)
    assert there.rows() == here.rows()
    assert here.pids == {os.getpid()} and os.getpid() not in there.pids  # computed in the workers


def test_a_unit_whose_worker_dies_is_retried_and_written_once(tmp_path: Path, ray_executor: RayExecutor) -> None:
    sink = TableSink(tmp_path / "a.duckdb")
    before = ray_executor.deaths
    summary = run_units(sink, units(6), SquareJob(die_once=(2,), marks=str(tmp_path)), run_id="r",
                        executor=ray_executor)
    assert ray_executor.deaths == before + 1
    assert (summary.computed, summary.failed, summary.complete) == (6, (), True)
    assert sorted(sink.saved) == sorted(f"u{i}" for i in range(6))  # u2 once
    assert (tmp_path / "died-2").exists()


def test_a_raising_unit_is_recorded_failed_and_the_job_goes_on(tmp_path: Path, ray_executor: RayExecutor) -> None:
    sink = TableSink(tmp_path / "a.duckdb")
    summary = run_units(sink, units(5), SquareJob(fail_on=(0, 3)), run_id="r", executor=ray_executor)
    assert sorted(summary.failed) == [("u0", "RuntimeError: cannot square 0"), ("u3", "RuntimeError: cannot square 3")]
    assert [r[0] for r in sink.rows()] == ["u1", "u2", "u4"]


def test_cancel_stops_the_ray_run_and_nothing_half_done_is_written(tmp_path: Path, ray_executor: RayExecutor) -> None:
    sink = TableSink(tmp_path / "a.duckdb")
    summary = run_units(sink, units(8), SquareJob(slow=0.2), run_id="r", executor=ray_executor,
                        cancel=lambda: len(sink.saved) >= 2)
    assert not summary.complete and 2 <= summary.computed < 8
    assert len(sink.rows()) == summary.computed


def test_a_killed_driver_loses_no_written_unit_and_the_same_command_resumes(tmp_path: Path) -> None:
    store, log = tmp_path / "a.duckdb", tmp_path / "written.txt"
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
    cmd = [sys.executable, "-m", "tests.common.ray_driver", str(store), str(log)]
    driver = start_driver([*cmd, "ray"], PROJECT_ROOT, env)
    deadline = time.monotonic() + 600  # Ray starts slowly on a loaded machine
    while time.monotonic() < deadline and (not log.exists() or len(log.read_text().split()) < 3):
        time.sleep(0.1)
    kill_driver(driver)
    written = log.read_text().split()
    # The kill can land between a unit's commit and its log line, so what the store holds is read
    # from the store: every logged unit is in it, and the rerun writes exactly the rest.
    first = TableSink(store)
    stored = first.done()
    first.close()
    assert set(written) <= stored and 3 <= len(stored) < 12
    subprocess.run([*cmd, "process"], cwd=PROJECT_ROOT, env=env, check=True, timeout=120)
    rerun = log.read_text().split()[len(written):]
    assert sorted(rerun) == sorted(f"u{i}" for i in range(12) if f"u{i}" not in stored)  # nothing twice
    sink = TableSink(store)
    assert sink.rows() == [(f"u{i}", i, i * i) for i in range(12)]


@pytest.mark.parametrize("name, address, field", [("threads", None, "executor"), ("process", "host:6379", "ray_address")])
def test_bad_executor_choices_are_refused(name: str, address: str | None, field: str) -> None:
    with pytest.raises(ConfigError) as info:
        check_executor(name, address)
    assert info.value.field == field


@pytest.mark.parametrize("kw", [{"workers": 0}, {"threads": True}, {"retries": -1}, {"gpus": float("nan")}])
def test_bad_executor_settings_are_refused(kw: dict[str, object]) -> None:
    with pytest.raises(ConfigError):
        RayExecutor(**kw)  # type: ignore[arg-type]
