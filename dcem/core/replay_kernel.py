"""The mediator policy applied to whole trajectories at once (the replay kernel).

:func:`dcem.core.policy.policy_step` decides one round given the challenges issued so far; a
live run has to call it round by round.  When every round's state is already known (a
stored run), the only sequential dependency left is the steer history, and it has a
closed form: a challenge issued in round j is exactly a challenge that was *eligible*
in round j (not certified, gate open), because an eligible challenge is either new
(and is then issued) or a repeat (and was issued before).  So

    steer[t] = eligible[t] and challenge[t] not in {challenge[j] : j < t, eligible[j]},

which needs no loop over cases; rounds ``t >= t_max`` record nothing (their steers
become budget decisions), exactly as in the round-by-round policy.  The functions here
return the same arrays, bit for bit, as a loop over :func:`~dcem.core.policy.policy_step`.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from dcem.core.config import MediatorConfig
from dcem.core.policy import Action, PolicyView, steer_target

__all__ = ["Targets", "targets", "certify", "challenge_codes", "fresh_challenges", "policy_over_rounds"]


class Targets(NamedTuple):
    """The would-be challenge of every state; all fields share the batch shape ``...``.

    agent : a†; value : its gate value; current : ŷ_a†; alternative : z_a†.
    """

    agent: np.ndarray
    value: np.ndarray
    current: np.ndarray
    alternative: np.ndarray


def targets(state: PolicyView, cfg: MediatorConfig) -> Targets:
    """Target agent, gate value, current report and dangerous miss for any batch shape."""
    agent, value = steer_target(state, cfg)
    pick = agent[..., None]
    current = np.take_along_axis(state.reports, pick, axis=-1)[..., 0]
    alt = np.take_along_axis(state.dangerous_miss, pick, axis=-1)[..., 0]
    return Targets(agent, value, current, alt)


def certify(energy: np.ndarray, margin: np.ndarray, cfg: MediatorConfig) -> np.ndarray:
    """Rule 1: energy <= eps_safe and margin >= m_safe (a certified STOP_AND_DECIDE)."""
    return (energy <= cfg.eps_safe) & (margin >= cfg.m_safe)


def challenge_codes(tg: Targets, certified: np.ndarray, n_labels: int,
                    cfg: MediatorConfig) -> np.ndarray:
    """Code ``(a† K + ŷ_a†) K + z_a†`` of each state's challenge when it is eligible
    (gate open, not certified), else -1.  Same shape as ``certified``."""
    code = (tg.agent * n_labels + tg.current) * n_labels + tg.alternative
    code[(tg.value < cfg.s_asym) | certified] = -1
    return code


_SCAN_LIMIT = 32  # longest history scanned pairwise; longer ones are sorted instead


def fresh_challenges(challenge: np.ndarray, t_max: int) -> np.ndarray:
    """The steer history: ``challenge[t] >= 0`` and no round ``j < min(t, t_max - 1)``
    carries the same code (rounds >= t_max record nothing, because their steers turn
    into budget decisions).  challenge : int (N, T); returns bool (N, T).

    Short histories are compared pairwise over contiguous (N,) rows; long ones (a large
    t_max) find each code's first round with one stable sort per case, so the cost
    grows as T log T rather than T * t_max.
    """
    n, rounds = challenge.shape
    if min(rounds, t_max) - 1 <= _SCAN_LIMIT:
        ch = np.ascontiguousarray(challenge.T)
        steer_rows = ch >= 0
        for i in range(1, rounds):
            row = steer_rows[i]
            for j in range(min(i, t_max - 1)):
                row &= ch[j] != ch[i]
        return np.ascontiguousarray(steer_rows.T)
    order = np.argsort(challenge, axis=1, kind="stable")
    ordered = np.take_along_axis(challenge, order, axis=1)
    starts = np.ones((n, rounds), dtype=bool)
    starts[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    group = np.maximum.accumulate(np.where(starts, np.arange(rounds), 0), axis=1)
    first = np.empty_like(order)
    np.put_along_axis(first, order, np.take_along_axis(order, group, axis=1), axis=1)
    seen = first < np.minimum(np.arange(rounds), t_max - 1)  # an earlier recorded round
    return (challenge >= 0) & ~seen


def policy_over_rounds(energy: np.ndarray, descent: np.ndarray, certified: np.ndarray,
                       challenge: np.ndarray, cfg: MediatorConfig
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rules 2-4 and the budget rule for every round of N cases.

    energy, descent : (N, T) with descent NaN where undefined (t <= W); certified : bool
    (N, T), rule 1; challenge : int (N, T) from :func:`challenge_codes`.  Round i
    (0-based) is round t = i + 1.  Returns ``(action, steer, budget)``: the int8 action,
    the final steer mask and the budget flag, each (N, T).
    """
    n, rounds = energy.shape
    steer = fresh_challenges(challenge, cfg.t_max)
    action = steer.view(np.int8) + certified.view(np.int8) * np.int8(Action.STOP_AND_DECIDE)
    if cfg.escalation:
        escalate = descent < cfg.delta  # NaN (undefined descent) compares False
        escalate &= energy > cfg.eps_low
        escalate &= action == Action.CONTINUE
        action[escalate] = Action.STOP_AND_ESCALATE
    budget = np.zeros((n, rounds), dtype=bool)
    if rounds >= cfg.t_max:  # rounds t >= t_max end the episode
        last = slice(cfg.t_max - 1, None)
        tail = action[:, last]
        open_ = tail <= Action.DIFFERENTIAL_STEER
        decide = energy[:, last] <= cfg.eps_low if cfg.escalation else np.ones_like(open_)
        tail[open_ & decide] = Action.STOP_AND_DECIDE
        tail[open_ & ~decide] = Action.STOP_AND_ESCALATE
        budget[:, last] = open_
        steer[:, last] &= ~open_
    return action, steer, budget
