"""The vectorised replay equals the plain-Python reference of the policy contract."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from dcem.core.config import MediatorConfig
from dcem.core.panel import Panel, three_level_loss
from dcem.core.policy import NO_TARGET, Action
from dcem.core.replay import Trajectory, score_probabilities, score_reports, score_states
from dcem.core.state import assess_reports

from . import reference as ref
from .stepwise import round_by_round
from .strategies import scenarios

SETTINGS = settings(max_examples=150, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def test_action_codes_match_reference() -> None:
    assert (Action.CONTINUE, Action.DIFFERENTIAL_STEER, Action.STOP_AND_DECIDE,
            Action.STOP_AND_ESCALATE, Action.PENDING) == (
        ref.CONTINUE, ref.STEER, ref.DECIDE, ref.ESCALATE, ref.PENDING)
    assert NO_TARGET == ref.NO_TARGET


def _reference(panel: Panel, reports: np.ndarray, cfg: MediatorConfig) -> list[ref.RefCase]:
    conf, prior, loss = panel.confusion.tolist(), panel.prior.tolist(), panel.loss.tolist()
    return [ref.run_case(conf, prior, loss, case.tolist(), cfg) for case in reports]


def _close(x: float, y: float) -> bool:
    return math.isclose(float(x), y, rel_tol=1e-9, abs_tol=1e-12)


def _assert_matches(sc: Trajectory, refs: list[ref.RefCase], detail: bool) -> int:
    """Compare every non-fragile round and every comparable outcome; return how many
    rounds were compared."""
    compared = 0
    horizon = len(refs[0].rounds)
    assert sc.action.shape == (len(refs), horizon)
    for n, case in enumerate(refs):
        for i in range(case.first_fragile):
            r = case.rounds[i]
            where = f"case {n} round {i + 1}"
            assert sc.action[n, i] == r.action, where
            assert (sc.steer_agent[n, i], sc.steer_current[n, i], sc.steer_alternative[n, i]) == (
                r.steer_agent, r.steer_current, r.steer_alternative), where
            assert bool(sc.certified[n, i]) == r.certified, where
            assert bool(sc.budget[n, i]) == r.budget, where
            assert sc.decision[n, i] == r.decision, where
            assert _close(sc.energy[n, i], r.energy), where
            assert _close(sc.margin[n, i], r.margin), where
            if r.descent is None:
                assert np.isnan(sc.descent[n, i]), where
            else:
                assert _close(sc.descent[n, i], r.descent), where
            if detail:
                s = sc.state
                assert s is not None
                assert s.reports[n, i].tolist() == list(r.reports)
                np.testing.assert_allclose(s.posteriors[n, i], r.posteriors, rtol=1e-9)
                np.testing.assert_allclose(s.reliability[n, i], r.reliability, rtol=1e-9)
                np.testing.assert_allclose(s.weights[n, i], r.weights, rtol=1e-9)
                np.testing.assert_allclose(s.pooled[n, i], r.pooled, rtol=1e-9, atol=1e-15)
                np.testing.assert_allclose(s.agent_risk[n, i], r.agent_risk, rtol=1e-9, atol=1e-12)
                assert s.runner_up[n, i] == r.runner_up, where
                assert s.dangerous_miss[n, i].tolist() == r.dangerous_miss, where
                for name in ("disagreement", "risk_term", "margin_term"):
                    assert _close(getattr(s, name)[n, i], getattr(r, name)), (where, name)
            compared += 1
        if case.outcome_round - 1 < case.first_fragile:
            assert sc.outcome_action[n] == case.outcome_action
            assert sc.outcome_round[n] == case.outcome_round
            assert sc.outcome_decision[n] == case.outcome_decision
            assert bool(sc.outcome_certified[n]) == case.rounds[case.outcome_round - 1].certified
    return compared


@SETTINGS
@given(scenarios())
def test_score_reports_matches_reference(scenario: tuple) -> None:
    panel, cfg, reports = scenario
    refs = _reference(panel, reports, cfg)
    for table, detail in ((True, False), (True, True), (False, True), (False, False)):
        sc = score_reports(panel, reports, cfg, table=table, detail=detail)
        if detail:
            assert sc.state is not None
        _assert_matches(sc, refs, detail)


@SETTINGS
@given(scenarios())
def test_table_and_direct_paths_agree(scenario: tuple) -> None:
    panel, cfg, reports = scenario
    a = score_reports(panel, reports, cfg, table=True, detail=True)
    b = score_reports(panel, reports, cfg, table=False, detail=True)
    for name in ("action", "steer_agent", "steer_current", "steer_alternative", "certified",
                 "budget", "decision", "outcome_action", "outcome_round", "outcome_decision"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    for name in ("energy", "margin", "descent"):
        np.testing.assert_allclose(getattr(a, name), getattr(b, name), rtol=1e-12, atol=1e-15)


@SETTINGS
@given(scenarios())
def test_one_hot_probabilities_equal_label_reports(scenario: tuple) -> None:
    panel, cfg, reports = scenario
    one_hot = np.eye(panel.n_labels)[reports]  # (N, T, A, K)
    soft = score_probabilities(panel, one_hot, cfg)
    hard = score_reports(panel, reports, cfg, table=False, detail=True)
    assert soft.state is not None and hard.state is not None
    for name in ("action", "steer_agent", "steer_current", "steer_alternative", "certified",
                 "budget", "decision", "outcome_action", "outcome_round", "outcome_decision"):
        np.testing.assert_array_equal(getattr(soft, name), getattr(hard, name), err_msg=name)
    np.testing.assert_array_equal(soft.state.reports, hard.state.reports)
    np.testing.assert_allclose(soft.state.posteriors, hard.state.posteriors, rtol=1e-12)
    np.testing.assert_allclose(soft.energy, hard.energy, rtol=1e-12)


def _realistic(rng: np.random.Generator, k: int = 8, n_agents: int = 2) -> Panel:
    confusion = np.empty((n_agents, k, k))
    for a in range(n_agents):
        for i in range(k):
            off = rng.dirichlet(np.ones(k - 1)) * (1 - rng.uniform(0.55, 0.85))
            confusion[a, i] = np.insert(off, i, 0.0)
            confusion[a, i, i] = 1 - off.sum()
    confusion = np.maximum(confusion, 1e-3)
    confusion /= confusion.sum(axis=2, keepdims=True)
    return Panel(tuple(f"c{i}" for i in range(k)), confusion, rng.dirichlet(np.ones(k) * 5),
                 three_level_loss(k, [0, 3, 5, 6], 5.0))


@pytest.mark.parametrize("gate", ["risk", "reliability_gap"])
def test_realistic_batch_fully_compared(gate: str) -> None:
    """On continuous data the reference comparison covers (almost) every round, so the
    tolerance escape hatch cannot hide a systematic difference."""
    rng = np.random.default_rng(7)
    panel = _realistic(rng)
    cfg = MediatorConfig(eps_safe=1.2, eps_low=2.5, m_safe=0.3, delta=0.05, window=2, t_max=6,
                         s_asym=0.6 if gate == "risk" else 0.2, steer_gate=gate)
    truth_bias = rng.integers(0, 8, size=(400, 1, 1))
    noise = rng.integers(0, 8, size=(400, 6, 2))
    reports = np.where(rng.random((400, 6, 2)) < 0.6, truth_bias, noise)
    refs = _reference(panel, reports, cfg)
    compared = _assert_matches(score_reports(panel, reports, cfg), refs, detail=False)
    _assert_matches(score_reports(panel, reports, cfg, table=False, detail=True), refs, True)
    assert compared >= 0.99 * reports.shape[0] * reports.shape[1]
    actions = {r.action for case in refs for r in case.rounds}
    assert actions == {ref.CONTINUE, ref.STEER, ref.DECIDE, ref.ESCALATE}


@SETTINGS
@given(scenarios())
def test_round_vectorised_policy_equals_policy_step_loop(scenario: tuple) -> None:
    panel, cfg, reports = scenario
    state = assess_reports(panel, reports, cfg)  # not truncated: rounds may exceed t_max
    sc = score_states(state, cfg)
    loop = round_by_round(state, cfg)
    assert sc.action.dtype == np.int8 and sc.steer_agent.dtype == np.int64
    for name, field in (("action", "action"), ("steer_agent", "steer_agent"),
                        ("steer_current", "steer_current"),
                        ("steer_alternative", "steer_alternative"),
                        ("certified", "certified"), ("budget", "budget")):
        np.testing.assert_array_equal(getattr(sc, field), loop[name], err_msg=name)
