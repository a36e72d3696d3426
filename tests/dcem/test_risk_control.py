"""Learn-then-Test risk control of the mediator (dcem.calibration.risk_control, risk_check)."""
from __future__ import annotations

import math
import warnings
from functools import lru_cache
from typing import Any

import numpy as np
import pytest

from common.errors import InputError
from dcem.calibration.risk_check import check_guarantee
from dcem.calibration.risk_control import (RiskTarget, config_outcomes, escalate_all_config, fit_risk_controlled,
                                           mediator_states, select_setting, setting_outcomes)
from dcem.core.panel import Panel
from dcem.synthetic.experiment import DEFAULT_CONFIG
from dcem.synthetic.pool import TrajectoryPool, trajectory_pool

ONE_ROUND = DEFAULT_CONFIG.with_changes(t_max=1)
BASE = DEFAULT_CONFIG.with_changes(t_max=6)


@lru_cache(maxsize=None)
def _pool(scenario: str, seed: int, n: int, t_max: int) -> TrajectoryPool:
    return trajectory_pool(scenario, seed, n, base=DEFAULT_CONFIG.with_changes(t_max=t_max))


@pytest.mark.parametrize("risk, fwer, alpha", [("harmful_among_decided", "bonferroni", 0.12),
                                               ("harmful_consensus", "fixed_sequence", 0.06),
                                               ("harmful_consensus", "bonferroni", 0.06)])
def test_p_values_and_passing_settings_equal_mapies_own_controller(risk: str, fwer: str, alpha: float) -> None:
    """With one round the pooled decision does not depend on the setting and a case is
    decided iff its energy is at most lam: a binary classifier MAPIE's
    BinaryClassificationController can express (score exp(-energy), threshold exp(-lam))."""
    from mapie.risk_control import BinaryClassificationController, BinaryRisk

    pool = _pool("S1", 1, 400, 1)
    lams = tuple(float(v) for v in np.geomspace(1.5, 4.0, 40))
    states = mediator_states(pool.panel, pool.reports, None, ONE_ROUND)
    energy = states.energy[:, 0]
    wrong_high = (states.decision[:, 0] != pool.truth) & np.isin(pool.truth, pool.high_risk)
    outcomes = setting_outcomes(pool.panel, pool.reports, pool.truth, ONE_ROUND, lams, pool.high_risk)
    cut = np.array(lams) * (1 + 1e-9) + 1e-12
    assert (outcomes.decided == (energy[None] <= cut[:, None])).all()  # the premise of the comparison
    assert (outcomes.harmful == (outcomes.decided & wrong_high)).all()
    fit = select_setting(outcomes, ONE_ROUND, RiskTarget(risk=risk, alpha=alpha, delta=0.2, fwer=fwer, lambdas=lams))

    def proba(x: Any) -> np.ndarray:
        s = np.exp(-energy[np.asarray(x)[:, 0]])
        return np.stack([1 - s, s], 1)

    if risk == "harmful_consensus":
        occurrence, condition = (lambda t, p: (t == 1) & (p == 1)), (lambda t, p: np.ones_like(t, dtype=bool))
    else:
        occurrence, condition = (lambda t, p: t == 1), (lambda t, p: p == 1)
    control = BinaryClassificationController(
        predict_function=proba, risk=BinaryRisk(occurrence, condition, higher_is_better=False), target_level=alpha,
        confidence_level=0.8, list_predict_params=np.exp(-cut), fwer_method=fwer,
        best_predict_param_choice="predicted_positive_fraction")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        control.calibrate(np.arange(len(energy))[:, None], wrong_high.astype(int))
    theirs = np.nan_to_num(np.asarray(control.p_values, dtype=float).ravel(), nan=1.0)  # no case: p = 1
    assert np.allclose([r["p_value"] for r in fit.rows], theirs, rtol=1e-12, atol=1e-15)
    passed = [r["lam"] for r in fit.rows if r["passed"]]
    assert passed and np.allclose(sorted(-np.log(np.asarray(control.valid_predict_params, dtype=float).ravel())),
                                  np.array(passed) * (1 + 1e-9) + 1e-12, rtol=1e-9)
    best = max((r for r in fit.rows if r["passed"]), key=lambda r: r["decided_share"])
    assert fit.guaranteed and fit.chosen_lambda is not None and fit.rows[lams.index(fit.chosen_lambda)][
        "decided_share"] == best["decided_share"]  # ours: the passing setting that decides most


