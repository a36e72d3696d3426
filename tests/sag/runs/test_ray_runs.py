"""SAG runs on Ray (a local instance of 2 CPUs started here): the rows equal the in-process
rows exactly (scripted agents, the D-CEM variant's calibration, SmolLM2 on two items), a
rerun makes no model call, and a failed item is recorded with its reason."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

import pytest

from common.ray_work import RayExecutor
from sag.group.config import preset
from sag.runs.run import SagRunSpec, run_sag
from sag.store.tables import SagStore

from ..fakes import ScriptedTurns, constant
from .test_failed_items import FailOn

pytestmark = pytest.mark.slow

_VOLATILE = {"seconds", "created_at", "finished_at", "failed_at", "duration_s", "call_id", "git_revision"}
_TABLES = ("sag_runs", "sag_items", "sag_messages", "sag_outcomes", "sag_mediator", "sag_failures", "llm_calls")


def rows(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of the run's tables, timing columns left out, sorted."""
    out: dict[str, list[tuple[Any, ...]]] = {}
    with SagStore(path, read_only=True) as store:
        for table in _TABLES:
            cols = [r[0] for r in store.con.execute(f"DESCRIBE {table}").fetchall() if r[0] not in _VOLATILE]
            data = store.con.execute(f"SELECT {', '.join(cols)} FROM {table}").fetchall()
            out[table] = sorted(data, key=repr)
    return out


@pytest.fixture(scope="module")
def ray_executor() -> Iterator[RayExecutor]:
    with RayExecutor(workers=2, threads=1) as ex:
        yield ex


def _scripted(cfg: Any, runner: Any) -> dict[str, Any]:
    return {m: runner for m in cfg.models()}


@pytest.mark.parametrize("group", ["sag-6", "sag-6-dcem"])
def test_scripted_rows_through_ray_equal_the_in_process_rows(tmp_path: Path, ray_executor: RayExecutor,
                                                             group: str) -> None:
    cfg = preset(group).with_changes(t_max=1, **({"n_cal": 6} if group.endswith("dcem") else {}))
    spec = SagRunSpec("medqa", cfg, n_items=5, seed=3)
    runner = ScriptedTurns(constant("B"))
    with SagStore(tmp_path / "here.duckdb") as store:
        here = run_sag(store, spec, runners=_scripted(cfg, runner), retrievers={})
    with SagStore(tmp_path / "ray.duckdb") as store:
        there = run_sag(store, spec, runners=_scripted(cfg, runner), retrievers={}, executor=ray_executor)
        again = run_sag(store, spec, runners=_scripted(cfg, runner), retrievers={}, executor=ray_executor)
    assert (here.computed, there.computed) == (5, 5)
    assert (there.model_calls, there.cached_calls) == (here.model_calls, here.cached_calls)
    assert (again.computed, again.model_calls) == (0, 0)
    assert rows(tmp_path / "ray.duckdb") == rows(tmp_path / "here.duckdb")


def test_a_failed_item_on_ray_is_recorded_with_its_reason_and_the_run_goes_on(tmp_path: Path,
                                                                             ray_executor: RayExecutor) -> None:
    cfg = preset("sag-6").with_changes(t_max=1)
    spec = SagRunSpec("medqa", cfg, n_items=4, seed=2)
    broken = spec.prepare()[0][1]
    with SagStore(tmp_path / "s.duckdb") as store:
        summary = run_sag(store, spec, runners=_scripted(cfg, FailOn([broken.question])), retrievers={},
                          executor=ray_executor)
        failures = store.failures(summary.run_id)
        status = store.runs()["status"].iloc[0]
    assert summary.computed == 3 and [f.item_id for f in summary.failed] == [broken.item_id]
    assert list(failures["item_id"]) == [broken.item_id] and "connection refused" in failures["reason"].iloc[0]
    assert status == "failed"


def test_smollm2_rows_through_ray_equal_the_in_process_rows(tmp_path: Path, ray_executor: RayExecutor) -> None:
    cfg = preset("single").with_changes(t_max=1)
    spec = SagRunSpec("medqa", cfg, n_items=2, seed=5)
    with SagStore(tmp_path / "here.duckdb") as store:
        here = run_sag(store, spec, retrievers={})
    with SagStore(tmp_path / "ray.duckdb") as store:
        there = run_sag(store, spec, retrievers={}, executor=ray_executor)
        again = run_sag(store, spec, retrievers={}, executor=ray_executor)
    assert here.model_calls > 0 and there.model_calls == here.model_calls
    assert (again.computed, again.model_calls) == (0, 0)
    assert rows(tmp_path / "ray.duckdb") == rows(tmp_path / "here.duckdb")


def test_an_item_whose_worker_dies_is_answered_again_and_written_once(tmp_path: Path,
                                                                     ray_executor: RayExecutor) -> None:
    from ..ray_fakes import DieOnce

    cfg = preset("sag-6").with_changes(t_max=1)
    spec = SagRunSpec("medqa", cfg, n_items=4, seed=6)
    doomed = spec.prepare()[0][2]
    deaths = ray_executor.deaths
    with SagStore(tmp_path / "s.duckdb") as store:
        summary = run_sag(store, spec, runners=_scripted(cfg, DieOnce(doomed.question, str(tmp_path))), retrievers={},
                          executor=ray_executor)
        outcomes = store.outcomes(summary.run_id)
    assert ray_executor.deaths == deaths + 1 and (tmp_path / "died").exists()
    assert (summary.computed, summary.failed, summary.complete) == (4, (), True)
    assert sorted(outcomes["item_id"]) == sorted(it.item_id for it in spec.prepare()[0])  # each item once


def test_a_killed_sag_driver_loses_no_answered_item_and_the_same_command_finishes(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys
    import time

    from common.ray_work import PROJECT_ROOT
    from tests.spawn_support import kill_driver, start_driver

    store = tmp_path / "s.duckdb"
    env = {**os.environ, "PYTHONPATH": str(PROJECT_ROOT)}
    cmd = [sys.executable, "-m", "tests.sag.ray_fakes", str(store)]
    driver = start_driver([*cmd, "ray"], PROJECT_ROOT, env)
    seen = tmp_path / "s.duckdb.progress"  # the driver's count of stored items
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and (not seen.exists() or int(seen.read_text() or 0) < 2):
        time.sleep(0.05)
    kill_driver(driver)
    with SagStore(store) as db:
        kept = set(db.outcomes()["item_id"])
    assert 2 <= len(kept) < 6
    subprocess.run([*cmd, "process"], cwd=PROJECT_ROOT, env=env, check=True, timeout=180)
    with SagStore(store, read_only=True) as db:
        outcomes = db.outcomes()
        assert len(outcomes) == 6 and outcomes["item_id"].is_unique and kept <= set(outcomes["item_id"])
        assert db.runs()["status"].iloc[0] == "finished"
