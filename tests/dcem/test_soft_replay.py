"""What-if replay of stored runs whose agents reported probability vectors."""
from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dcem.analysis.whatif import ReplayCell, RunReplay, WhatIfResult, load_run_replay, rescore, sweep
from dcem.core.config import MediatorConfig
from dcem.core.panel import three_level_loss
from dcem.core.policy import Action
from dcem.core.replay import score_probabilities, score_reports
from dcem.core.soft import argmax_labels
from common.errors import InputError
from dcem.store.database import Store, StoreError

from .soft_world import soft_panel, soft_reports

K, A, N, T = 3, 3, 40, 6


def _cell(scenario: str, seed: int, *, soft: bool = True, cfg: MediatorConfig | None = None) -> ReplayCell:
    rng = np.random.default_rng(100 + seed + 10 * len(scenario))
    panel = soft_panel(K, A, seed)
    truth = rng.integers(0, K, N)
    probs = soft_reports(truth, T, A, K, rng)
    cfg = cfg or MediatorConfig(t_max=T, eps_safe=0.5 + 0.3 * seed, eps_low=3.0, m_safe=0.2, s_asym=0.3)
    ids = tuple(f"{scenario}-{seed}-{i:03d}" for i in range(N))
    return ReplayCell(scenario, seed, panel, cfg, (0,), truth, ids, argmax_labels(probs),
                      probabilities=probs if soft else None)


@pytest.fixture(scope="module")
def replay() -> RunReplay:
    return RunReplay("soft", "dcem", tuple(_cell(s, k) for s in ("A", "B") for k in (0, 1)))


def _expected(replay: RunReplay, cfgs: list[MediatorConfig], loss: np.ndarray | None = None) -> dict:
    cols: dict[str, list[np.ndarray]] = {"action": [], "decision": [], "rounds": [], "certified": []}
    for cell, cfg in zip(replay.cells, cfgs):
        panel = cell.panel if loss is None else cell.panel.with_loss(loss)
        sc = (score_reports(panel, cell.reports, cfg) if cell.probabilities is None
              else score_probabilities(panel, cell.probabilities, cfg))
        cols["action"].append(sc.outcome_action)
        cols["decision"].append(sc.outcome_decision)
        cols["rounds"].append(sc.outcome_round)
        cols["certified"].append(sc.outcome_certified)
    return {k: np.concatenate(v) for k, v in cols.items()}


def _assert_outcomes(got: WhatIfResult, want: dict) -> None:
    out = got.outcomes
    assert out["action"].tolist() == [Action(int(a)).name for a in want["action"]]
    np.testing.assert_array_equal(out["decision"].to_numpy(), want["decision"])
    np.testing.assert_array_equal(out["rounds"].to_numpy(), want["rounds"])
    np.testing.assert_array_equal(out["certified"].to_numpy(), want["certified"])


def test_soft_cells_take_the_direct_path_and_validate() -> None:
    cell = _cell("A", 0)
    assert cell.codes is None and cell.probabilities is not None
    assert cell.probabilities.shape == (N, T, A, K) and not cell.probabilities.flags.writeable
    assert _cell("A", 0, soft=False).codes is not None
    probs = np.asarray(cell.probabilities)
    base = dict(scenario="A", seed=0, panel=cell.panel, config=cell.config, high_risk=(0,), truth=cell.truth,
                case_ids=cell.case_ids, reports=cell.reports)
    bad = [probs[:, :-1], probs[..., :2], -probs, np.where(probs > 0.5, np.inf, probs), probs * 0.0, probs[0]]
    for arr in bad:
        with pytest.raises(InputError, match="probabilities"):
            ReplayCell(**base, probabilities=arr)  # type: ignore[arg-type]