def test_the_chosen_setting_replays_to_the_reported_cal_rate_and_share() -> None:
    pool = _pool("S1", 0, 600, 6)
    target = RiskTarget(risk="system_risk", alpha=0.3, delta=0.1)
    fit = fit_risk_controlled(pool.panel, pool.reports, pool.truth, BASE, target, pool.high_risk)
    assert fit.guaranteed and fit.report["passed"] >= 1
    decided, _, loss = config_outcomes(pool.panel, mediator_states(pool.panel, pool.reports, None, BASE),
                                       pool.truth, pool.high_risk, fit.config)
    assert math.isclose(loss.mean(), fit.report["cal_rate"]) and math.isclose(decided.mean(),
                                                                              fit.report["cal_decided_share"])
    assert 0 < fit.report["cal_decided_share"] < 1  # the promise cost some decisions and kept others
    assert "at most 0.3" in fit.report["statement"] and "90%" in fit.report["statement"]
    passed = [r for r in fit.rows if r["passed"]]
    assert all(r["decided_share"] <= fit.report["cal_decided_share"] for r in passed)
    # fixed sequence: the passing settings are the first ones of the grid, without a gap
    first_fail = next(i for i, r in enumerate(fit.rows) if not r["passed"])
    assert all(not r["passed"] for r in fit.rows[first_fail:])


def test_too_few_cal_cases_give_no_guarantee_and_escalate_every_case() -> None:
    pool = _pool("S1", 0, 600, 6)
    target = RiskTarget(risk="harmful_consensus", alpha=0.01, delta=0.1)
    few = np.arange(8)
    fit = fit_risk_controlled(pool.panel, pool.reports[few], pool.truth[few], BASE, target, pool.high_risk)
    assert not fit.guaranteed and fit.chosen_lambda is None and fit.config == escalate_all_config(BASE)
    assert "every case is escalated" in fit.report["statement"]
    decided, _, _ = config_outcomes(pool.panel, mediator_states(pool.panel, pool.reports, None, BASE), pool.truth,
                                    pool.high_risk, fit.config)
    assert not decided.any()
    # with the whole pool the same target passes
    assert fit_risk_controlled(pool.panel, pool.reports, pool.truth, BASE, target, pool.high_risk).guaranteed


@pytest.mark.parametrize("changes, field", [
    ({"alpha": 0.0}, "alpha"), ({"alpha": 1.0}, "alpha"), ({"alpha": float("nan")}, "alpha"), ({"alpha": True}, "alpha"),
    ({"delta": -0.1}, "delta"), ({"risk": "accuracy"}, "risk"), ({"fwer": "holm"}, "fwer"),
    ({"risk": "harmful_among_decided"}, "fwer"), ({"lambdas": (1.0, 0.5)}, "lambdas"), ({"lambdas": ()}, "lambdas"),
    ({"lambdas": (0.0, 1.0)}, "lambdas"), ({"lambdas": (1.0, float("inf"))}, "lambdas"),
])
def test_a_bad_target_names_its_field(changes: dict[str, Any], field: str) -> None:
    with pytest.raises(InputError) as info:
        RiskTarget(**changes)
    assert info.value.field == field


