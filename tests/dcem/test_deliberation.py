"""The live deliberation loop and its equivalence with replay."""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pytest

from dcem.calibration.fitting import estimate_confusion, estimate_prior
from dcem.core.config import MediatorConfig
from dcem.core.deliberation import Agents, SteerRequest, deliberate
from dcem.core.panel import Panel
from dcem.core.policy import Action
from dcem.core.replay import score_reports
from dcem.core.steering import SteeringConfig
from common.errors import InputError
from dcem.synthetic.generator import LABELS, generate, synthetic_loss
from dcem.synthetic.rule_agents import RuleAgents, scenario


class Scripted:
    """Agents that replay a fixed report array and log every steer they receive."""

    def __init__(self, reports: np.ndarray) -> None:
        self.reports = reports
        self.requests: list[SteerRequest] = []

    @property
    def n_agents(self) -> int:
        return int(self.reports.shape[2])

    @property
    def n_cases(self) -> int:
        return int(self.reports.shape[0])

    def report(self, t: int) -> np.ndarray:
        return self.reports[:, t - 1]

    def steer(self, request: SteerRequest) -> Sequence[tuple[str, ...]]:
        self.requests.append(request)
        return [(f"cue-{c}",) for c in request.cases]


def _panel(scen_name: str) -> Panel:
    data = generate(3000, np.random.default_rng(7))
    reports = RuleAgents(scenario(scen_name), data.features, np.random.default_rng(8)).report(1)
    return Panel(LABELS, estimate_confusion(data.labels, reports, 3),
                 estimate_prior(data.labels, 3, "empirical"), synthetic_loss())


CONFIGS = [
    MediatorConfig(prior="empirical"),
    MediatorConfig(prior="empirical", eps_safe=2.2, eps_low=2.6, m_safe=0.1, delta=0.1),
    MediatorConfig(prior="empirical", eps_safe=2.0, eps_low=2.3, escalation=False, t_max=6),
]


@pytest.mark.parametrize("scen_name", ["S1", "S2", "S3a", "S3b"])
@pytest.mark.parametrize("cfg", CONFIGS)
@pytest.mark.parametrize("after", [True, False])
def test_live_loop_equals_replay_of_its_recorded_reports(scen_name: str, cfg: MediatorConfig,
                                                         after: bool) -> None:
    panel = _panel(scen_name)
    cases = generate(150, np.random.default_rng(9))
    agents = RuleAgents(scenario(scen_name), cases.features, np.random.default_rng(10),
                        compliance_rng=np.random.default_rng(11), xi=0.7)
    live = deliberate(panel, agents, cfg, steer_after_terminal=after)
    assert live.reports.shape == (150, cfg.t_max, 2)
    sc = score_reports(panel, live.reports, cfg)
    np.testing.assert_array_equal(sc.outcome_action, live.outcome_action)
    np.testing.assert_array_equal(sc.outcome_round, live.outcome_round)
    np.testing.assert_array_equal(sc.outcome_decision, live.outcome_decision)
    np.testing.assert_array_equal(sc.outcome_certified, live.certified)
    np.testing.assert_array_equal(sc.outcome_budget, live.budget)
    # every round up to and including the first terminal one matches action by action
    upto = np.arange(cfg.t_max)[None, :] < live.outcome_round[:, None]
    np.testing.assert_array_equal(np.where(upto, sc.action, -1), np.where(upto, live.trajectory.action, -1))
    np.testing.assert_array_equal(np.where(upto, sc.steer_alternative, -9),
                                  np.where(upto, live.trajectory.steer_alternative, -9))
    assert not (live.outcome_action == Action.PENDING).any()


def test_steers_reach_agents_and_features_are_recorded() -> None:
    panel = _panel("S2")
    rng = np.random.default_rng(0)
    scripted = Scripted(rng.integers(0, 3, (40, 12, 2)))
    cfg = MediatorConfig(prior="empirical", eps_safe=0.0, eps_low=50.0)  # never stops early
    live = deliberate(panel, scripted, cfg)
    steered = {(int(c), r.t) for r in scripted.requests for c in r.cases}
    marked = {(int(i), int(t) + 1) for i, t in zip(*np.nonzero(live.trajectory.action == Action.DIFFERENTIAL_STEER))}
    assert steered == marked == set(live.steer_features)
    assert all(live.steer_features[(i, t)] == (f"cue-{i}",) for i, t in steered)
    for r in scripted.requests:
        np.testing.assert_array_equal(r.agent, live.trajectory.steer_agent[r.cases, r.t - 1])
        assert r.agent_risk.shape == (r.cases.size, 2)


