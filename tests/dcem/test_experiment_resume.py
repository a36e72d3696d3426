"""Experiment runs resume after interruption without redoing or duplicating cells."""
from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from common.errors import ConfigError
from dcem.store.database import Store
from dcem.synthetic.spec import SyntheticSpec, run_synthetic
from tests.dcem.test_store import fake_result


class FakeWorld:
    """Stands in for the synthetic world: returns small real cells, counts calls."""

    def __init__(self, fail_on_call: int | None = None) -> None:
        self.calls: list[tuple[str, int]] = []
        self.fail_on_call = fail_on_call

    def run_cell(self, scenario: str, seed: int, **kwargs: object) -> object:
        self.calls.append((scenario, seed))
        if self.fail_on_call is not None and len(self.calls) == self.fail_on_call:
            raise KeyboardInterrupt
        return fake_result(seed=seed, scenario=scenario)


@pytest.fixture()
def world(monkeypatch: pytest.MonkeyPatch) -> FakeWorld:
    fake = FakeWorld()
    module = types.ModuleType("dcem.synthetic.experiment")
    module.run_cell = fake.run_cell  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "dcem.synthetic.experiment", module)
    return fake


SPEC = SyntheticSpec(scenarios=("S1", "S3b"), seeds=(0, 1, 2), n_train=1000, n_eval=12)


def test_interrupted_run_keeps_finished_cells_and_resumes(world: FakeWorld, tmp_path: Path) -> None:
    world.fail_on_call = 4
    with Store(tmp_path / "r.duckdb") as store:
        with pytest.raises(KeyboardInterrupt):
            run_synthetic(store, SPEC)
        run_id = SPEC.run_id()
        assert store.done_cells(run_id) == {("S1", 0), ("S1", 1), ("S1", 2)}
        assert store.runs().loc[0, "status"] == "running"
        world.fail_on_call = None
        world.calls.clear()
        summary = run_synthetic(store, SPEC)
        assert summary.resumed and summary.complete
        assert world.calls == [("S3b", 0), ("S3b", 1), ("S3b", 2)]  # only the missing cells
        assert summary.computed == 3 and summary.skipped == 3
        n_cases = store.con.execute("SELECT count(*), count(DISTINCT case_id) FROM cases").fetchone()
        assert n_cases == (6 * 12, 6 * 12)
        assert store.runs().loc[0, "status"] == "finished"
        world.calls.clear()
        again = run_synthetic(store, SPEC)
        assert world.calls == [] and again.computed == 0


def test_cancel_stops_between_cells(world: FakeWorld, tmp_path: Path) -> None:
    seen: list[int] = []
    with Store(tmp_path / "c.duckdb") as store:
        summary = run_synthetic(store, SPEC, cancel=lambda: len(world.calls) >= 2,
                                progress=lambda done, total, label: seen.append(done))
        assert not summary.complete and summary.computed == 2
        assert len(store.done_cells(SPEC.run_id())) == 2
    assert seen == [0, 1, 2] and len(world.calls) == 2


def test_run_id_depends_on_settings() -> None:
    assert SPEC.run_id() == SyntheticSpec(scenarios=("S1", "S3b"), seeds=(0, 1, 2), n_train=1000,
                                          n_eval=12).run_id()
    assert SPEC.run_id() != SyntheticSpec(scenarios=("S1", "S3b"), seeds=(0, 1, 2), n_train=1000,
                                          n_eval=12, xi=0.5).run_id()


@pytest.mark.parametrize("kwargs, field", [
    ({"scenarios": ("S9",)}, "scenarios"), ({"scenarios": ()}, "scenarios"),
    ({"scenarios": ("S1", "S1")}, "scenarios"), ({"seeds": ()}, "seeds"), ({"seeds": (-1,)}, "seeds"),
    ({"xi": 1.5}, "xi"), ({"t_max": 0}, "t_max"), ({"n_eval": 0}, "n_eval"),
])
def test_bad_specs_name_the_field(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(ConfigError) as info:
        SyntheticSpec(**kwargs)  # type: ignore[arg-type]
    assert info.value.field == field
