"""DuckDB store: exact schema, migrations, atomic cells, reload for re-scoring."""
from __future__ import annotations

from pathlib import Path

import duckdb
import numpy as np
import pytest

from common.migrations import applied_migrations, migrate
from dcem.core.metrics import episode_metrics
from dcem.core.config import MediatorConfig
from dcem.core.panel import Panel, three_level_loss
from dcem.core.policy import Action
from dcem.core.replay import score_reports
from dcem.core.results import MethodRun, ScenarioResult
from dcem.store.database import Store, StoreError, default_db_path
from dcem.store.migrations import MIGRATIONS, PACKAGE

EXPECTED_COLUMNS = {
    "schema_migrations": ["name", "applied_at"],
    "ledger_runs": ["run_id", "kind", "spec_json", "status", "created_at", "finished_at", "revision"],  # common.ledger
    "ledger_units": ["run_id", "unit_key", "state", "message", "updated_at"],
    "runs": ["run_id", "kind", "spec_json", "config_json", "seeds", "git_revision", "created_at",
             "finished_at", "status"],
    "cells": ["run_id", "scenario", "seed", "labels", "confusion", "prior", "loss", "high_risk",
              "config_json", "info_json", "finished_at"],
    "cases": ["run_id", "case_id", "scenario", "seed", "truth", "features"],
    "traces": ["run_id", "case_id", "method", "round", "reports", "posteriors", "weights", "pooled",
               "decision", "runner_up", "margin", "agent_risk", "dangerous_miss", "energy",
               "e_disagreement", "e_risk", "e_margin", "descent", "action", "steer_agent",
               "steer_current", "steer_alternative", "steer_features", "certified", "budget",
               "probabilities"],
    "outcomes": ["run_id", "case_id", "method", "action", "decision", "rounds", "certified", "budget",
                 "truth", "loss"],
    "metrics": ["run_id", "scenario", "seed", "method", "metric", "value"],
    "ablation": ["run_id", "scenario", "seed", "xi", "horizon", "metric", "value"],
    "presets": ["preset_id", "name", "config_json", "loss", "labels", "note", "created_at"],
    "reviews": ["review_id", "run_id", "case_id", "method", "final_label", "comment", "reviewer",
                "created_at"],
    "case_texts": ["run_id", "case_id", "source_id", "text"],
    "agent_turns": ["run_id", "case_id", "method", "round", "agent", "note", "reply", "label",
                    "probabilities", "error", "cached", "cache_key", "examples_json"],
    "cell_failures": ["run_id", "scenario", "seed", "message", "failed_at"],
}


def fake_result(seed: int = 0, scenario: str = "S1", n: int = 12, rounds: int = 5) -> ScenarioResult:
    """A small but real cell: random reports scored by the real mediator."""
    rng = np.random.default_rng(seed)
    k = 3
    conf = np.full((2, k, k), 0.1) + 0.7 * np.eye(k)
    panel = Panel(("k0", "k1", "k2"), conf, np.full(k, 1 / 3), three_level_loss(k, [0], 3.0))
    cfg = MediatorConfig(t_max=rounds)
    truth = rng.integers(0, k, n)
    reports = rng.integers(0, k, (n, rounds, 2))
    sc = score_reports(panel, reports, cfg)
    dcem_run = MethodRun("dcem", reports, sc.outcome_action, sc.outcome_decision, sc.outcome_round,
                         sc.outcome_certified, sc.outcome_budget,
                         episode_metrics(sc.outcome_decision, sc.outcome_action, sc.outcome_round, truth,
                                         panel.loss, [0], sc.outcome_certified),
                         {(0, 1): ("k0 <- x3 & x4",)})
    single = MethodRun("single", reports[:, :1], np.full(n, Action.STOP_AND_DECIDE), reports[:, 0, 0],
                       np.ones(n, int), np.zeros(n, bool), np.zeros(n, bool),
                       episode_metrics(reports[:, 0, 0], np.full(n, Action.STOP_AND_DECIDE), np.ones(n),
                                       truth, panel.loss, [0]))
    return ScenarioResult(scenario, seed, panel, cfg, tuple(f"{scenario}-s{seed}-{i:03d}" for i in range(n)),
                          truth, rng.integers(0, 2, (n, 10)), (0,), {"dcem": dcem_run, "single": single},
                          [{"xi": 0.5, "horizon": 4, "A1": 0.5, "A2": 0.6, "risk": 0.1,
                            "sa_hr": float("nan"), "escalation_rate": 0.2}],
                          {"note": "fake"})


@pytest.fixture()
def store(tmp_path: Path) -> Store:
    s = Store(tmp_path / "t.duckdb")
    yield s
    s.close()


def test_schema_has_exactly_the_documented_columns(store: Store) -> None:
    rows = store.con.execute(
        "SELECT table_name, column_name FROM information_schema.columns ORDER BY table_name, ordinal_position"
    ).fetchall()
    found: dict[str, list[str]] = {}
    for table, column in rows:
        found.setdefault(table, []).append(column)
    assert found == EXPECTED_COLUMNS