def test_no_steers_after_terminal_when_asked() -> None:
    panel = _panel("S3b")
    rng = np.random.default_rng(1)
    reports = rng.integers(0, 3, (60, 12, 2))
    cfg = MediatorConfig(prior="empirical", eps_safe=2.3, eps_low=2.6, delta=0.3)
    on, off = Scripted(reports), Scripted(reports)
    live_on = deliberate(panel, on, cfg, steer_after_terminal=True)
    live_off = deliberate(panel, off, cfg, steer_after_terminal=False)
    np.testing.assert_array_equal(live_on.trajectory.action, live_off.trajectory.action)  # scripted reports: same path
    for r in off.requests:
        assert (live_off.outcome_round[r.cases] >= r.t).all()
    assert sum(r.cases.size for r in on.requests) > sum(r.cases.size for r in off.requests)


def test_steering_changes_only_the_steered_agent_of_the_steered_case() -> None:
    panel = _panel("S2")
    cases = generate(30, np.random.default_rng(3))
    agents = RuleAgents(scenario("S2"), cases.features, np.random.default_rng(4),
                        compliance_rng=np.random.default_rng(5), xi=1.0, steering=SteeringConfig())
    before = agents.weights.copy()
    live = deliberate(panel, agents, MediatorConfig(prior="empirical", t_max=3, eps_safe=0.0))
    case, rnd = np.nonzero(live.trajectory.action == Action.DIFFERENTIAL_STEER)
    assert case.size
    changed = np.abs(agents.weights - before).sum(axis=2) > 0
    expected = np.zeros_like(changed)
    expected[case, live.trajectory.steer_agent[case, rnd]] = True
    np.testing.assert_array_equal(changed, expected)


def test_protocol_and_shape_checks() -> None:
    panel = _panel("S1")
    scripted: Agents = Scripted(np.zeros((5, 12, 3), dtype=int))
    with pytest.raises(InputError):
        deliberate(panel, scripted, MediatorConfig())


class _SoftAgents:
    """Probability-reporting agents that sharpen towards the truth each round."""

    soft_reports = True

    def __init__(self, truth: np.ndarray, k: int, rng: np.random.Generator) -> None:
        self.truth, self.k, self.rng, self.steers = truth, k, rng, 0

    @property
    def n_agents(self) -> int:
        return 2

    @property
    def n_cases(self) -> int:
        return len(self.truth)

    def report(self, t: int) -> np.ndarray:
        noise = self.rng.dirichlet(np.ones(self.k), size=(len(self.truth), 2))
        peak = np.zeros((len(self.truth), 2, self.k))
        peak[np.arange(len(self.truth)), :, self.truth] = 1.0
        w = min(0.15 * t, 0.9)
        return (1 - w) * noise + w * peak

    def steer(self, request) -> list[tuple[str, ...]]:  # type: ignore[no-untyped-def]
        self.steers += len(request.cases)
        return [("cue",)] * len(request.cases)


def test_probability_reports_are_mediated_and_replay_identically() -> None:
    from dcem.core.config import MediatorConfig
    from dcem.core.deliberation import deliberate
    from dcem.core.panel import Panel, three_level_loss
    from dcem.core.replay import score_probabilities

    k = 4
    rng = np.random.default_rng(3)
    conf = np.full((2, k, k), 0.1) + 0.6 * np.eye(k)
    panel = Panel(tuple("abcd"), conf / conf.sum(-1, keepdims=True), np.full(k, 1 / k),
                  three_level_loss(k, [0], 4.0))
    truth = rng.integers(0, k, 40)
    cfg = MediatorConfig(t_max=6, eps_safe=1.0, eps_low=2.5, s_asym=0.8)
    agents = _SoftAgents(truth, k, rng)
    run = deliberate(panel, agents, cfg)
    assert run.probabilities is not None and run.probabilities.shape == (40, 6, 2, k)
    np.testing.assert_allclose(run.probabilities.sum(-1), 1.0)
    np.testing.assert_array_equal(run.reports, run.probabilities.argmax(-1))
    replay = score_probabilities(panel, run.probabilities, cfg)
    np.testing.assert_array_equal(replay.outcome_action, run.outcome_action)
    np.testing.assert_array_equal(replay.outcome_round, run.outcome_round)
    np.testing.assert_array_equal(replay.outcome_decision, run.outcome_decision)
    assert agents.steers == int((run.trajectory.action == 1).sum())
    with pytest.raises(InputError, match="expected probabilities of shape"):
        bad = _SoftAgents(truth, k + 1, rng)
        deliberate(panel, bad, cfg)
