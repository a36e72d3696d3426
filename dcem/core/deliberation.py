"""The live deliberation loop: agents report, the mediator acts, steers reach agents.

Any batch of agents that implements :class:`Agents` can be mediated: the rule agents of
the synthetic world (:class:`dcem.synthetic.rule_agents.RuleAgents`) or language-model agents.
One call plays N cases in lock-step, round ``t = 1 .. cfg.t_max``:

1. ``agents.report(t)`` gives the label reports, int (N, A); agents whose
   ``soft_reports`` attribute is true give probability vectors (N, A, K) instead (the
   language-model agents), and their reported label is each vector's argmax;
2. :func:`dcem.core.state.assess_reports` (or :func:`~dcem.core.state.assess_probabilities` for
   probability reports) computes the round's mediator state;
3. the descent is the last column of :func:`dcem.core.energy.windowed_descent` over the
   energy history so far;
4. :func:`dcem.core.policy.policy_step` picks the action, given the challenges issued so far;
5. the new challenges are recorded and sent to the agents with ``agents.steer``.

Fixed horizon.  Every case plays all ``t_max`` rounds.  A terminal action (certify or
escalate) is recorded as a signal and the case's outcome is its FIRST terminal action,
exactly as :func:`dcem.core.replay.score_reports` defines it.  After that round the policy
keeps running on the case (its actions are recorded, as replay scores them) and, by
default (``steer_after_terminal=True``), its steers are still delivered, so the agents
keep deliberating as in the fixed-horizon ablation of Appendix F.  With
``steer_after_terminal=False`` a finished case gets no more steers (its agents then only
re-sample).  Either way the recorded actions of every round equal what replay computes
from the recorded reports, because the policy only reads reports and the history of
issued challenges.

Stopping when decided.  With ``stop_when_decided=True`` a case leaves the deliberation
at its first terminal action, as in the paper's main protocol: its agents are asked
nothing more (``agents.retire(cases)`` is called with the newly finished cases, so the
batch must implement it) and get no steers.  Its later rounds are not played; the
agents' reports of those rounds repeat the last played round's, so the recorded arrays
keep their (N, T) shape and the recorded actions still equal replay.  A what-if that
would stop such a case later sees those repeated reports, not new answers.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Protocol, Sequence, cast

import numpy as np

from dcem.core.config import MediatorConfig
from dcem.core.energy import windowed_descent
from dcem.core.panel import Panel
from dcem.core.policy import Action, StepResult, policy_step
from dcem.core.replay import Trajectory
from dcem.core.results import MethodRun
from dcem.core.state import RoundState, assess_probabilities, assess_reports
from common.errors import InputError

__all__ = ["SteerRequest", "Agents", "RetiringAgents", "deliberate", "first_terminal"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SteerRequest:
    """The challenges of one round, one row per steered case (M rows).

    t : 1-based round; cases, agent, current, alternative : int (M,) (the case index,
    a†, its report ŷ and its dangerous miss z); agent_risk : (M, A), every agent's
    current risk r_a (lets the agents choose a reference explanation).
    """

    t: int
    cases: np.ndarray
    agent: np.ndarray
    current: np.ndarray
    alternative: np.ndarray
    agent_risk: np.ndarray


class Agents(Protocol):
    """A panel of A agents working on the same N cases."""

    @property
    def n_agents(self) -> int: ...

    @property
    def n_cases(self) -> int: ...

    def report(self, t: int) -> np.ndarray:
        """Reports of round t (1-based): int labels (N, A), or probability vectors
        (N, A, K) when the agents have a true ``soft_reports`` attribute."""
        ...

    def steer(self, request: SteerRequest) -> Sequence[tuple[str, ...]]:
        """Deliver the round's challenges; return S(t) (feature/rule names) per row."""
        ...


class RetiringAgents(Agents, Protocol):
    """Agents that can stop answering for decided cases (``stop_when_decided``)."""

    def retire(self, cases: np.ndarray) -> None:
        """Ask nothing more for these case indices (whatever is reported for them later is
        replaced by their last played reports)."""
        ...


