"""Exact boundaries of the policy contract, checked on both implementations: the live
round-by-round :func:`dcem.core.policy.policy_step` and the replay kernel (score_states).

States are fabricated (energy, margin, agent risks ... set by hand) so that every
comparison can be put exactly on its threshold; dyadic numbers keep arithmetic exact.
"""
from __future__ import annotations

import math

import numpy as np
import pytest

from dcem.core.config import MediatorConfig
from dcem.core.panel import Panel
from dcem.core.policy import NO_TARGET, Action
from dcem.core.replay import Trajectory, score_states
from dcem.core.state import RoundState, assess_reports

from .stepwise import round_by_round

K = 3
C, S, D, E = (Action.CONTINUE, Action.DIFFERENTIAL_STEER, Action.STOP_AND_DECIDE,
              Action.STOP_AND_ESCALATE)
BASE = dict(eps_safe=1.0, eps_low=2.0, m_safe=0.5, delta=0.25, window=1, s_asym=1.0, t_max=8)


def _state(energy: list[float], *, margin: float | list[float] = 0.0,
           risk: tuple[float, float] | list[tuple[float, float]] = (0.0, 0.0),
           rho: tuple[float, float] = (0.5, 0.5), reports: tuple[int, int] = (0, 0),
           miss: tuple[int, int] | list[tuple[int, int]] = (1, 1)) -> RoundState:
    """One case over len(energy) rounds, two agents, K = 3 labels."""
    rounds = len(energy)

    def per_round(value: object, width: int) -> np.ndarray:
        arr = np.asarray(value, dtype=float)
        if arr.ndim == (0 if width == 0 else 1):
            arr = np.broadcast_to(arr, (rounds,) + arr.shape)
        return arr[None].copy()

    panel = Panel(("a", "b", "c"), np.full((2, K, K), 1 / K), np.full(K, 1 / K),
                  np.ones((K, K)) - np.eye(K))
    base = assess_reports(panel, np.zeros((1, rounds, 2), dtype=np.int64), MediatorConfig())
    return base._replace(
        energy=per_round(energy, 0), margin=per_round(margin, 0),
        agent_risk=per_round(risk, 2), reliability=per_round(rho, 2),
        reports=per_round(reports, 2).astype(np.int64),
        dangerous_miss=per_round(miss, 2).astype(np.int64))


def _run(state: RoundState, **changes: object) -> Trajectory:
    cfg = MediatorConfig(**{**BASE, **changes})
    sc = score_states(state, cfg)
    loop = round_by_round(state, cfg)
    for name in ("action", "steer_agent", "steer_current", "steer_alternative", "certified",
                 "budget"):
        np.testing.assert_array_equal(getattr(sc, name), loop[name], err_msg=name)
    return sc


def _actions(sc: Trajectory) -> list[int]:
    return sc.action[0].tolist()


def test_certify_is_inclusive_on_both_thresholds() -> None:
    assert _actions(_run(_state([1.0], margin=0.5))) == [D]
    assert _run(_state([1.0], margin=0.5)).certified[0, 0]
    assert _actions(_run(_state([math.nextafter(1.0, 2)], margin=0.5))) == [C]
    assert _actions(_run(_state([1.0], margin=math.nextafter(0.5, 0)))) == [C]


def test_certify_beats_steer() -> None:
    sc = _run(_state([0.5], margin=1.0, risk=(3.0, 3.0)))
    assert _actions(sc) == [D] and sc.steer_agent[0, 0] == NO_TARGET


def test_risk_gate_is_inclusive_and_ties_go_to_lowest_agent() -> None:
    sc = _run(_state([1.5], risk=(1.0, 1.0), reports=(2, 0), miss=(1, 2)))
    assert _actions(sc) == [S]
    assert (sc.steer_agent[0, 0], sc.steer_current[0, 0], sc.steer_alternative[0, 0]) == (0, 2, 1)
    sc = _run(_state([1.5], risk=(0.5, 1.0), reports=(2, 0), miss=(1, 2)))
    assert (sc.steer_agent[0, 0], sc.steer_current[0, 0], sc.steer_alternative[0, 0]) == (1, 0, 2)
    assert _actions(_run(_state([1.5], risk=(math.nextafter(1.0, 0), 0.5)))) == [C]


def test_reliability_gap_gate_targets_weaker_agent() -> None:
    gate = dict(steer_gate="reliability_gap", s_asym=0.5)
    sc = _run(_state([1.5], rho=(0.75, 0.25), risk=(0.0, 0.0), reports=(1, 2), miss=(0, 1)), **gate)
    assert _actions(sc) == [S] and sc.steer_agent[0, 0] == 1 and sc.steer_current[0, 0] == 2
    sc = _run(_state([1.5], rho=(0.25, 0.75), reports=(1, 2), miss=(0, 1)), **gate)
    assert sc.steer_agent[0, 0] == 0 and sc.steer_alternative[0, 0] == 0
    assert _actions(_run(_state([1.5], rho=(0.5, 0.75)), **gate)) == [C]  # gap 0.25
    sc = _run(_state([1.5], rho=(0.5, 0.5)), steer_gate="reliability_gap", s_asym=0.0)
    assert _actions(sc) == [S] and sc.steer_agent[0, 0] == 0  # tie: lowest index


