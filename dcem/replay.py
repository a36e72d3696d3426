"""Score whole batches of stored trajectories under a mediator configuration.

Given the reports of N cases over T rounds, compute every round's mediator state, the
windowed descent, the action of every round and each episode's outcome (its first
terminal action).  Rounds after the first terminal action are still scored: they are
the "fixed-horizon" signals of Appendix F and let a what-if change of thresholds move
the stopping round without calling any agent again.  Replay assumes the recorded
reports: it does not re-simulate how agents would have answered a different steer.

Speed: with label reports every per-round quantity except the descent and the steer
history depends only on the report tuple, which has ``K ** A`` values.  ``score_reports``
evaluates the mediator once per tuple and gathers, then runs the sequential policy over
rounds vectorised across cases.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from dcem.config import MediatorConfig
from dcem.energy import windowed_descent
from dcem.errors import InputError
from dcem.panel import Panel
from dcem.policy import Action, StepResult, policy_step
from dcem.state import RoundState, assess_probabilities, assess_reports, check_reports

__all__ = ["Scored", "score_reports", "score_probabilities", "score_states", "TABLE_LIMIT"]

TABLE_LIMIT = 1 << 16  # largest K**A for which the per-tuple table is used


class _View(NamedTuple):
    reports: np.ndarray
    reliability: np.ndarray
    agent_risk: np.ndarray
    dangerous_miss: np.ndarray
    margin: np.ndarray
    energy: np.ndarray


class Scored(NamedTuple):
    """Scored trajectories of N cases over T rounds.

    state : RoundState with batch (N, T), or None when scored in fast mode
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


def _run_policy(view_at, n: int, rounds: int, n_agents: int, n_labels: int,
                energy: np.ndarray, decision: np.ndarray, margin: np.ndarray,
                cfg: MediatorConfig, state: RoundState | None) -> Scored:
    descent = windowed_descent(energy, cfg.window)
    shape = (n, rounds)
    action = np.empty(shape, dtype=np.int8)
    steer_agent = np.empty(shape, dtype=np.int64)
    steer_current = np.empty(shape, dtype=np.int64)
    steer_alt = np.empty(shape, dtype=np.int64)
    certified = np.empty(shape, dtype=bool)
    budget = np.empty(shape, dtype=bool)
    issued = np.zeros((n, n_agents, n_labels, n_labels), dtype=bool)
    for i in range(rounds):
        step: StepResult = policy_step(view_at(i), descent[:, i], issued, i + 1, cfg)
        action[:, i] = step.action
        steer_agent[:, i] = step.steer_agent
        steer_current[:, i] = step.steer_current
        steer_alt[:, i] = step.steer_alternative
        certified[:, i] = step.certified
        budget[:, i] = step.budget
        hit = np.flatnonzero(step.action == Action.DIFFERENTIAL_STEER)
        if hit.size:
            issued[hit, step.steer_agent[hit], step.steer_current[hit], step.steer_alternative[hit]] = True
    terminal = (action == Action.STOP_AND_DECIDE) | (action == Action.STOP_AND_ESCALATE)
    has_end = terminal.any(axis=1)
    first = np.where(has_end, np.argmax(terminal, axis=1), rounds - 1)
    rows = np.arange(n)
    out_action = np.where(has_end, action[rows, first], Action.PENDING).astype(np.int8)
    return Scored(state, energy, margin, descent, decision, action, steer_agent, steer_current,
                  steer_alt, certified, budget, out_action, first + 1, decision[rows, first])


def _horizon(rounds: int, cfg: MediatorConfig) -> int:
    if rounds < 1:
        raise InputError("reports", "at least one round of reports is required")
    return min(rounds, cfg.t_max)


def score_states(state: RoundState, cfg: MediatorConfig) -> Scored:
    """Run the policy over precomputed states with batch shape (N, T)."""
    n, rounds = state.energy.shape
    n_agents, n_labels = state.posteriors.shape[-2:]

    def view_at(i: int) -> RoundState:
        return RoundState(*(f[:, i] for f in state))

    return _run_policy(view_at, n, rounds, n_agents, n_labels, state.energy, state.decision,
                       state.margin, cfg, state)


def score_probabilities(panel: Panel, probs: np.ndarray, cfg: MediatorConfig) -> Scored:
    """Score probability-vector reports of shape (N, T, A, K) (general batched path)."""
    arr = np.asarray(probs, dtype=float)
    if arr.ndim != 4:
        raise InputError("probabilities", f"expected shape (N, T, A, K), got {arr.shape}")
    arr = arr[:, : _horizon(arr.shape[1], cfg)]
    return score_states(assess_probabilities(panel, arr, cfg), cfg)


def score_reports(panel: Panel, reports: np.ndarray, cfg: MediatorConfig, *,
                  detail: bool = False, table: bool = True) -> Scored:
    """Score label reports of shape (N, T, A).

    detail : also return the full per-round :class:`RoundState` (posteriors, pooled ...).
    table : use the per-tuple lookup table (when ``K ** A <= TABLE_LIMIT``); otherwise
        every (case, round) is assessed directly.  Both give identical results.
    """
    reports = check_reports(panel, reports)
    if reports.ndim != 3:
        raise InputError("reports", f"expected shape (cases, rounds, agents), got {reports.shape}")
    reports = reports[:, : _horizon(reports.shape[1], cfg)]
    n, rounds, n_agents = reports.shape
    k = panel.n_labels
    if not table or k ** n_agents > TABLE_LIMIT:
        return score_states(assess_reports(panel, reports, cfg), cfg)
    tuples = np.stack(np.unravel_index(np.arange(k ** n_agents), (k,) * n_agents), axis=-1)
    tab = assess_reports(panel, tuples, cfg)
    codes = np.ravel_multi_index(tuple(np.moveaxis(reports, -1, 0)), (k,) * n_agents)
    if detail:
        return score_states(RoundState(*(f[codes] for f in tab)), cfg)
    energy = tab.energy[codes]
    decision = tab.decision[codes]
    margin = tab.margin[codes]

    def view_at(i: int) -> _View:
        c = codes[:, i]
        return _View(reports[:, i], tab.reliability[c], tab.agent_risk[c],
                     tab.dangerous_miss[c], margin[:, i], energy[:, i])

    return _run_policy(view_at, n, rounds, n_agents, k, energy, decision, margin, cfg, None)
