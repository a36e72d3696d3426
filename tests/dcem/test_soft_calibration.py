"""Threshold fitting and baselines on probability-vector reports."""
from __future__ import annotations

import numpy as np
import pytest

from dcem.calibration.fitting import ThresholdGrid, costed_objective, fit_thresholds, soft_states
from dcem.core.baselines import fixed_pool, fixed_pool_probabilities, pooled_decision_probabilities, single_best
from dcem.core.config import MediatorConfig
from dcem.core.posterior import report_posteriors, soft_report_posteriors
from dcem.core.replay import Trajectory, score_probabilities, score_reports, score_states
from dcem.core.soft import argmax_labels
from dcem.core.state import assess_probabilities, assess_reports
from common.errors import InputError

from .soft_world import soft_panel, soft_reports

OUTCOME_FIELDS = ("action", "certified", "budget", "outcome_action", "outcome_round", "outcome_decision",
                  "steer_agent", "steer_current", "steer_alternative")


def _assert_same(a: Trajectory, b: Trajectory) -> None:
    for name in OUTCOME_FIELDS:
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    np.testing.assert_array_equal(a.energy, b.energy)
    np.testing.assert_array_equal(a.descent, b.descent)


@pytest.fixture(scope="module")
def world() -> tuple:
    rng = np.random.default_rng(11)
    panel = soft_panel(k=3, n_agents=3, seed=4)
    truth = rng.integers(0, 3, 300)
    probs = soft_reports(truth, 6, 3, 3, rng)
    return panel, probs, truth


def test_fit_on_probabilities_improves_the_soft_objective(world: tuple) -> None:
    panel, probs, truth = world
    base = MediatorConfig(t_max=6)
    fit = fit_thresholds(panel, argmax_labels(probs), truth, base, probabilities=probs)
    j_base = costed_objective(score_probabilities(panel, probs, base), truth, panel.loss)
    j_fit = costed_objective(score_probabilities(panel, probs, fit.config), truth, panel.loss)
    assert j_fit <= j_base
    assert j_fit < j_base  # this world has room to improve: the search is not a no-op
    assert fit.report["objective_base"] == pytest.approx(j_base)
    assert fit.report["objective"] == pytest.approx(j_fit)
    assert fit.report["reports"] == "probabilities"
    assert fit.config.eps_safe < fit.config.eps_low
    changed = {k for k in MediatorConfig.__dataclass_fields__ if getattr(fit.config, k) != getattr(base, k)}
    assert changed <= {"eps_safe", "eps_low", "m_safe", "delta"}
    # reports are optional with probabilities, and give the same fit
    assert fit_thresholds(panel, None, truth, base, probabilities=probs).config == fit.config


def test_cached_states_equal_score_probabilities_for_every_candidate(world: tuple) -> None:
    panel, probs, truth = world
    base = MediatorConfig(t_max=5)  # shorter than the 6 recorded rounds: the cut matters
    states = soft_states(panel, probs, base)
    assert states.energy.shape == (300, 5)
    fit = fit_thresholds(panel, None, truth, base, probabilities=probs, grid=ThresholdGrid(sweeps=2))
    cands = [base, fit.config]
    for es in fit.report["eps_candidates"][:-1]:
        for ms in fit.report["m_candidates"]:
            el = max(fit.report["eps_candidates"][-1], es + 0.1)
            cands.append(base.with_changes(eps_safe=es, eps_low=el, m_safe=ms, delta=0.2))
    for cfg in cands:
        _assert_same(score_states(states, cfg), score_probabilities(panel, probs, cfg))


def test_label_path_is_unchanged(world: tuple) -> None:
    panel, probs, truth = world
    labels = argmax_labels(probs)
    base = MediatorConfig(t_max=6)
    fit = fit_thresholds(panel, labels, truth, base)
    assert fit.report["reports"] == "labels"
    j_fit = costed_objective(score_reports(panel, labels, fit.config), truth, panel.loss)
    assert fit.report["objective"] == pytest.approx(j_fit)
    # one-hot probabilities are the labels: same states, so the same fit
    onehot = np.eye(3)[labels]
    soft = fit_thresholds(panel, labels, truth, base, probabilities=onehot)
    assert soft.config == fit.config
    assert soft.report["objective"] == pytest.approx(fit.report["objective"])