def test_same_challenge_is_issued_once_per_episode() -> None:
    misses = [(1, 1), (1, 1), (1, 2), (1, 1), (1, 2)]
    sc = _run(_state([1.5] * 5, risk=(0.0, 2.0), miss=misses), delta=-1.0)
    assert _actions(sc) == [S, C, S, C, C]
    assert sc.steer_alternative[0].tolist() == [1, NO_TARGET, 2, NO_TARGET, NO_TARGET]


def test_certified_rounds_do_not_mark_challenges() -> None:
    # round 1 certifies (its challenge is not issued), round 2 steers it
    sc = _run(_state([0.5, 1.5], margin=[1.0, 0.0], risk=(0.0, 2.0)), delta=-1.0)
    assert _actions(sc) == [D, S]


def test_escalation_boundaries() -> None:
    # W = 1: descent of round 2 is e1 - e2
    assert _actions(_run(_state([3.0, 2.75])))[1] == C  # descent 0.25 == delta: not below
    assert _actions(_run(_state([3.0, 2.875])))[1] == E  # descent 0.125 < delta, e > eps_low
    assert _actions(_run(_state([2.0, 2.0])))[1] == C  # energy == eps_low: not above
    assert _actions(_run(_state([2.0, math.nextafter(2.0, 3)])))[1] == E
    assert _actions(_run(_state([5.0, 5.0, 5.0]), window=2)) == [C, C, E]  # needs t > W
    assert _actions(_run(_state([5.0, 5.0, 5.0]), window=2, escalation=False)) == [C, C, C]


def test_steer_beats_escalation_then_repeat_escalates() -> None:
    sc = _run(_state([5.0, 5.0, 5.0], risk=(0.0, 2.0)))
    assert _actions(sc) == [S, E, E]
    assert not sc.budget.any()


@pytest.mark.parametrize("energy, escalation, expected", [
    (2.0, True, D), (math.nextafter(2.0, 3), True, E), (9.0, False, D), (0.5, True, D)])
def test_budget_rule(energy: float, escalation: bool, expected: int) -> None:
    # energy falls fast enough (descent >= delta), so only the budget ends round t_max = 3
    sc = _run(_state([5.0, 4.0, energy], margin=0.0), t_max=3, escalation=escalation)
    assert _actions(sc) == [C, C, expected]
    assert sc.budget[0].tolist() == [False, False, True]
    assert not sc.certified[0].any()


def test_budget_turns_steer_into_terminal_without_target() -> None:
    sc = _run(_state([0.0, 1.5], risk=(0.0, 2.0)), t_max=2)
    assert _actions(sc) == [S, D] and sc.budget[0].tolist() == [False, True]
    assert sc.steer_agent[0].tolist() == [1, NO_TARGET]


def test_terminal_rules_at_t_max_are_not_budget() -> None:
    sc = _run(_state([3.0, 3.0], margin=0.0), t_max=2)
    assert _actions(sc) == [C, E] and not sc.budget.any()
    sc = _run(_state([3.0, 0.5], margin=[0.0, 1.0]), t_max=2)
    assert _actions(sc) == [C, D] and sc.certified[0, 1] and not sc.budget.any()


def test_rounds_beyond_t_max_and_outcome() -> None:
    # score_states does not truncate: every round >= t_max applies the budget rule, and
    # steers there are not recorded (the same challenge converts again)
    sc = _run(_state([0.0, 0.25, 0.5, 0.75], risk=(0.0, 2.0)), t_max=2, delta=-1.0)
    assert _actions(sc) == [S, D, D, D]
    assert sc.budget[0].tolist() == [False, True, True, True]
    assert (sc.outcome_action[0], sc.outcome_round[0]) == (D, 2)
    sc = _run(_state([0.0, 0.25, 0.5]), delta=-1.0)
    assert (sc.outcome_action[0], sc.outcome_round[0]) == (Action.PENDING, 3)


def test_budget_round_steers_are_not_recorded() -> None:
    # the challenge first becomes eligible at t_max = 2, where the budget ends the round;
    # in round 3 it is therefore still new (steer -> budget), not a repeat (-> rule 3)
    sc = _run(_state([5.0, 5.0, 5.0], risk=[(0.0, 0.0), (0.0, 2.0), (0.0, 2.0)]), t_max=2)
    assert _actions(sc) == [C, E, E]
    assert sc.budget[0].tolist() == [False, True, True]

