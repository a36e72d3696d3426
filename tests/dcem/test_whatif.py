"""What-if re-scoring of a stored run: exact reproduction, new settings, sweeps."""
from __future__ import annotations

import pickle

import numpy as np
import pandas as pd
import pytest

from dcem.analysis.whatif import SWEEP_COLUMNS, ReplayCell, RunReplay, baseline_metrics, load_run_replay, rescore, sweep
from dcem.core.config import MediatorConfig
from dcem.core.replay import score_reports
from common.errors import InputError
from dcem.store.database import Store, StoreError

from .small_run import N_EVAL, RUN_ID, SCENARIOS, SEEDS, small_run_file, small_run_store  # noqa: F401

COMPARED = ["truth", "action", "decision", "rounds", "certified", "budget", "loss"]


@pytest.fixture()
def replay(small_run_store: Store) -> RunReplay:
    return load_run_replay(small_run_store, RUN_ID)


def _stored(store: Store, method: str, case_ids: pd.Series) -> pd.DataFrame:
    return store.outcomes(RUN_ID, method).set_index("case_id").loc[case_ids.to_numpy()].reset_index()


@pytest.mark.parametrize("method", ["dcem", "dcem_noesc"])
def test_original_configs_reproduce_the_stored_outcomes(small_run_store: Store, method: str) -> None:
    replay = load_run_replay(small_run_store, RUN_ID, method)
    assert len(replay.cells) == len(SCENARIOS) * len(SEEDS)
    assert replay.n_cases == len(SCENARIOS) * len(SEEDS) * N_EVAL
    got = rescore(replay)
    stored = _stored(small_run_store, method, got.outcomes["case_id"])
    for column in COMPARED:
        assert got.outcomes[column].tolist() == stored[column].tolist(), column
    assert got.outcomes["scenario"].tolist() == stored["scenario"].tolist()
    assert got.metrics == baseline_metrics(replay)
    if method == "dcem":
        assert got.metrics["escalation_rate"] > 0  # the small run has escalations to move
    else:
        assert got.metrics["escalation_rate"] == 0


def test_per_scenario_metrics_match_the_stored_cell_metrics(small_run_store: Store, replay: RunReplay) -> None:
    got = rescore(replay).per_scenario.set_index("scenario")
    stored = small_run_store.metrics(RUN_ID)
    stored = stored[stored.method == "dcem"].groupby(["scenario", "metric"])["value"].mean()
    assert list(got.index) == list(SCENARIOS)
    assert (got["n_cases"] == len(SEEDS) * N_EVAL).all()
    for scenario in SCENARIOS:  # equal cell sizes: pooled = mean over seeds for these
        for metric in ("risk", "system_risk", "accuracy", "certified_rate", "escalation_rate", "avg_rounds"):
            assert got.loc[scenario, metric] == pytest.approx(stored[(scenario, metric)]), (scenario, metric)


@pytest.mark.parametrize("per_cell", [False, True])
def test_new_settings_equal_score_reports_cell_by_cell(replay: RunReplay, per_cell: bool) -> None:
    cfg = MediatorConfig(prior="empirical", eps_safe=2.0, eps_low=3.0, m_safe=0.2, delta=0.1,
                         s_asym=0.8, t_max=9, window=3)
    loss = np.array(replay.cells[0].panel.loss) * 1.5 + 0.25 * (1 - np.eye(replay.cells[0].panel.n_labels))
    got = rescore(replay, config=cfg, loss=loss, per_cell_thresholds=per_cell).outcomes
    start = 0
    for cell in replay.cells:
        c = cfg.with_changes(**{f: getattr(cell.config, f) for f in ("eps_safe", "eps_low", "m_safe", "delta")}) \
            if per_cell else cfg
        sc = score_reports(cell.panel.with_loss(loss), np.asarray(cell.reports), c)
        part = got.iloc[start:start + cell.n_cases]
        start += cell.n_cases
        assert part["rounds"].tolist() == sc.outcome_round.tolist()
        assert part["decision"].tolist() == sc.outcome_decision.tolist()
        assert part["certified"].tolist() == sc.outcome_certified.tolist()
        assert part["budget"].tolist() == sc.outcome_budget.tolist()
        assert part["action"].tolist() == [["CONTINUE", "DIFFERENTIAL_STEER", "STOP_AND_DECIDE",
                                            "STOP_AND_ESCALATE", "PENDING"][a] for a in sc.outcome_action]
        np.testing.assert_array_equal(part["loss"].to_numpy(), loss[sc.outcome_decision, np.asarray(cell.truth)])
        assert max(sc.outcome_round) <= 9


def test_eps_safe_moves_certification_in_the_expected_direction(replay: RunReplay) -> None:
    fitted = replay.cells[0].config
    base = rescore(replay, config=fitted).metrics["certified_rate"]
    never = rescore(replay, config=fitted.with_changes(eps_safe=0.0))
    assert never.metrics["certified_rate"] == 0.0  # energy > 0 always, nothing is certified
    assert never.outcomes["certified"].sum() == 0
    assert base > 0
    loose = rescore(replay, config=fitted.with_changes(eps_safe=100.0, eps_low=101.0, m_safe=0.0))
    assert loose.metrics["certified_rate"] == 1.0  # every case certifies in round 1
    assert loose.metrics["avg_rounds"] == 1.0 and loose.metrics["escalation_rate"] == 0.0


