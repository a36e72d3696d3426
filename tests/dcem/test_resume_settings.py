"""A named synthetic run (``--run-id``) resumes only with the settings it was started with:
other settings are refused with status 2 and one line naming the first field that differs,
and the store is left as it was (issue 51, item 2)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from dcem.core.config import MediatorConfig
from dcem.store.database import Store
from tests.cli_inprocess import run_main
from tests.dcem.test_store import fake_result
from tests.store_rows import store_rows

SMALL = ["--seeds", "1", "--n-train", "200", "--n-eval", "10", "--no-ablation", "--quiet"]


@pytest.fixture(scope="module")
def named_s1(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store holding ``myrun``: S1, one seed, thresholds by eq. (1)."""
    db = tmp_path_factory.mktemp("named") / "s.duckdb"
    out = run_main("dcem", ["run", "synthetic", "--db", str(db), "--run-id", "myrun", "--scenarios", "S1", *SMALL])
    assert out.returncode == 0 and "run myrun (new): 1 cells computed" in out.stdout, out.stderr
    return db


def _copy(named_s1: Path, tmp_path: Path) -> str:
    db = tmp_path / "s.duckdb"
    shutil.copy(named_s1, db)
    return str(db)


def _refused(db: str, args: list[str]) -> str:
    before = store_rows(Path(db))
    out = run_main("dcem", ["run", "synthetic", "--db", db, "--run-id", "myrun", *args, *SMALL])
    assert out.returncode == 2 and out.stdout == "", (out.returncode, out.stdout, out.stderr)
    assert out.stderr.startswith("error: run myrun is stored with other settings: ") and out.stderr.count("\n") == 1
    assert store_rows(Path(db)) == before  # no row added, removed or changed (the run's status included)
    return out.stderr


def test_another_threshold_fit_is_refused_not_resumed(named_s1: Path, tmp_path: Path) -> None:
    err = _refused(_copy(named_s1, tmp_path), ["--scenarios", "S1", "--fit", "ltt", "--alpha", "0.2"])
    assert "risk_target stored (not set), given {\"alpha\": 0.2," in err
    assert "nothing was written" in err


def test_another_scenario_and_xi_are_refused_and_the_run_keeps_s1_only(named_s1: Path, tmp_path: Path) -> None:
    db = _copy(named_s1, tmp_path)
    err = _refused(db, ["--scenarios", "S2", "--xi", "0.5"])
    assert 'scenarios stored ["S1"], given ["S2"]' in err  # the first field of the spec that differs
    with Store(db, read_only=True) as store:
        assert store.done_cells("myrun") == {("S1", 0)}


def test_another_world_or_mediator_parameter_is_refused(named_s1: Path, tmp_path: Path) -> None:
    db = _copy(named_s1, tmp_path)
    assert 'reports stored (not set), given "map"' in _refused(db, ["--scenarios", "S1", "--world", "map"])
    assert "base_config.alpha stored 1.0, given 0.8" in _refused(db, ["--scenarios", "S1", "--param", "alpha=0.8"])


def test_the_same_settings_still_resume(named_s1: Path, tmp_path: Path) -> None:
    db = _copy(named_s1, tmp_path)
    out = run_main("dcem", ["run", "synthetic", "--db", db, "--run-id", "myrun", "--scenarios", "S1", *SMALL])
    assert out.returncode == 0 and "run myrun (resumed): 0 cells computed, 1 already stored" in out.stdout


def test_the_store_refuses_a_resume_with_another_kind_config_or_seeds(tmp_path: Path) -> None:
    cell = fake_result(seed=0)
    with Store(tmp_path / "r.duckdb") as store:
        assert store.ensure_run("r", kind="synthetic", spec={"x": 1}, config=cell.config, seeds=[0]) is False
        store.save_cell("r", cell)
        for change, field in (({"kind": "clinical"}, "kind"), ({"spec": {"x": 2}}, "x"),
                              ({"config": MediatorConfig(t_max=3)}, "config."), ({"seeds": [0, 1]}, "seeds")):
            given = {"kind": "synthetic", "spec": {"x": 1}, "config": cell.config, "seeds": [0], **change}
            with pytest.raises(Exception, match=f"run r is stored with other settings: {field}"):
                store.ensure_run("r", **given)  # type: ignore[arg-type]
        assert store.runs().loc[0, "status"] == "running" and store.done_cells("r") == {("S1", 0)}
