"""Score whole batches of stored trajectories under a mediator configuration.

Given the reports of N cases over T rounds, compute every round's mediator state, the
windowed descent, the action of every round and each episode's outcome (its first
terminal action).  Rounds after the first terminal action are still scored: they are
the "fixed-horizon" signals of Appendix F and let a what-if change of thresholds move
the stopping round without calling any agent again.  Replay assumes the recorded
reports: it does not re-simulate how agents would have answered a different steer.

Speed: with label reports every per-round quantity except the descent and the steer
history depends only on the report tuple, which has ``K ** A`` values.  ``score_reports``
evaluates the mediator (and each tuple's would-be challenge) once per tuple and gathers;
the policy then runs over all rounds and cases at once
(:func:`dcem.core.replay_kernel.policy_over_rounds`), with the same results as deciding round
by round with :func:`dcem.core.policy.policy_step`.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np

from dcem.core.config import MediatorConfig
from dcem.core.energy import windowed_descent
from dcem.core.panel import Panel
from dcem.core.policy import NO_TARGET, Action
from dcem.core.replay_kernel import certify, challenge_codes, policy_over_rounds, targets
from dcem.core.state import RoundState, assess_probabilities, assess_reports, check_reports
from common.errors import InputError

__all__ = ["Trajectory", "score_reports", "score_probabilities", "score_states", "TABLE_LIMIT"]

TABLE_LIMIT = 1 << 16  # largest K**A for which the per-tuple table is used


class Trajectory(NamedTuple):
    """Trajectory trajectories of N cases over T rounds.

    state : RoundState with batch (N, T); None when the table path runs without ``detail``
    energy, margin, descent : (N, T); decision : (N, T) int
    action, steer_agent, steer_current, steer_alternative : (N, T) int
    certified, budget : (N, T) bool
    outcome_action : (N,) int (an :class:`Action`, PENDING if no terminal action)
    outcome_round : (N,) int, 1-based round of the outcome
    outcome_decision : (N,) int, pooled decision d1 at that round
    """

    state: RoundState | None
    energy: np.ndarray
    margin: np.ndarray
    descent: np.ndarray
    decision: np.ndarray
    action: np.ndarray
    steer_agent: np.ndarray
    steer_current: np.ndarray
    steer_alternative: np.ndarray
    certified: np.ndarray
    budget: np.ndarray
    outcome_action: np.ndarray
    outcome_round: np.ndarray
    outcome_decision: np.ndarray

    @property
    def outcome_certified(self) -> np.ndarray:
        return np.take_along_axis(self.certified, self.outcome_round[:, None] - 1, 1)[:, 0] & (
            self.outcome_action == Action.STOP_AND_DECIDE)

    @property
    def outcome_budget(self) -> np.ndarray:
        return np.take_along_axis(self.budget, self.outcome_round[:, None] - 1, 1)[:, 0] & (
            self.outcome_action != Action.PENDING)


def _finish(state: RoundState | None, energy: np.ndarray, margin: np.ndarray,
            decision: np.ndarray, certified: np.ndarray, challenge: np.ndarray,
            steer_fields: Callable[[np.ndarray], tuple[np.ndarray, ...]],
            cfg: MediatorConfig) -> Trajectory:
    """Descent, the policy of every round and each case's first terminal action.

    ``steer_fields(steer)`` returns the (agent, current, alternative) arrays, NO_TARGET
    where the bool (N, T) mask ``steer`` is False.
    """
    n, rounds = energy.shape
    descent = windowed_descent(energy, cfg.window)
    action, steer, budget = policy_over_rounds(energy, descent, certified, challenge, cfg)
    terminal = action >= Action.STOP_AND_DECIDE  # DECIDE or ESCALATE
    first = np.argmax(terminal, axis=1)
    rows = np.arange(n)
    has_end = terminal[rows, first]
    first[~has_end] = rounds - 1
    out_action = action[rows, first]
    out_action[~has_end] = Action.PENDING
    return Trajectory(state, energy, margin, descent, decision, action, *steer_fields(steer),
                  certified, budget, out_action, first + 1, decision[rows, first])


def _scatter(mask: np.ndarray, fields: tuple[np.ndarray, ...]) -> tuple[np.ndarray, ...]:
    """int64 arrays shaped like the bool ``mask``: NO_TARGET except at its True
    positions (in C order), which receive the values of ``fields`` in turn."""
    out = np.full((len(fields),) + mask.shape, NO_TARGET, dtype=np.int64)
    hit = np.flatnonzero(mask)
    flat = out.reshape(len(fields), -1)
    for row, values in zip(flat, fields):
        row[hit] = values
    return tuple(out)


def _horizon(rounds: int, cfg: MediatorConfig) -> int:
    if rounds < 1:
        raise InputError("reports", "at least one round of reports is required")
    return min(rounds, cfg.t_max)


def score_states(state: RoundState, cfg: MediatorConfig) -> Trajectory:
    """Run the policy over precomputed states with batch shape (N, T)."""
    tg = targets(state, cfg)
    certified = certify(state.energy, state.margin, cfg)
    challenge = challenge_codes(tg, certified, state.posteriors.shape[-1], cfg)

    def steer_fields(steer: np.ndarray) -> tuple[np.ndarray, ...]:
        return _scatter(steer, (tg.agent[steer], tg.current[steer], tg.alternative[steer]))

    return _finish(state, state.energy, state.margin, state.decision, certified, challenge,
                   steer_fields, cfg)


def score_probabilities(panel: Panel, probs: np.ndarray, cfg: MediatorConfig) -> Trajectory:
    """Score probability-vector reports of shape (N, T, A, K) (general batched path)."""
    arr = np.asarray(probs, dtype=float)
    if arr.ndim != 4:
        raise InputError("probabilities", f"expected shape (N, T, A, K), got {arr.shape}")
    arr = arr[:, : _horizon(arr.shape[1], cfg)]
    return score_states(assess_probabilities(panel, arr, cfg), cfg)


def score_reports(panel: Panel, reports: np.ndarray, cfg: MediatorConfig, *,
                  detail: bool = False, table: bool = True) -> Trajectory:
    """Score label reports of shape (N, T, A).

    detail : also return the full per-round :class:`RoundState` (posteriors, pooled ...).
    table : use the per-tuple lookup table (when ``K ** A <= TABLE_LIMIT``); otherwise
        every (case, round) is assessed directly.  Both give identical results.
    """
    reports = check_reports(panel, reports)
    if reports.ndim != 3:
        raise InputError("reports", f"expected shape (cases, rounds, agents), got {reports.shape}")
    reports = reports[:, : _horizon(reports.shape[1], cfg)]
    n_agents, k = reports.shape[2], panel.n_labels
    if not table or k ** n_agents > TABLE_LIMIT:
        return score_states(assess_reports(panel, reports, cfg), cfg)
    dims = (k,) * n_agents
    tab = assess_reports(panel, np.stack(np.unravel_index(np.arange(k ** n_agents), dims), -1), cfg)
    codes = reports[..., 0] * 1  # a fresh intp array; row-major as np.ravel_multi_index
    for a in range(1, n_agents):
        codes *= k
        codes += reports[..., a]
    if detail:
        return score_states(RoundState(*(f[codes] for f in tab)), cfg)
    # per tuple: rule 1 and the eligible challenge; per (case, round): gathers only.
    # The challenge codes are gathered round-major (T, N), the layout the kernel scans.
    tg = targets(tab, cfg)
    cert = certify(tab.energy, tab.margin, cfg)
    challenge = challenge_codes(tg, cert, k, cfg)
    if n_agents * k * k < 2 ** 31:  # narrower codes scan faster
        challenge = challenge.astype(np.int32)

    def steer_fields(steer: np.ndarray) -> tuple[np.ndarray, ...]:
        hit = codes.reshape(-1)[np.flatnonzero(steer)]
        return _scatter(steer, (tg.agent[hit], tg.current[hit], tg.alternative[hit]))

    return _finish(None, tab.energy[codes], tab.margin[codes], tab.decision[codes], cert[codes],
                   np.take(challenge, codes.T).T, steer_fields, cfg)
