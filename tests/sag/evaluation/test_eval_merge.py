"""An evaluation split over two store files (one group each, as two processes or machines
would run it) and merged gives the evaluation one store would hold."""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from common.store_merge import MergeReport
from common.store_merge import merge_store as merge_with
from sag.cli import main as sag_main
from sag.group.config import preset
from sag.evaluation.export import build_export
from sag.evaluation.runner import run_group_eval
from sag.evaluation.suite import SuiteSpec
from sag.store.eval_tables import eval_costs, record_cost
from sag.store.merge_checks import sag_store_checks
from sag.store.tables import SagStore
from tests.sag.evaluation.test_eval_run import policy
from tests.sag.fakes import ScriptedTurns

SPEC = SuiteSpec("core", n_items=1)


def merge_store(store: SagStore, source: Path) -> MergeReport:
    """Merge with the rules of every table a SAG store holds."""
    return merge_with(store, source, sag_store_checks())


def _run(path: Path, groups: tuple[str, ...], only: tuple[str, ...] = ()) -> None:
    with SagStore(path) as store:
        for name in groups:
            cfg = preset(name)
            runner = ScriptedTurns(policy)
            assert run_group_eval(store, SPEC, cfg, runners={m: runner for m in cfg.models()},
                                  measure_memory=False, only=only).complete


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
        assert again.computed == 0 and runner.requests == []
        assert merge_store(store, tmp_path / "b.duckdb").added == 0


def test_one_group_split_by_parts_over_two_stores_merges_into_the_whole(tmp_path: Path) -> None:
    _run(tmp_path / "one.duckdb", ("vote-6",))
    _run(tmp_path / "a.duckdb", ("vote-6",), only=("consistency", "robustness/medqa"))
    _run(tmp_path / "b.duckdb", ("vote-6",), only=("accuracy", "relevance", "fairness", "safety",
                                                   "robustness/mmlu-pro-health"))
    half = _results(tmp_path / "a.duckdb")["groups"]["vote-6"]
    assert not half["complete"] and not half["accuracy"]  # a part store alone is an unfinished evaluation
    with SagStore(tmp_path / "a.duckdb") as store:
        report = merge_store(store, tmp_path / "b.duckdb")
    assert report.added > 0
    assert _results(tmp_path / "a.duckdb") == _results(tmp_path / "one.duckdb")


def test_a_group_finished_in_a_copy_is_finished_after_merging_it_back(tmp_path: Path) -> None:
    """The copy taken while a group ran holds its runs as running; the copy finishes them."""
    _run(tmp_path / "main.duckdb", ("single",))
    with SagStore(tmp_path / "main.duckdb") as store:
        store.con.execute("UPDATE sag_runs SET status = 'running', finished_at = NULL")
    shutil.copy(tmp_path / "main.duckdb", tmp_path / "copy.duckdb")
    _run(tmp_path / "copy.duckdb", ("single",))  # the resume in the copy finishes every run
    with SagStore(tmp_path / "main.duckdb") as store:
        report = merge_store(store, tmp_path / "copy.duckdb")
        statuses = {r[0] for r in store.con.execute("SELECT status FROM sag_runs").fetchall()}
    runs = next(t for t in report.tables if t.table == "sag_runs")
    assert statuses == {"finished"} and runs.replaced == runs.present > 0


def test_the_peak_memory_of_a_group_run_in_two_processes_is_the_larger_after_merging(tmp_path: Path) -> None:
    weights = {"agents": {"smollm2-135m": 6}}
    for name, peaks in (("a", {"sag-6": 900.0, "vote-6": 700.0}), ("b", {"sag-6": 950.0, "vote-6": 650.0,
                                                                        "sag-10": 1200.0})):
        with SagStore(tmp_path / f"{name}.duckdb") as store:
            for group, peak in peaks.items():
                record_cost(store, eval_id="e", group=group, peak_rss_mb=peak, weights=weights)
    with SagStore(tmp_path / "a.duckdb") as store:
        report = merge_store(store, tmp_path / "b.duckdb")
        costs = eval_costs(store, "e")
        again = merge_store(store, tmp_path / "b.duckdb")
    assert {g: c["peak_rss_mb"] for g, c in costs.items()} == {"sag-6": 950.0, "vote-6": 700.0, "sag-10": 1200.0}
    table = next(t for t in report.tables if t.table == "sag_eval_cost")
    assert (table.added, table.present, table.replaced, table.differing) == (1, 2, 1, 1)
    assert "1 replaced: the source's larger peak_rss_mb" in "\n".join(report.lines())
    assert report.lines()[-1].endswith("1 row replaced by the source's (a larger measurement, a finished run)")
    assert again.replaced == 0 and again.added == 0