def first_terminal(action: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Index of the first terminal round per row and whether there is one.

    action : int (N, T).  Returns (index (N,) 0-based, last round when none; has (N,)).
    """
    terminal = (action == Action.STOP_AND_DECIDE) | (action == Action.STOP_AND_ESCALATE)
    has = terminal.any(axis=1)
    return np.where(has, np.argmax(terminal, axis=1), action.shape[1] - 1), has


@dataclass(eq=False)
class _Buffers:
    """What a live run has recorded so far, for N cases, T = t_max rounds, A agents, K labels.

    reports : int (N, T, A); energy, margin, descent : (N, T); decision, steer_agent,
    steer_current, steer_alternative : int (N, T); action : int8 (N, T); certified,
    budget : bool (N, T); issued : bool (N, A, K, K), challenges sent so far;
    finished : bool (N,), a terminal action was taken; probabilities : (N, T, A, K)
    normalised probability reports, or None for label agents.  Rounds not yet played
    hold uninitialised values.
    """

    reports: np.ndarray
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
    issued: np.ndarray
    finished: np.ndarray
    probabilities: np.ndarray | None


def _empty_buffers(n: int, horizon: int, a: int, k: int, soft: bool) -> _Buffers:
    """Buffers for N = n cases over T = horizon rounds (probabilities only when soft)."""
    return _Buffers(
        reports=np.empty((n, horizon, a), dtype=np.int64), energy=np.empty((n, horizon)),
        margin=np.empty((n, horizon)), descent=np.empty((n, horizon)),
        decision=np.empty((n, horizon), dtype=np.int64), action=np.empty((n, horizon), dtype=np.int8),
        steer_agent=np.empty((n, horizon), dtype=np.int64),
        steer_current=np.empty((n, horizon), dtype=np.int64),
        steer_alternative=np.empty((n, horizon), dtype=np.int64),
        certified=np.empty((n, horizon), dtype=bool), budget=np.empty((n, horizon), dtype=bool),
        issued=np.zeros((n, a, k, k), dtype=bool), finished=np.zeros(n, dtype=bool),
        probabilities=np.empty((n, horizon, a, k)) if soft else None)


def _soft_round(panel: Panel, got: np.ndarray, cfg: MediatorConfig, t: int,
                size: tuple[int, int, int], buf: _Buffers) -> RoundState:
    """State of round t from probability reports ``got`` (N, A, K); records them."""
    if got.shape != size:
        raise InputError("reports", f"round {t}: expected probabilities of shape {size}, "
                         f"got {got.shape}")
    state = assess_probabilities(panel, got, cfg)
    buf.probabilities[:, t - 1] = got / got.sum(axis=-1, keepdims=True)  # type: ignore[index]
    buf.reports[:, t - 1] = state.reports
    return state


def _label_round(panel: Panel, got: np.ndarray, cfg: MediatorConfig, t: int,
                 size: tuple[int, int], buf: _Buffers) -> RoundState:
    """State of round t from label reports ``got`` int (N, A); records them."""
    if got.shape != size:
        raise InputError("reports", f"round {t}: expected shape {size}, got {got.shape}")
    buf.reports[:, t - 1] = got
    return assess_reports(panel, buf.reports[:, t - 1], cfg)


def _policy_round(state: RoundState, cfg: MediatorConfig, t: int, buf: _Buffers) -> StepResult:
    """Record round t's state, descent and policy step (from the challenges issued before it)."""
    i = t - 1
    buf.energy[:, i] = state.energy
    buf.margin[:, i] = state.margin
    buf.decision[:, i] = state.decision
    buf.descent[:, i] = windowed_descent(buf.energy[:, :t], cfg.window)[:, -1]
    step = policy_step(state, buf.descent[:, i], buf.issued, t, cfg)
    buf.action[:, i] = step.action
    buf.steer_agent[:, i] = step.steer_agent
    buf.steer_current[:, i] = step.steer_current
    buf.steer_alternative[:, i] = step.steer_alternative
    buf.certified[:, i], buf.budget[:, i] = step.certified, step.budget
    return step


def _steer_round(agents: Agents, state: RoundState, step: StepResult, t: int, buf: _Buffers,
                 steer_after_terminal: bool, features: dict[tuple[int, int], tuple[str, ...]]) -> np.ndarray:
    """Record round t's challenges as issued, deliver them, then mark terminal cases finished.

    Steers go to every steered case, or (``steer_after_terminal=False``) only to cases
    without an earlier terminal action; S(t) of each delivered row goes into ``features``.
    Returns the indices of the cases whose first terminal action is this round's.
    """
    hit = np.flatnonzero(step.action == Action.DIFFERENTIAL_STEER)
    if hit.size:
        buf.issued[hit, step.steer_agent[hit], step.steer_current[hit], step.steer_alternative[hit]] = True
    send = hit if steer_after_terminal else hit[~buf.finished[hit]]
    if send.size:
        request = SteerRequest(t, send, step.steer_agent[send], step.steer_current[send],
                               step.steer_alternative[send], state.agent_risk[send])
        names = agents.steer(request)
        for case, s in zip(send.tolist(), names):
            features[(case, t)] = tuple(s)
    terminal = (step.action == Action.STOP_AND_DECIDE) | (step.action == Action.STOP_AND_ESCALATE)
    newly = np.flatnonzero(terminal & ~buf.finished)
    buf.finished |= terminal
    return newly


def _live_run(buf: _Buffers, n: int, features: dict[tuple[int, int], tuple[str, ...]], method: str) -> MethodRun:
    """The finished run: per-round records plus each case's outcome at its first terminal round."""
    first, has = first_terminal(buf.action)
    rows = np.arange(n)
    out_action = np.where(has, buf.action[rows, first], Action.PENDING).astype(np.int8)
    out_decision = buf.decision[rows, first]
    trajectory = Trajectory(None, buf.energy, buf.margin, buf.descent, buf.decision, buf.action, buf.steer_agent,
                            buf.steer_current, buf.steer_alternative, buf.certified, buf.budget, out_action,
                            first + 1, out_decision)
    return MethodRun(method, buf.reports, out_action, out_decision, first + 1, trajectory.outcome_certified,
                     trajectory.outcome_budget, steer_features=features, probabilities=buf.probabilities,
                     trajectory=trajectory)


def deliberate(panel: Panel, agents: Agents, cfg: MediatorConfig, *, method: str = "dcem",
               steer_after_terminal: bool = True, stop_when_decided: bool = False) -> MethodRun:
    """Play ``cfg.t_max`` rounds of mediated deliberation for every case.

    Parameters
    ----------
    panel : Panel (fixed confusion matrices, prior, loss)
    agents : Agents with ``n_agents == panel.n_agents``
    cfg : MediatorConfig (its t_max is the horizon)
    method : the method key the run is stored under
    steer_after_terminal : keep delivering steers after a case's first terminal action
    stop_when_decided : ask a case's agents nothing after its first terminal action
        (``agents`` must implement :class:`RetiringAgents`; see the module note)

    Returns a :class:`MethodRun` (no metrics yet) whose ``trajectory`` holds every round.
    """
    if agents.n_agents != panel.n_agents:
        raise InputError("agents", f"panel has {panel.n_agents} agents, got {agents.n_agents}")
    n, a, k, horizon = agents.n_cases, panel.n_agents, panel.n_labels, cfg.t_max
    if stop_when_decided and not callable(getattr(agents, "retire", None)):
        raise InputError("agents", "these agents cannot stop a decided case early (they have no retire method)")
    soft = bool(getattr(agents, "soft_reports", False))
    buf = _empty_buffers(n, horizon, a, k, soft)
    features: dict[tuple[int, int], tuple[str, ...]] = {}
    prev: np.ndarray | None = None
    for i in range(horizon):
        t = i + 1
        got = np.array(agents.report(t))
        if prev is not None and stop_when_decided and got.shape == prev.shape:
            got[buf.finished] = prev[buf.finished]  # a decided case's reports repeat its last played ones
        prev = got
        if soft:
            state = _soft_round(panel, got, cfg, t, (n, a, k), buf)
        else:
            state = _label_round(panel, got, cfg, t, (n, a), buf)
        step = _policy_round(state, cfg, t, buf)
        newly = _steer_round(agents, state, step, t, buf, steer_after_terminal and not stop_when_decided, features)
        if stop_when_decided and newly.size:
            cast(RetiringAgents, agents).retire(newly)
    log.debug("deliberated %d cases x %d rounds: %d steers", n, horizon,
              int((buf.action == Action.DIFFERENTIAL_STEER).sum()))
    return _live_run(buf, n, features, method)