def test_inputs_that_cannot_be_controlled_are_refused() -> None:
    pool = _pool("S1", 0, 600, 6)
    small_loss = Panel(pool.panel.labels, pool.panel.confusion, pool.panel.prior, pool.panel.loss / 10)
    with pytest.raises(InputError, match="largest entry"):  # every setting would pass
        fit_risk_controlled(small_loss, pool.reports, pool.truth, BASE, RiskTarget(risk="system_risk", alpha=0.5),
                            pool.high_risk)
    with pytest.raises(InputError, match="escalation"):
        fit_risk_controlled(pool.panel, pool.reports, pool.truth, BASE.with_changes(escalation=False), RiskTarget(),
                            pool.high_risk)
    with pytest.raises(InputError) as info:
        fit_risk_controlled(pool.panel, pool.reports, pool.truth[:-1], BASE, RiskTarget(), pool.high_risk)
    assert info.value.field == "truth"
    with pytest.raises(InputError) as info:  # no energy, nothing to order the settings by
        fit_risk_controlled(pool.panel, pool.reports, pool.truth, BASE.with_changes(alpha=0.0, beta=0.0, gamma=0.0),
                            RiskTarget(), pool.high_risk)
    assert info.value.field == "weights"


def test_over_many_splits_the_test_rate_exceeds_alpha_at_most_delta_of_the_time() -> None:
    """The promise, measured: 300 random CAL/TEST splits of one recorded pool.  A choice
    without the test (the setting that decides most among those whose CAL rate is at most
    alpha) breaks the bound far more often, so the check can fail."""
    pool = _pool("S1", 0, 2000, 6)  # deciding 57 % of the cases costs a system risk of 0.376 here
    target = RiskTarget(risk="system_risk", alpha=0.37, delta=0.1)
    check, = check_guarantee(pool.panel, pool.reports, pool.truth, BASE, [target], pool.high_risk, n_cal=200,
                             splits=300, rng=np.random.default_rng(0), compare_eq1=False)
    summary = check.summary()
    assert summary["guaranteed_share"] > 0.9 and summary["ltt_mean_decided"] > 0.2
    assert summary["ltt_violation_share"] <= 0.1 + 3 * math.sqrt(0.1 * 0.9 / 300)
    outcomes = setting_outcomes(pool.panel, pool.reports, pool.truth, BASE, target.lambdas, pool.high_risk)
    rng, naive = np.random.default_rng(0), []
    for _ in range(300):
        order = rng.permutation(len(pool.truth))
        cal, test = order[:200], order[200:]
        ok = np.flatnonzero(outcomes.loss[:, cal].mean(axis=1) <= target.alpha)
        pick = ok[np.argmax(outcomes.decided[ok][:, cal].mean(axis=1))]
        naive.append(outcomes.loss[pick, test].mean() > target.alpha)
    assert np.mean(naive) > summary["ltt_violation_share"] + 0.15


def test_the_check_sets_the_eq1_fit_beside_each_target_on_the_same_splits() -> None:
    pool = _pool("S1", 0, 600, 6)
    targets = [RiskTarget(risk="system_risk", alpha=0.37), RiskTarget(risk="harmful_consensus", alpha=0.01)]
    checks = check_guarantee(pool.panel, pool.reports, pool.truth, BASE, targets, pool.high_risk, n_cal=150,
                             splits=12, rng=np.random.default_rng(1))
    first, second = (c.summary() for c in checks)
    assert first["splits"] == second["splits"] == 12 and first["n_test"] == 450
    # one eq. (1) fit per split: the same decided share under both targets
    assert first["eq1_mean_decided"] == second["eq1_mean_decided"] and 0 <= first["eq1_mean_decided"] <= 1
    assert [s.eq1_decided for s in checks[0].splits] == [s.eq1_decided for s in checks[1].splits]
    with pytest.raises(InputError) as info:
        check_guarantee(pool.panel, pool.reports, pool.truth, BASE, targets, pool.high_risk, n_cal=600, splits=1,
                        rng=np.random.default_rng(0))
    assert info.value.field == "n_cal"
    with pytest.raises(InputError) as info:
        check_guarantee(pool.panel, pool.reports, pool.truth, BASE,
                        [targets[0], RiskTarget(lambdas=(1.0, 2.0))], pool.high_risk, n_cal=100, splits=1,
                        rng=np.random.default_rng(0))
    assert info.value.field == "targets"
