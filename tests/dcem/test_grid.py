"""The one grid runner: progress units, resume, cancel, bad plans."""
from __future__ import annotations

from pathlib import Path

import pytest

from dcem.core.config import MediatorConfig
from dcem.core.results import ScenarioResult
from common.errors import ConfigError
from dcem.store.database import Store
from dcem.store.grid import GridPlan, run_grid
from tests.dcem.test_store import fake_result


def _plan(**kw: object) -> GridPlan:
    base = dict(run_id="g1", kind="test", spec={"k": 1}, config=MediatorConfig(), seeds=(0, 1),
                cells=(("S1", 0), ("S1", 1)), units_per_cell=3, label="demo ")
    base.update(kw)
    return GridPlan(**base)  # type: ignore[arg-type]


def _compute(calls: list[tuple[str, int]], ticks: int = 3):
    def compute(scenario: str, seed: int, tick) -> ScenarioResult:  # type: ignore[no-untyped-def]
        calls.append((scenario, seed))
        for _ in range(ticks):
            tick()
        return fake_result(seed=seed, scenario=scenario, n=4, rounds=3)
    return compute


def test_progress_counts_units_and_a_rerun_computes_nothing(tmp_path: Path) -> None:
    seen: list[tuple[int, int, str]] = []
    calls: list[tuple[str, int]] = []
    with Store(tmp_path / "g.duckdb") as store:
        summary = run_grid(store, _plan(), _compute(calls), progress=lambda d, t, s: seen.append((d, t, s)))
        assert summary.complete and summary.computed == 2 and not summary.resumed
        assert [d for d, _, _ in seen] == [0, 1, 2, 3, 3, 4, 5, 6, 6]
        assert {t for _, t, _ in seen} == {6} and seen[0][2] == "starting" and seen[-1][2] == "demo S1 seed 1"
        again = run_grid(store, _plan(), _compute(calls))
        assert again.resumed and again.computed == 0 and again.skipped == 2 and len(calls) == 2
        assert store.con.execute("SELECT status FROM runs WHERE run_id = 'g1'").fetchone()[0] == "finished"


def test_cancel_then_resume_stores_each_cell_once(tmp_path: Path) -> None:
    calls: list[tuple[str, int]] = []
    with Store(tmp_path / "g.duckdb") as store:
        first = run_grid(store, _plan(), _compute(calls), cancel=lambda: len(calls) >= 1)
        assert not first.complete and first.computed == 1 and store.done_cells("g1") == {("S1", 0)}
        seen: list[int] = []
        rest = run_grid(store, _plan(), _compute(calls), progress=lambda d, t, s: seen.append(d))
        assert rest.complete and rest.computed == 1 and calls == [("S1", 0), ("S1", 1)]
        assert seen[0] == 3  # the stored cell counts as done from the start
        n = store.con.execute("SELECT count(*) FROM cells WHERE run_id = 'g1'").fetchone()[0]
        assert n == 2


def test_a_cell_that_fails_is_recorded_with_its_message_and_the_run_goes_on(tmp_path: Path) -> None:
    attempts: list[int] = []

    def broken(scenario: str, seed: int, tick) -> ScenarioResult:  # type: ignore[no-untyped-def]
        attempts.append(seed)
        if seed == 0 and attempts.count(0) == 1:
            raise RuntimeError("agent crashed")
        return fake_result(seed=seed, scenario=scenario, n=4, rounds=3)
    with Store(tmp_path / "g.duckdb") as store:
        summary = run_grid(store, _plan(), broken)
        assert summary.failed == (("S1/seed 0", "RuntimeError: agent crashed"),) and not summary.complete
        assert store.done_cells("g1") == {("S1", 1)}
        assert store.cell_failures("g1")[["scenario", "seed", "message"]].values.tolist() == [
            ["S1", 0, "RuntimeError: agent crashed"]]
        assert store.runs().set_index("run_id").loc["g1", "status"] == "failed"
        again = run_grid(store, _plan(), broken)  # the same command retries the missing cell
        assert again.complete and again.computed == 1 and store.cell_failures("g1").empty
        assert store.runs().set_index("run_id").loc["g1", "status"] == "finished"


@pytest.mark.parametrize("kw, field", [({"cells": ()}, "cells"), ({"cells": (("S1", 0), ("S1", 0))}, "cells"),
                                       ({"units_per_cell": 0}, "units_per_cell")])
def test_bad_plans_are_refused(kw: dict[str, object], field: str) -> None:
    with pytest.raises(ConfigError) as info:
        _plan(**kw)
    assert info.value.field == field


def test_the_ledger_keeps_the_grids_life_and_the_runs_table_follows_it(tmp_path: Path) -> None:
    """Start, each cell, failure and finish go through the run ledger; ``runs.status`` is its mirror."""
    from common.ledger import Ledger

    def broken(scenario: str, seed: int, tick) -> ScenarioResult:  # type: ignore[no-untyped-def]
        if seed == 1:
            raise RuntimeError("agent crashed")
        return fake_result(seed=seed, scenario=scenario, n=4, rounds=3)

    with Store(tmp_path / "g.duckdb") as store:
        run_grid(store, _plan(), broken)
        ledger = Ledger(store)
        run = ledger.run("g1")
        assert (run.kind, run.status, run.done, run.failed) == ("test", "failed", 1, 1)
        assert run.spec == {"spec": {"k": 1}, "config": MediatorConfig().to_dict(), "seeds": [0, 1]}
        units = ledger.units("g1").set_index("unit_key")
        assert units.loc["S1/seed 1", "message"] == "RuntimeError: agent crashed"
        assert store.runs().set_index("run_id").loc["g1", "status"] == "failed"
        run_grid(store, _plan(), _compute([]))
        run = ledger.run("g1")
        row = store.con.execute("SELECT status, finished_at FROM runs WHERE run_id = 'g1'").fetchone()
        assert (run.status, run.done, run.failed) == ("finished", 2, 0)
        assert row == ("finished", run.finished_at)  # the same transaction wrote both
        other = _plan(seeds=(0, 1, 2), cells=(("S1", 0), ("S1", 1), ("S1", 2)))
        with pytest.raises(Exception, match="seeds"):  # another spec under the same id: refused, nothing written
            run_grid(store, other, _compute([]))
        assert ledger.run("g1").done == 2
