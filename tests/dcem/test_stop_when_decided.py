"""Deliberation that stops a case at its first terminal action (``stop_when_decided``)."""
from __future__ import annotations

import numpy as np
import pytest

from dcem.core.config import MediatorConfig
from dcem.core.deliberation import deliberate
from dcem.core.policy import Action
from dcem.core.replay import score_probabilities, score_reports
from common.errors import InputError
from tests.dcem.test_deliberation import Scripted, _panel


class Retiring(Scripted):
    """Scripted agents that record which cases they were told to stop, and which they were
    asked about each round (a retired case gets a deliberately wrong report)."""

    def __init__(self, reports: np.ndarray) -> None:
        super().__init__(reports)
        self.retired = np.zeros(reports.shape[0], dtype=bool)
        self.retired_at: dict[int, int] = {}
        self.round = 0

    def report(self, t: int) -> np.ndarray:
        self.round = t
        out = np.array(self.reports[:, t - 1])
        out[self.retired] = (out[self.retired] + 1) % 3  # must be replaced by the last played reports
        return out

    def retire(self, cases: np.ndarray) -> None:
        assert not self.retired[cases].any(), "a case is retired once"
        self.retired[cases] = True
        self.retired_at.update({int(c): self.round for c in cases})


CFG = MediatorConfig(prior="empirical", eps_safe=2.3, eps_low=2.6, delta=0.3, t_max=8)


@pytest.mark.parametrize("scen", ["S1", "S3b"])
def test_a_decided_case_is_retired_at_its_outcome_and_repeats_its_last_reports(scen: str) -> None:
    panel = _panel(scen)
    reports = np.random.default_rng(4).integers(0, 3, (80, CFG.t_max, 2))
    fixed = deliberate(panel, Scripted(reports), CFG)
    agents = Retiring(reports)
    stopped = deliberate(panel, agents, CFG, stop_when_decided=True)
    # the outcome depends only on rounds up to it, so it is the fixed horizon's
    np.testing.assert_array_equal(stopped.outcome_action, fixed.outcome_action)
    np.testing.assert_array_equal(stopped.outcome_round, fixed.outcome_round)
    np.testing.assert_array_equal(stopped.outcome_decision, fixed.outcome_decision)
    decided = np.flatnonzero(stopped.outcome_action != Action.PENDING)
    assert decided.size and (stopped.outcome_round[decided] < CFG.t_max).any()
    assert agents.retired_at == {int(c): int(stopped.outcome_round[c]) for c in decided}
    for case in decided:
        end = int(stopped.outcome_round[case])
        np.testing.assert_array_equal(stopped.reports[case, end:], np.repeat(reports[case, end - 1:end], CFG.t_max - end, 0))
        np.testing.assert_array_equal(stopped.reports[case, :end], reports[case, :end])
    # no steer reaches a decided case after its outcome
    for r in agents.requests:
        assert (stopped.outcome_round[r.cases] >= r.t).all()
    # the recorded actions are what replay computes from the recorded reports
    sc = score_reports(panel, stopped.reports, CFG)
    np.testing.assert_array_equal(sc.action, stopped.trajectory.action)
    np.testing.assert_array_equal(sc.outcome_round, stopped.outcome_round)


def test_probability_reports_of_a_decided_case_repeat_too() -> None:
    panel = _panel("S2")
    rng = np.random.default_rng(5)
    probs = rng.dirichlet(np.ones(3) * 0.4, size=(50, CFG.t_max, 2))

    class Soft(Retiring):
        soft_reports = True

        def report(self, t: int) -> np.ndarray:
            self.round = t
            out = np.array(self.reports[:, t - 1])
            out[self.retired] = 1.0 / 3
            return out

    stopped = deliberate(panel, Soft(probs), CFG, stop_when_decided=True)
    assert stopped.probabilities is not None
    end = stopped.outcome_round
    for case in np.flatnonzero(end < CFG.t_max):
        e = int(end[case])
        np.testing.assert_allclose(stopped.probabilities[case, e:], np.repeat(probs[case, e - 1:e], CFG.t_max - e, 0))
    sc = score_probabilities(panel, stopped.probabilities, CFG)
    np.testing.assert_array_equal(sc.action, stopped.trajectory.action)


def test_agents_that_cannot_retire_are_refused_with_a_clear_error() -> None:
    reports = np.zeros((4, CFG.t_max, 2), dtype=np.int64)
    with pytest.raises(InputError, match="cannot stop a decided case early"):
        deliberate(_panel("S1"), Scripted(reports), CFG, stop_when_decided=True)