def test_migrations_apply_once_in_order(tmp_path: Path) -> None:
    con = duckdb.connect(str(tmp_path / "m.duckdb"))
    assert migrate(con, PACKAGE, MIGRATIONS) == [name for name, _ in MIGRATIONS]
    assert migrate(con, PACKAGE, MIGRATIONS) == []
    assert applied_migrations(con) == [f"dcem/{name}" for name, _ in MIGRATIONS]
    extra = MIGRATIONS + [("009_extra", ["CREATE TABLE extra (x INTEGER)"])]
    assert migrate(con, PACKAGE, extra) == ["009_extra"]
    # another package's migration of the same name is its own
    assert migrate(con, "other", [("009_extra", ["CREATE TABLE extra2 (x INTEGER)"])]) == ["009_extra"]
    broken = extra + [("010_broken", ["CREATE TABLE ok_table (x INTEGER)", "NOT SQL"])]
    with pytest.raises(duckdb.Error):
        migrate(con, PACKAGE, broken)
    tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    assert "ok_table" not in tables  # a failed migration leaves nothing behind
    assert "dcem/010_broken" not in applied_migrations(con)
    with pytest.raises(ValueError, match="package name"):
        migrate(con, "a/b", MIGRATIONS)


def test_save_and_reload_cell_round_trips(store: Store) -> None:
    result = fake_result()
    store.ensure_run("r1", kind="synthetic", spec={"x": 1}, config=result.config, seeds=[0])
    store.save_cell("r1", result)
    cell = store.load_cell("r1", "S1", 0)
    assert cell.panel.labels == result.panel.labels
    np.testing.assert_allclose(cell.panel.confusion, result.panel.confusion)
    np.testing.assert_array_equal(cell.reports["dcem"], result.methods["dcem"].reports)
    np.testing.assert_array_equal(cell.reports["single"], result.methods["single"].reports)
    np.testing.assert_array_equal(cell.truth, result.truth)
    assert cell.config == result.config and cell.info == {"note": "fake"}
    # the stored trace equals a fresh re-score, and outcomes match the run's
    traces = store.traces("r1", result.case_ids[0], "dcem")
    sc = score_reports(result.panel, result.methods["dcem"].reports[:1], result.config, detail=True)
    np.testing.assert_allclose(traces["energy"].to_numpy(), sc.energy[0])
    assert list(traces["action"]) == [Action(int(a)).name for a in sc.action[0]]
    assert list(traces.loc[0, "steer_features"]) == ["k0 <- x3 & x4"]
    outcomes = store.outcomes("r1", "dcem")
    assert list(outcomes["rounds"]) == result.methods["dcem"].outcome_round.tolist()
    metrics = store.metrics("r1")
    got = metrics[(metrics.method == "dcem") & (metrics.metric == "risk")]["value"].item()
    assert got == pytest.approx(result.methods["dcem"].metrics["risk"])
    abl = store.ablation("r1")
    assert set(abl.metric) == {"A1", "A2", "risk", "sa_hr", "escalation_rate"}
    assert abl[abl.metric == "sa_hr"]["value"].isna().all()


def test_a_cell_is_atomic_and_never_duplicated(store: Store) -> None:
    result = fake_result()
    store.ensure_run("r1", kind="synthetic", spec={}, config=result.config, seeds=[0])
    store.save_cell("r1", result)
    with pytest.raises(duckdb.Error):
        store.save_cell("r1", result)  # same cell again violates the keys ...
    counts = {t: store.con.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
              for t in ("cells", "cases", "outcomes", "traces")}
    assert counts == {"cells": 1, "cases": 12, "outcomes": 24, "traces": 12 * 5 + 12}  # ... and adds nothing
    assert store.done_cells("r1") == {("S1", 0)}


def test_run_bookkeeping(store: Store) -> None:
    cfg = MediatorConfig()
    assert store.ensure_run("a", kind="synthetic", spec={}, config=cfg, seeds=[0, 1]) is False
    assert store.ensure_run("a", kind="synthetic", spec={}, config=cfg, seeds=[0, 1]) is True
    with pytest.raises(StoreError, match="no stored runs"):
        store.latest_run()
    store.save_cell("a", fake_result())
    store.ledger().finish("a")
    assert store.latest_run() == "a"
    assert store.runs().loc[0, "status"] == "finished"
    with pytest.raises(StoreError, match="no run 'zzz'"):
        store.check_run("zzz")
    with pytest.raises(StoreError, match="no cell"):
        store.load_cell("a", "S2", 0)


def test_holds_runs_needs_a_runs_table_with_a_row(tmp_path: Path) -> None:
    path = tmp_path / "other.duckdb"
    duckdb.connect(str(path)).close()  # a DuckDB file D-CEM never wrote to
    with Store(path, read_only=True) as store:
        assert store.holds_runs() is False
    with Store(path) as store:
        assert store.holds_runs() is False  # the tables, no run
        store.ensure_run("a", kind="synthetic", spec={}, config=MediatorConfig(), seeds=[0])
    with Store(path, read_only=True) as store:
        assert store.holds_runs() is True


def test_db_path_honours_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DCEM_DB", str(tmp_path / "env.duckdb"))
    assert default_db_path() == tmp_path / "env.duckdb"
    with Store() as s:
        assert s.path == tmp_path / "env.duckdb"
    assert (tmp_path / "env.duckdb").exists()
    monkeypatch.delenv("DCEM_DB")
    assert default_db_path().name == "dcem.duckdb"


def test_unopenable_store_gives_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "not_a_db.duckdb"
    bad.write_text("this is not a database")
    with pytest.raises(StoreError, match="cannot open the store"):
        Store(bad)