def test_action_mix_shares(replay: RunReplay) -> None:
    got = rescore(replay, config=replay.cells[0].config.with_changes(t_max=20))  # beyond the stored rounds
    counts = got.outcomes["action"].value_counts(normalize=True).to_dict()
    assert set(got.outcome_mix) == {"STOP_AND_DECIDE", "STOP_AND_ESCALATE", "PENDING"}
    for name, share in got.outcome_mix.items():
        assert share == pytest.approx(counts.get(name, 0.0))
    assert sum(got.outcome_mix.values()) == pytest.approx(1.0)
    assert set(got.round_mix) == {"CONTINUE", "DIFFERENTIAL_STEER", "STOP_AND_DECIDE", "STOP_AND_ESCALATE"}
    assert sum(got.round_mix.values()) == pytest.approx(1.0)
    played = got.outcomes["rounds"].sum()
    ended = (got.outcomes["action"] != "PENDING").sum()
    terminal_share = got.round_mix["STOP_AND_DECIDE"] + got.round_mix["STOP_AND_ESCALATE"]
    assert terminal_share * played == pytest.approx(ended)  # one terminal round per ended case


def test_loss_is_validated(replay: RunReplay) -> None:
    k = replay.cells[0].panel.n_labels
    for bad, words in ((np.ones((k, k + 1)), "expected shape"), (-np.ones((k, k)), ">= 0"),
                       (np.full((k, k), np.nan), "NaN"), ("abc", "numeric")):
        with pytest.raises(InputError, match=words) as info:
            rescore(replay, loss=bad)
        assert info.value.field == "loss"
    with pytest.raises(InputError) as info:
        sweep(replay, parameter="eps_safe", values=[0.1], config=MediatorConfig(), loss=np.ones((2, 2)))
    assert info.value.field == "loss"


def test_sweep_marks_invalid_values(replay: RunReplay) -> None:
    cfg = replay.cells[0].config.with_changes(eps_safe=0.5, eps_low=3.0)
    table = sweep(replay, parameter="eps_safe", values=[0.0, 1.0, 2.999, 3.0, 4.0], config=cfg)
    assert list(table.columns) == list(SWEEP_COLUMNS)
    assert table["valid"].tolist() == [True, True, True, False, False]
    assert table.loc[~table["valid"], list(SWEEP_COLUMNS[1:-1])].isna().all().all()
    for _, row in table[table["valid"]].iterrows():
        expected = rescore(replay, config=cfg.with_changes(eps_safe=row["value"])).metrics
        for name in SWEEP_COLUMNS[1:-1]:
            assert row[name] == expected[name], name
    assert table.loc[0, "certified_rate"] == 0.0
    t_table = sweep(replay, parameter="t_max", values=[2.5, np.int64(3), 0.0, np.nan], config=cfg)
    assert t_table["valid"].tolist() == [False, True, False, False]
    assert sweep(replay, parameter="eps_safe", values=np.array([1, 2]), config=cfg)["valid"].all()
    assert t_table.loc[1, "avg_rounds"] <= 3.0
    with pytest.raises(InputError) as info:
        sweep(replay, parameter="prior", values=[1.0], config=cfg)
    assert info.value.field == "parameter"


def test_replay_is_plain_data_and_method_checked(small_run_store: Store, replay: RunReplay) -> None:
    copy = pickle.loads(pickle.dumps(replay))
    assert not any(isinstance(v, Store) for v in vars(copy).values())
    pd.testing.assert_frame_equal(rescore(copy).outcomes, rescore(replay).outcomes)
    with pytest.raises(InputError) as info:
        load_run_replay(small_run_store, RUN_ID, "single")
    assert info.value.field == "method"
    with pytest.raises(StoreError, match="no run 'nope'"):
        load_run_replay(small_run_store, "nope")
    with pytest.raises(InputError) as info:
        rescore(replay, config={"eps_safe": 1.0})  # type: ignore[arg-type]
    assert info.value.field == "config"


def test_cells_without_a_table_are_scored_directly(small_run_store: Store, replay: RunReplay,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("dcem.analysis.run_replay.TABLE_LIMIT", 1)  # every cell takes the direct path
    direct = load_run_replay(small_run_store, RUN_ID)
    assert all(cell.codes is None for cell in direct.cells)
    cfg = replay.cells[0].config.with_changes(eps_safe=1.0, t_max=6)
    pd.testing.assert_frame_equal(rescore(direct, config=cfg).outcomes, rescore(replay, config=cfg).outcomes)
    assert rescore(direct).round_mix == rescore(replay).round_mix


def test_metrics_pool_cells_with_different_losses_and_high_risk_classes(replay: RunReplay) -> None:
    first, second = replay.cells[0], replay.cells[1]
    other = ReplayCell(second.scenario, second.seed, second.panel.with_loss(np.array(second.panel.loss) * 3.0),
                       second.config, (1, 2), second.truth, second.case_ids, second.reports)
    mixed = RunReplay("mixed", "dcem", (first, other))
    got = rescore(mixed)
    out = got.outcomes
    high = np.concatenate([np.isin(first.truth, first.high_risk), np.isin(other.truth, (1, 2))])
    wrong = (out["decision"] != out["truth"]).to_numpy()
    esc = (out["action"] == "STOP_AND_ESCALATE").to_numpy()
    assert got.metrics["risk"] == pytest.approx(out["loss"].mean())
    assert got.metrics["system_risk"] == pytest.approx((out["loss"] * ~esc).mean())
    assert got.metrics["high_risk_miss"] == pytest.approx(wrong[high].mean())
    assert got.metrics["harmful_consensus"] == pytest.approx((wrong & high & ~esc).mean())
    assert out["loss"].iloc[first.n_cases:].sum() > 0
