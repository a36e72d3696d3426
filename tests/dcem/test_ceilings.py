"""Accuracy and risk ceilings of the synthetic world (dcem.synthetic.ceilings)."""
from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from common.errors import InputError
from dcem.synthetic.ceilings import (
    MAX_ROUNDS,
    Ceilings,
    accuracy_ceilings,
    best_decision_accuracy,
    cross_fitted_accuracy,
    multi_round_ceilings,
)
from dcem.synthetic.generator import synthetic_loss
from dcem.synthetic.rule_agents import SCENARIO_NAMES

N = 50_000
TOL = 0.01
LOSS = synthetic_loss()  # 0 diagonal, 3 for missing k0, 1 otherwise


def test_loss_is_the_three_level_loss() -> None:
    assert LOSS.tolist() == [[0, 1, 1], [3, 0, 1], [3, 1, 0]]


def test_best_decision_by_hand() -> None:
    groups = np.array([0, 0, 0, 1, 1, 2])
    truth = np.array([0, 1, 1, 2, 2, 0])
    acc, risk = best_decision_accuracy(groups, truth, LOSS)
    # majorities: group 0 -> k1 (2 of 3), group 1 -> k2 (2), group 2 -> k0 (1)
    assert acc == pytest.approx(5 / 6)
    # group 0 under the loss: deciding k0 costs 1 + 1 = 2, k1 costs 3, k2 costs 3 + 1 + 1 = 5
    # -> k0 (not the majority); groups 1 and 2 cost 0
    assert risk == pytest.approx(2 / 6)


def test_best_decision_with_zero_one_loss_and_any_group_ids() -> None:
    zero_one = 1.0 - np.eye(3)
    groups = np.array(["a", "b", "a", "b", "c"])
    truth = np.array([1, 2, 1, 0, 2])
    acc, risk = best_decision_accuracy(groups, truth, zero_one)
    assert acc == pytest.approx(4 / 5)
    assert risk == pytest.approx(1 - acc)
    # one group for everything: the majority class rate
    acc, _ = best_decision_accuracy(np.zeros(5, dtype=int), truth, zero_one)
    assert acc == pytest.approx(2 / 5)


def test_cross_fitted_by_hand() -> None:
    zero_one = 1.0 - np.eye(3)
    groups = np.array([0, 0, 0, 0, 1, 1])
    truth = np.array([1, 1, 1, 2, 2, 0])
    fold = np.array([True, False, True, False, True, False])
    acc, risk = cross_fitted_accuracy(groups, truth, zero_one, fold)
    # fold False (cases 1, 3, 5) fits: group 0 -> tie k1/k2 -> k1, group 1 -> k0
    #   and scores cases 0 (k1, ok), 2 (k1, ok), 4 (k2, miss)
    # fold True (cases 0, 2, 4) fits: group 0 -> k1, group 1 -> k2
    #   and scores cases 1 (k1, ok), 3 (k2, miss), 5 (k0, miss)
    assert acc == pytest.approx(3 / 6)
    assert risk == pytest.approx(3 / 6)


def test_cross_fitted_unseen_group_takes_the_fold_wide_decision() -> None:
    groups = np.array([0, 0, 0, 1])
    truth = np.array([2, 2, 0, 0])
    fold = np.array([False, False, False, True])
    acc, risk = cross_fitted_accuracy(groups, truth, LOSS, fold)
    # case 3 (group 1, unseen in fold False) gets the fold-wide majority k2: miss;
    # its risk decision: fold-wide counts (1, 0, 2) -> k0 costs 2, k2 costs 3 -> k0: cost 0.
    # fold True fits group 1 only; cases 0-2 fall back to its decision k0: 1 of 3 correct.
    assert acc == pytest.approx(1 / 4)
    assert risk == pytest.approx((0 + 1 + 1 + 0) / 4)


def test_pure_function_input_errors() -> None:
    with pytest.raises(InputError, match="truth"):
        best_decision_accuracy(np.array([0, 1]), np.array([0, 3]), LOSS)
    with pytest.raises(InputError, match="group_ids"):
        best_decision_accuracy(np.array([0, 1, 2]), np.array([0, 1]), LOSS)
    with pytest.raises(InputError, match="loss"):
        best_decision_accuracy(np.array([0, 1]), np.array([0, 1]), np.ones((2, 3)))
    with pytest.raises(InputError, match="fold"):
        cross_fitted_accuracy(np.array([0, 1]), np.array([0, 1]), LOSS, np.array([True, True]))


@pytest.fixture(scope="module")
def measured() -> dict[tuple[str, float], Ceilings]:
    return {(s, sh): accuracy_ceilings(s, n=N, rng=np.random.default_rng(7), sharpness=sh)
            for s in SCENARIO_NAMES for sh in (1.0, 3.0)}


