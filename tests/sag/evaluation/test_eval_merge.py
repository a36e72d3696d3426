"""An evaluation split over two store files (one group each, as two processes or machines
would run it) and merged gives the evaluation one store would hold."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from common.store_merge import merge_store
from sag.cli import main as sag_main
from sag.config import preset
from sag.evaluation.export import build_export
from sag.evaluation.runner import run_group_eval
from sag.evaluation.suite import SuiteSpec
from sag.store.tables import SagStore
from tests.sag.evaluation.test_eval_run import policy
from tests.sag.fakes import ScriptedTurns

SPEC = SuiteSpec("core", n_items=1)


def _run(path: Path, groups: tuple[str, ...]) -> None:
    with SagStore(path) as store:
        for name in groups:
            cfg = preset(name)
            runner = ScriptedTurns(policy)
            assert run_group_eval(store, SPEC, cfg, runners={m: runner for m in cfg.models()},
                                  measure_memory=False).complete


def _results(path: Path) -> dict[str, Any]:
    """The export without what depends on the clock (seconds per item)."""
    with SagStore(path) as store:
        data = build_export(store, SPEC.eval_id)
    for group in data["groups"].values():
        group["deployment"].pop("seconds_per_item", None)
    return data


def test_two_halves_merged_equal_one_store(tmp_path: Path, capsys: Any) -> None:
    _run(tmp_path / "one.duckdb", ("single", "vote-6"))
    _run(tmp_path / "a.duckdb", ("single",))
    _run(tmp_path / "b.duckdb", ("vote-6",))
    assert sag_main(["merge", str(tmp_path / "b.duckdb"), "--db", str(tmp_path / "a.duckdb")]) == 0
    assert "sag_outcomes:" in capsys.readouterr().out
    merged, whole = _results(tmp_path / "a.duckdb"), _results(tmp_path / "one.duckdb")
    assert set(merged["groups"]) == {"single", "vote-6"} and merged["groups"]["vote-6"]["complete"]
    assert merged == whole
    with SagStore(tmp_path / "a.duckdb") as store:  # the merged evaluation resumes with nothing to do
        cfg = preset("vote-6")
        runner = ScriptedTurns(policy)
        again = run_group_eval(store, SPEC, cfg, runners={m: runner for m in cfg.models()}, measure_memory=False)
        assert again.answered_now == 0 and runner.requests == []
        assert merge_store(store, tmp_path / "b.duckdb").added == 0
