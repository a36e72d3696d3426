"""Baselines under matched agents, cases and seeds."""
from __future__ import annotations

import numpy as np
import pytest

from dcem.calibration.fitting import estimate_confusion, estimate_prior
from dcem.core.baselines import best_agent, fixed_pool, single_best
from dcem.core.config import MediatorConfig
from dcem.core.decision import bayes_decision
from dcem.core.panel import Panel
from dcem.core.policy import Action
from dcem.core.pooling import log_pool
from dcem.core.posterior import report_posteriors
from dcem.core.state import assess_reports
from common.errors import InputError
from dcem.synthetic.free_discussion import free_discussion
from dcem.synthetic.generator import LABELS, generate, synthetic_loss
from dcem.synthetic.rule_agents import RuleAgents, scenario


@pytest.fixture(scope="module")
def panel() -> Panel:
    data = generate(3000, np.random.default_rng(1))
    reports = RuleAgents(scenario("S2"), data.features, np.random.default_rng(2)).report(1)
    return Panel(LABELS, estimate_confusion(data.labels, reports, 3),
                 estimate_prior(data.labels, 3, "empirical"), synthetic_loss())


def test_single_best_uses_the_calibration_best_agent() -> None:
    first = np.array([[0, 1], [2, 2], [1, 0]])
    np.testing.assert_array_equal(single_best(first, np.array([0.4, 0.7])).outcome_decision, [1, 2, 0])
    np.testing.assert_array_equal(single_best(first, np.array([0.9, 0.7])).outcome_decision, [0, 2, 1])
    assert best_agent(np.array([0.5, 0.5])) == 0
    run = single_best(first, np.array([0.4, 0.7]))
    assert run.reports.shape == (3, 1, 2) and (run.outcome_round == 1).all()
    assert (run.outcome_action == Action.STOP_AND_DECIDE).all() and not run.certified.any()


def test_fixed_pool_weights_follow_calibration_accuracy(panel: Panel) -> None:
    cfg = MediatorConfig(prior="empirical", omega_min=0.0)
    first = np.array([[0, 1], [1, 2], [2, 0], [1, 1]])
    acc = np.array([0.8, 0.2])
    run = fixed_pool(panel, first, acc, cfg)
    post = report_posteriors(panel.confusion, panel.prior, first)
    q = log_pool(post, np.broadcast_to(acc / acc.sum(), first.shape))
    np.testing.assert_array_equal(run.outcome_decision, bayes_decision(panel.loss, q).best)
    # weights are fixed: a different accuracy vector can change decisions, reports cannot move
    flipped = fixed_pool(panel, first, acc[::-1], cfg)
    assert flipped.reports.shape == (4, 1, 2)


def test_free_discussion_matches_round_one_and_herds(panel: Panel) -> None:
    cases = generate(400, np.random.default_rng(3))
    scen = scenario("S2")
    cfg = MediatorConfig(prior="empirical")
    first = RuleAgents(scen, cases.features, np.random.default_rng(4)).report(1)
    free = free_discussion(panel, RuleAgents(scen, cases.features, np.random.default_rng(4), kappa=1.0), cfg,
                           rounds=22)
    assert free.reports.shape == (400, 22, 2) and (free.outcome_round == 22).all()
    np.testing.assert_array_equal(free.reports[:, 0], first)
    np.testing.assert_array_equal(free.outcome_decision, assess_reports(panel, free.reports[:, -1], cfg).decision)
    agree = (free.reports[:, :, 0] == free.reports[:, :, 1]).mean(axis=0)
    assert agree[-5:].mean() > agree[0] + 0.1  # the social bonus pulls the agents together
    quiet = free_discussion(panel, RuleAgents(scen, cases.features, np.random.default_rng(4), kappa=0.0), cfg,
                            rounds=22)
    agree0 = (quiet.reports[:, :, 0] == quiet.reports[:, :, 1]).mean(axis=0)
    assert agree[-5:].mean() > agree0[-5:].mean()
    with pytest.raises(InputError):
        free_discussion(panel, RuleAgents(scen, cases.features, np.random.default_rng(4)), cfg, rounds=0)