def test_fit_shape_checks(world: tuple) -> None:
    panel, probs, truth = world
    base = MediatorConfig(t_max=6)
    with pytest.raises(InputError, match="reports"):
        fit_thresholds(panel, argmax_labels(probs)[:, :3], truth, base, probabilities=probs)
    with pytest.raises(InputError, match="truth"):
        fit_thresholds(panel, None, truth[:10], base, probabilities=probs)
    with pytest.raises(InputError, match="probabilities"):
        fit_thresholds(panel, None, truth, base, probabilities=probs[..., :2])
    with pytest.raises(InputError, match="probabilities"):
        fit_thresholds(panel, None, truth, base, probabilities=-probs)
    with pytest.raises(InputError, match="reports"):
        fit_thresholds(panel, None, truth, base)


def test_soft_posteriors_of_one_hot_vectors_are_the_label_posteriors() -> None:
    panel = soft_panel(k=4, n_agents=3, seed=2)
    labels = np.random.default_rng(0).integers(0, 4, (200, 3))
    np.testing.assert_array_equal(soft_report_posteriors(panel.confusion, panel.prior, np.eye(4)[labels]),
                                  report_posteriors(panel.confusion, panel.prior, labels))


def test_fixed_pool_probabilities_on_one_hot_vectors_equals_fixed_pool() -> None:
    panel = soft_panel(k=4, n_agents=3, seed=2)
    first = np.random.default_rng(1).integers(0, 4, (200, 3))
    acc = np.array([0.5, 0.8, 0.6])
    cfg = MediatorConfig(omega_min=0.0)
    hard, soft = fixed_pool(panel, first, acc, cfg), fixed_pool_probabilities(panel, np.eye(4)[first], acc, cfg)
    for name in ("reports", "outcome_decision", "outcome_action", "outcome_round", "certified", "budget"):
        np.testing.assert_array_equal(getattr(soft, name), getattr(hard, name), err_msg=name)
    assert hard.probabilities is None and soft.probabilities is not None
    assert soft.probabilities.shape == (200, 1, 3, 4)


def test_fixed_pool_probabilities_uses_soft_posteriors(world: tuple) -> None:
    panel, probs, _truth = world
    first = probs[:, 0] * 3.0  # unnormalised on purpose: the vectors are normalised first
    acc = np.array([0.4, 0.9, 0.7])
    cfg = MediatorConfig()
    run = fixed_pool_probabilities(panel, first, acc, cfg)
    np.testing.assert_array_equal(run.reports[:, 0], probs[:, 0].argmax(-1))
    np.testing.assert_allclose(run.probabilities[:, 0], probs[:, 0])
    labelled = fixed_pool(panel, run.reports[:, 0], acc, cfg)
    assert (run.outcome_decision != labelled.outcome_decision).any()  # the soft mass moves some decisions
    with pytest.raises(InputError, match="first_probs"):
        fixed_pool_probabilities(panel, probs[:, 0, :2], acc, cfg)
    with pytest.raises(InputError, match="first_probs"):
        fixed_pool_probabilities(panel, np.where(probs[:, 0] > 0.5, np.nan, probs[:, 0]), acc, cfg)


def test_pooled_decision_probabilities_is_the_mediator_decision(world: tuple) -> None:
    panel, probs, _truth = world
    cfg = MediatorConfig()
    last = probs[:, -1]
    got = pooled_decision_probabilities(panel, last, cfg)
    assert got.dtype == np.int64 and got.shape == (300,)
    np.testing.assert_array_equal(got, assess_probabilities(panel, last, cfg).decision)
    labels = argmax_labels(last)
    np.testing.assert_array_equal(pooled_decision_probabilities(panel, np.eye(3)[labels], cfg),
                                  assess_reports(panel, labels, cfg).decision)
    # the single best works on the argmax labels as they are
    np.testing.assert_array_equal(single_best(argmax_labels(probs[:, 0]), np.array([0.1, 0.9, 0.3])).outcome_decision,
                                  probs[:, 0, 1].argmax(-1))
    with pytest.raises(InputError, match="probabilities"):
        pooled_decision_probabilities(panel, probs, cfg)