@pytest.mark.parametrize("per_cell", [False, True])
def test_rescore_equals_score_probabilities_cell_by_cell(replay: RunReplay, per_cell: bool) -> None:
    _assert_outcomes(rescore(replay), _expected(replay, [c.config for c in replay.cells]))
    new = MediatorConfig(t_max=5, eps_safe=1.0, eps_low=2.0, m_safe=0.4, delta=0.1, s_asym=0.2, window=3)
    cfgs = [new.with_changes(**{f: getattr(c.config, f) for f in ("eps_safe", "eps_low", "m_safe", "delta")})
            if per_cell else new for c in replay.cells]
    _assert_outcomes(rescore(replay, config=new, per_cell_thresholds=per_cell), _expected(replay, cfgs))
    loss = three_level_loss(K, [1, 2], 5.0)
    _assert_outcomes(rescore(replay, config=new, loss=loss, per_cell_thresholds=per_cell),
                     _expected(replay, cfgs, loss))


def test_memoised_states_follow_every_setting_change(replay: RunReplay) -> None:
    fresh = RunReplay("soft", "dcem", replay.cells)
    for cfg in (MediatorConfig(t_max=6), MediatorConfig(t_max=6, alpha=2.0), MediatorConfig(t_max=4),
                MediatorConfig(t_max=6, eps_safe=2.0, eps_low=2.5), MediatorConfig(t_max=6)):
        _assert_outcomes(rescore(fresh, config=cfg), _expected(fresh, [cfg] * len(fresh.cells)))
    assert any(key[0] == "soft" for key in fresh._tables)


def test_a_threshold_change_moves_the_metrics(replay: RunReplay) -> None:
    cfg = MediatorConfig(t_max=T, eps_safe=0.3, eps_low=3.0, m_safe=0.2)
    loose = rescore(replay, config=cfg.with_changes(eps_safe=2.5))
    strict = rescore(replay, config=cfg)
    assert loose.metrics["avg_rounds"] < strict.metrics["avg_rounds"]
    assert loose.metrics["certified_rate"] > strict.metrics["certified_rate"]
    table = sweep(replay, parameter="eps_safe", values=[0.3, 1.0, 2.5, 5.0], config=cfg)
    assert table["valid"].tolist() == [True, True, True, False]  # 5.0 >= eps_low
    assert table.loc[0, "avg_rounds"] == pytest.approx(strict.metrics["avg_rounds"])
    assert table.loc[2, "avg_rounds"] == pytest.approx(loose.metrics["avg_rounds"])
    assert table["avg_rounds"].iloc[:3].nunique() > 1


def test_soft_and_label_cells_mix_in_one_replay() -> None:
    for method, escalation in (("dcem", True), ("dcem_noesc", False)):
        mixed = RunReplay("mix", method, (_cell("A", 0), _cell("B", 1, soft=False)))
        cfg = MediatorConfig(t_max=T, eps_safe=0.2, eps_low=0.9, m_safe=0.1)
        got = rescore(mixed, config=cfg)
        _assert_outcomes(got, _expected(mixed, [cfg.with_changes(escalation=escalation)] * 2))
        assert (got.outcomes["action"] == "STOP_AND_ESCALATE").any() == escalation


# ------------------------------------------------------------------ stored runs
def _ensure_probability_column(store: Store) -> None:
    names = {r[0] for r in store.con.execute("SELECT name FROM pragma_table_info('traces')").fetchall()}
    if "probabilities" not in names:  # until the store's own migration adds it
        store.con.execute("ALTER TABLE traces ADD COLUMN probabilities DOUBLE[][]")