def test_ordering(measured: dict[tuple[str, float], Ceilings]) -> None:
    for c in measured.values():
        # one_round <= posteriors is a theorem (the reports are a randomisation of the
        # posteriors); one_round <= map_pair holds at these sharpness values but is not
        # one (ties broken to the lowest label lose what a sample can show).
        assert c.one_round <= c.map_pair + TOL, c
        assert c.map_pair <= c.posteriors + TOL, c
        assert c.posteriors <= 1.0
        assert c.one_round <= c.posteriors + TOL, c
        assert c.posteriors_risk <= min(c.one_round_risk, c.map_pair_risk) + TOL, c
        assert c.posteriors_risk >= 0.0


def test_map_and_posteriors_do_not_depend_on_sharpness(
        measured: dict[tuple[str, float], Ceilings]) -> None:
    for s in SCENARIO_NAMES:
        soft, sharp = measured[(s, 1.0)], measured[(s, 3.0)]
        for name in ("map_pair", "posteriors", "map_pair_risk", "posteriors_risk",
                     "map_pair_in_sample", "posteriors_in_sample"):
            assert getattr(soft, name) == getattr(sharp, name), (s, name)
        # the one-round ceiling does: sharper agents report their mode more often
        assert sharp.one_round > soft.one_round + 0.05, s


def test_held_out_is_not_above_in_sample(measured: dict[tuple[str, float], Ceilings]) -> None:
    for c in measured.values():
        for name in ("one_round", "map_pair", "posteriors"):
            assert getattr(c, name) <= getattr(c, f"{name}_in_sample") + TOL, (c, name)
            assert getattr(c, f"{name}_risk") >= getattr(c, f"{name}_risk_in_sample") - TOL


def test_recorded_fields_and_to_dict(measured: dict[tuple[str, float], Ceilings]) -> None:
    c = measured[("S3b", 3.0)]
    assert (c.scenario, c.n, c.sharpness) == ("S3b", N, 3.0)
    d = c.to_dict()
    assert d["scenario"] == "S3b" and d["one_round"] == c.one_round
    assert set(d) == {f.name for f in dataclasses.fields(Ceilings)}
    json.dumps(d)
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.n = 1  # type: ignore[misc]


def test_deterministic_for_a_fixed_seed() -> None:
    a = accuracy_ceilings("S3b", n=5_000, rng=np.random.default_rng(3), sharpness=2.0)
    b = accuracy_ceilings("S3b", n=5_000, rng=np.random.default_rng(3), sharpness=2.0)
    assert a == b
    other = accuracy_ceilings("S3b", n=5_000, rng=np.random.default_rng(4), sharpness=2.0)
    assert other != a


@pytest.mark.parametrize("kwargs, field, message", [
    ({"scenario": "S4"}, "scenario", "unknown scenario"),
    ({"n": 999}, "n", "at least 1000"),
    ({"n": 5000.0}, "n", "integer"),
    ({"sharpness": 0.0}, "sharpness", "positive"),
    ({"sharpness": -1.0}, "sharpness", "positive"),
    ({"sharpness": float("nan")}, "sharpness", "positive"),
])
def test_input_errors(kwargs: dict[str, object], field: str, message: str) -> None:
    args: dict[str, object] = {"scenario": "S1", "n": 5000, "sharpness": 1.0}
    args.update(kwargs)
    scen = args.pop("scenario")
    with pytest.raises(InputError, match=message) as info:
        accuracy_ceilings(scen, rng=np.random.default_rng(0), **args)  # type: ignore[arg-type]
    assert info.value.field == field


def test_multi_round_starts_at_one_round_and_grows_towards_posteriors() -> None:
    n = 20_000
    one = accuracy_ceilings("S3b", n=n, rng=np.random.default_rng(11), sharpness=1.0)
    many = multi_round_ceilings("S3b", rounds=(4, 1, 4), n=n, rng=np.random.default_rng(11),
                                sharpness=1.0)
    assert many.rounds == (1, 4)
    # same cases, split and round-1 draw as accuracy_ceilings
    assert many.accuracy[0] == one.one_round
    assert many.risk[0] == one.one_round_risk
    assert many.accuracy_in_sample[0] == one.one_round_in_sample
    assert many.accuracy[1] > many.accuracy[0] + 0.05  # more rounds reveal more
    assert many.risk[1] < many.risk[0] - 0.05
    assert many.accuracy[1] <= one.posteriors + TOL
    assert many.risk[1] >= one.posteriors_risk - TOL
    d = many.to_dict()
    assert d["rounds"] == [1, 4] and d["scenario"] == "S3b"
    json.dumps(d)


@pytest.mark.parametrize("rounds", [(), (0,), (-1, 2), (MAX_ROUNDS + 1,), ("x",)])
def test_multi_round_input_errors(rounds: tuple[object, ...]) -> None:
    with pytest.raises(InputError, match="rounds"):
        multi_round_ceilings("S1", rounds=rounds, n=5000,  # type: ignore[arg-type]
                             rng=np.random.default_rng(0), sharpness=1.0)
