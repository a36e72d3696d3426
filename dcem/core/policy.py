"""The four-action mediator policy (section 3.2, eq. 11-12) as a batched step.

One call decides the action of round ``t`` for every case of a batch, given that
round's :class:`~dcem.core.state.RoundState`, the windowed descent and the challenges already
issued in each episode.  Rules, first match wins (see the policy contract):

1. STOP_AND_DECIDE (certified) if energy <= eps_safe and margin >= m_safe;
2. DIFFERENTIAL_STEER if the gate value of the target agent a† reaches s_asym and the
   challenge (a†, ŷ_a†, z_a†) has not been issued earlier in the episode;
3. STOP_AND_ESCALATE if the descent is defined, below delta and energy > eps_low
   (skipped when ``cfg.escalation`` is false);
4. CONTINUE.

At ``t == t_max`` a non-terminal action becomes STOP_AND_DECIDE (not certified) when
energy <= eps_low or escalation is disabled, else STOP_AND_ESCALATE; ``budget`` is set.
"""
from __future__ import annotations

from enum import IntEnum
from typing import NamedTuple, Protocol

import numpy as np

from dcem.core.config import MediatorConfig

__all__ = ["Action", "PolicyView", "StepResult", "policy_step", "steer_target", "NO_TARGET"]

NO_TARGET = -1


class PolicyView(Protocol):
    """The per-round quantities the policy reads (a :class:`~dcem.core.state.RoundState`
    or any object with these (N,)-batched arrays)."""

    reports: np.ndarray  # (N, A) int
    reliability: np.ndarray  # (N, A)
    agent_risk: np.ndarray  # (N, A)
    dangerous_miss: np.ndarray  # (N, A) int
    margin: np.ndarray  # (N,)
    energy: np.ndarray  # (N,)


class Action(IntEnum):
    """Mediator actions; ``PENDING`` is only an outcome (reports ran out)."""

    CONTINUE = 0
    DIFFERENTIAL_STEER = 1
    STOP_AND_DECIDE = 2
    STOP_AND_ESCALATE = 3
    PENDING = 4

    @property
    def terminal(self) -> bool:
        return self in (Action.STOP_AND_DECIDE, Action.STOP_AND_ESCALATE)


class StepResult(NamedTuple):
    """Batched outcome of one policy step; every field has shape (N,).

    steer_agent / steer_current / steer_alternative are ``NO_TARGET`` unless the action
    is DIFFERENTIAL_STEER.
    """

    action: np.ndarray
    steer_agent: np.ndarray
    steer_current: np.ndarray
    steer_alternative: np.ndarray
    certified: np.ndarray
    budget: np.ndarray


def steer_target(state: PolicyView, cfg: MediatorConfig) -> tuple[np.ndarray, np.ndarray]:
    """Target agent a† and its gate value, both of shape (N,).

    ``risk`` gate: a† = argmax_a r_a, gate value r_a†.  ``reliability_gap`` gate:
    a† = argmin_a rho_a (the weaker agent), gate value max rho - min rho.  Ties go to
    the lowest agent index.
    """
    if cfg.steer_gate == "risk":
        agent = np.argmax(state.agent_risk, axis=-1)
        value = np.take_along_axis(state.agent_risk, agent[..., None], axis=-1)[..., 0]
    else:
        agent = np.argmin(state.reliability, axis=-1)
        value = state.reliability.max(axis=-1) - state.reliability.min(axis=-1)
    return agent, value


def policy_step(state: PolicyView, descent: np.ndarray, issued: np.ndarray, t: int,
                cfg: MediatorConfig) -> StepResult:
    """Choose the action of round ``t`` (1-based) for a batch of N episodes.

    Parameters
    ----------
    state : PolicyView with batch shape (N,)
    descent : ndarray of shape (N,)
        Windowed descent ĝ(t); NaN where undefined (t <= W).
    issued : bool ndarray of shape (N, A, K, K)
        ``issued[n, a, c, z]`` is True when challenge (a, c, z) was already sent in
        episode n.  Not modified; the caller records the new challenges.
    t : int
    cfg : MediatorConfig
    """
    energy = state.energy
    n = energy.shape[0]
    rows = np.arange(n)
    action = np.full(n, Action.CONTINUE, dtype=np.int8)

    certified = (energy <= cfg.eps_safe) & (state.margin >= cfg.m_safe)
    action[certified] = Action.STOP_AND_DECIDE

    agent, value = steer_target(state, cfg)
    current = state.reports[rows, agent]
    alt = state.dangerous_miss[rows, agent]
    fresh = ~issued[rows, agent, current, alt]
    steer = ~certified & (value >= cfg.s_asym) & fresh
    action[steer] = Action.DIFFERENTIAL_STEER

    open_ = ~certified & ~steer
    if cfg.escalation:
        with np.errstate(invalid="ignore"):
            stagnant = (descent < cfg.delta) & (energy > cfg.eps_low)
        escalate = open_ & stagnant & ~np.isnan(descent)
        action[escalate] = Action.STOP_AND_ESCALATE

    budget = np.zeros(n, dtype=bool)
    if t >= cfg.t_max:
        budget = (action != Action.STOP_AND_DECIDE) & (action != Action.STOP_AND_ESCALATE)
        decide = budget & ((energy <= cfg.eps_low) | (not cfg.escalation))
        action[decide] = Action.STOP_AND_DECIDE
        action[budget & ~decide] = Action.STOP_AND_ESCALATE

    is_steer = action == Action.DIFFERENTIAL_STEER
    steer_agent = np.where(is_steer, agent, NO_TARGET)
    steer_current = np.where(is_steer, current, NO_TARGET)
    steer_alt = np.where(is_steer, alt, NO_TARGET)
    return StepResult(action, steer_agent, steer_current, steer_alt, certified, budget)