def _save(store: Store, run_id: str, cells: list[ReplayCell], method: str = "dcem",
          partial: bool = False) -> None:
    store.ensure_run(run_id, kind="llm", spec={}, config=MediatorConfig(), seeds=[0, 1])
    soft_col = "probabilities" in {r[0] for r in store.con.execute(
        "SELECT name FROM pragma_table_info('traces')").fetchall()}
    for cell in cells:
        p = cell.panel
        store.con.execute("INSERT INTO cells VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                          [run_id, cell.scenario, cell.seed, list(p.labels), p.confusion.tolist(),
                           p.prior.tolist(), p.loss.tolist(), list(cell.high_risk),
                           json.dumps(cell.config.to_dict()), "{}", dt.datetime.now()])
        store.con.executemany("INSERT INTO cases VALUES (?, ?, ?, ?, ?, ?)",
                              [[run_id, cid, cell.scenario, cell.seed, int(y), []]
                               for cid, y in zip(cell.case_ids, cell.truth)])
        n, rounds = cell.reports.shape[:2]
        frame = pd.DataFrame({"run_id": run_id, "case_id": np.repeat(np.asarray(cell.case_ids, dtype=object), rounds),
                              "method": method, "round": np.tile(np.arange(1, rounds + 1), n),
                              "reports": cell.reports.reshape(n * rounds, -1).tolist()})
        if soft_col:
            probs = [None] * (n * rounds) if cell.probabilities is None else \
                cell.probabilities.reshape(n * rounds, *cell.probabilities.shape[2:]).tolist()
            if partial:
                probs[0] = None
            frame["probabilities"] = probs
        store.con.register("_frame", frame)
        cols = ", ".join(frame.columns)
        store.con.execute(f"INSERT INTO traces ({cols}) SELECT {cols} FROM _frame")  # noqa: S608
        store.con.unregister("_frame")
    store.ledger().finish(run_id)


def test_load_run_replay_reads_stored_probabilities(tmp_path: Path) -> None:
    cells = [_cell("A", 0), _cell("A", 1, soft=False), _cell("B", 0)]
    with Store(tmp_path / "x.duckdb") as store:
        _ensure_probability_column(store)
        _save(store, "soft-run", cells)
        loaded = load_run_replay(store, "soft-run")
    assert [(c.scenario, c.seed) for c in loaded.cells] == [("A", 0), ("A", 1), ("B", 0)]
    for got, want in zip(loaded.cells, cells):
        np.testing.assert_array_equal(got.reports, want.reports)
        np.testing.assert_array_equal(got.truth, want.truth)
        assert got.case_ids == want.case_ids
        if want.probabilities is None:
            assert got.probabilities is None and got.codes is not None
        else:
            assert got.codes is None
            np.testing.assert_array_equal(got.probabilities, want.probabilities)
    direct = RunReplay("soft-run", "dcem", tuple(cells))
    _assert_outcomes(rescore(loaded), _expected(direct, [c.config for c in loaded.cells]))
    assert rescore(loaded).metrics == rescore(direct).metrics


def test_partially_stored_probabilities_fall_back_to_labels(tmp_path: Path) -> None:
    with Store(tmp_path / "x.duckdb") as store:
        _ensure_probability_column(store)
        _save(store, "partial", [_cell("A", 0)], partial=True)
        loaded = load_run_replay(store, "partial")
    assert loaded.cells[0].probabilities is None and loaded.cells[0].codes is not None


def test_malformed_stored_probabilities_are_rejected(tmp_path: Path) -> None:
    with Store(tmp_path / "x.duckdb") as store:
        _ensure_probability_column(store)
        _save(store, "bad", [_cell("A", 0)])
        store.con.execute("UPDATE traces SET probabilities = [[0.5, 0.5], [1.0, 0.0, 0.0, 0.0], [0.2, 0.3, 0.5]] "
                          "WHERE round = 2 AND case_id = 'A-0-003'")
        with pytest.raises(StoreError, match="differ in length"):
            load_run_replay(store, "bad")
        store.con.execute("UPDATE traces SET probabilities = [[0.5, 0.5, 0.0], [0.2, 0.3, 0.5]] "
                          "WHERE round = 2 AND case_id = 'A-0-003'")
        with pytest.raises(StoreError, match="vector count"):
            load_run_replay(store, "bad")


def test_load_run_replay_without_the_probability_column(tmp_path: Path) -> None:
    with Store(tmp_path / "x.duckdb") as store:
        if "probabilities" in {r[0] for r in store.con.execute(
                "SELECT name FROM pragma_table_info('traces')").fetchall()}:
            store.con.execute("ALTER TABLE traces DROP COLUMN probabilities")  # a store from before the column
        _save(store, "labels", [_cell("A", 0, soft=False)])
        loaded = load_run_replay(store, "labels")
    assert loaded.cells[0].probabilities is None and loaded.cells[0].codes is not None
    _assert_outcomes(rescore(loaded), _expected(loaded, [loaded.cells[0].config]))
