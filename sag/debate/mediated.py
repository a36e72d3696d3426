"""D-CEM as the group's stopping rule (method ``dcem``; none of the seeds has this).

The reasoning and knowledge agents are D-CEM's panel: after each debate round their
probability vectors over the option letters are the reports (seed 003, the soft-report
posterior), the confusion matrix of each comes from a calibration split of the same
benchmark (:func:`calibrate_panel`, letters as labels, so a model's position bias is what
gets calibrated), the loss is 0/1 unless the group config gives one, and the mediator's
action drives the group:

- CONTINUE: another debate round;
- DIFFERENTIAL_STEER: the named agent gets a challenge about the dangerous alternative
  with its next-round instruction, and the debate goes on;
- STOP_AND_DECIDE: the group answers the mediator's Bayes decision;
- STOP_AND_ESCALATE: the item is handed to a human (answer ESCALATE, counted as such).

The thresholds (eps_safe, eps_low, m_safe, delta) are fitted on the calibration items'
first debate round with seed 003's costed objective (:func:`fit_mediator`): the default
values, set for two agents of the synthetic world, would escalate nearly every item of a
four-reporter group.

Safety agents and judges still play each round, so the transcript and the refusal rule
are those of the plain group; only the stop and the answer come from the mediator.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from common.errors import ConfigError
from dcem.calibration.fitting import ThresholdFit, estimate_confusion, estimate_prior, fit_thresholds
from dcem.core.config import MediatorConfig
from dcem.core.energy import windowed_descent
from dcem.core.panel import Panel
from dcem.core.policy import Action, policy_step
from dcem.core.state import assess_probabilities
from sag.group.config import AgentRole, GroupConfig
from sag.debate.hybrid import Debate, RoundDecision
from sag.group.prompts import challenge_note
from sag.group.transcript import ESCALATE, GroupMessage

__all__ = ["MediatorRound", "MediatedStop", "reporters_of", "zero_one_loss", "calibrate_panel", "mediator_config",
           "fit_mediator", "reports_matrix"]

_REPORTING = (AgentRole.REASONING, AgentRole.KNOWLEDGE)


def reporters_of(cfg: GroupConfig) -> tuple[str, ...]:
    """The agent ids whose answers are D-CEM's reports: reasoning and knowledge agents."""
    return tuple(a.agent_id for a in cfg.agents() if a.role in _REPORTING)


def zero_one_loss(n: int) -> np.ndarray:
    """Loss 1 for any wrong letter, 0 for the right one."""
    return 1.0 - np.eye(n)


def mediator_config(cfg: GroupConfig) -> MediatorConfig:
    """The mediator's settings for a group before fitting: its defaults with the group's round limit."""
    return MediatorConfig(t_max=cfg.t_max, prior="uniform")


def fit_mediator(panel: Panel, reports: np.ndarray, probabilities: np.ndarray, truth: np.ndarray,
                 cfg: GroupConfig) -> ThresholdFit:
    """Thresholds fitted on the calibration items' first debate round (seed 003's costed
    objective, :func:`dcem.calibration.fitting.fit_thresholds`): ``reports`` int (n, A),
    ``probabilities`` (n, A, K).  The calibration trajectories have one round, so the fit
    runs with a one-round budget; the fitted config then gets the group's ``t_max``."""
    base = mediator_config(cfg).with_changes(t_max=1)
    fit = fit_thresholds(panel, reports[:, None, :], truth, base, probabilities=probabilities[:, None])
    return ThresholdFit(fit.config.with_changes(t_max=cfg.t_max), fit.report)


def reports_matrix(messages: Sequence[GroupMessage], reporters: Sequence[str], n_letters: int) -> np.ndarray:
    """(A, K) probability reports of one round; an agent without an answer reports uniform."""
    by_agent = {m.agent_id: m for m in messages if m.phase in ("debate", "propose")}
    out = np.full((len(reporters), n_letters), 1.0 / n_letters)
    for a, agent in enumerate(reporters):
        m = by_agent.get(agent)
        if m is not None and m.error is None and len(m.distribution) == n_letters:
            out[a] = np.clip(np.asarray(m.distribution, dtype=float), 1e-12, None)
            out[a] /= out[a].sum()
    return out


def calibrate_panel(truth: np.ndarray, reports: np.ndarray, letters: Sequence[str], cfg: GroupConfig) -> Panel:
    """A panel from calibration items: ``truth`` int (n,), ``reports`` int (n, A) (each
    reporter's most probable letter in the first debate round of each item)."""
    k = len(letters)
    confusion = estimate_confusion(truth, reports, k)
    loss = np.asarray(cfg.loss, dtype=float) if cfg.loss is not None else zero_one_loss(k)
    if loss.shape != (k, k):
        raise ConfigError("loss", f"the group's loss matrix is {loss.shape[0]}x{loss.shape[1]}, the items have {k} options")
    return Panel(tuple(letters), confusion, estimate_prior(truth, k, "uniform"), loss)


@dataclass(frozen=True)
class MediatorRound:
    """The mediator's reading of one round."""

    round: int
    action: str
    decision: str
    energy: float
    margin: float
    steer_agent: str | None = None
    steer_alternative: str | None = None


@dataclass
class MediatedStop:
    """The D-CEM controller of one item's debate (see the module docstring)."""

    panel: Panel
    mcfg: MediatorConfig
    reporters: tuple[str, ...]
    rounds: list[MediatorRound] = field(default_factory=list)
    _energy: list[float] = field(default_factory=list)
    _issued: np.ndarray | None = None

    def after_round(self, debate: Debate, t: int) -> RoundDecision:
        panel, cfg = self.panel, self.mcfg
        a, k = len(self.reporters), panel.n_labels
        if self._issued is None:
            self._issued = np.zeros((1, a, k, k), dtype=bool)
        probs = reports_matrix(debate.round_messages(t), self.reporters, k)[None]
        state = assess_probabilities(panel, probs, cfg)
        self._energy.append(float(state.energy[0]))
        descent = windowed_descent(np.asarray([self._energy]), cfg.window)[:, -1]
        step = policy_step(state, descent, self._issued, t, cfg)
        action = Action(int(step.action[0]))
        decision = panel.labels[int(state.decision[0])]
        record = MediatorRound(t, action.name, decision, float(state.energy[0]), float(state.margin[0]))
        if action is Action.DIFFERENTIAL_STEER:
            return self._steer(record, step)
        self.rounds.append(record)
        if action is Action.STOP_AND_DECIDE:
            kind = "certified" if bool(step.certified[0]) else "round budget reached"
            return RoundDecision(True, f"D-CEM STOP_AND_DECIDE ({kind})", answer=decision)
        if action is Action.STOP_AND_ESCALATE:
            return RoundDecision(True, "D-CEM STOP_AND_ESCALATE: handed to a human", answer=ESCALATE)
        return RoundDecision(False, "D-CEM CONTINUE")

    def _steer(self, record: MediatorRound, step: object) -> RoundDecision:
        agent = int(step.steer_agent[0])  # type: ignore[attr-defined]
        current = int(step.steer_current[0])  # type: ignore[attr-defined]
        alternative = int(step.steer_alternative[0])  # type: ignore[attr-defined]
        assert self._issued is not None
        self._issued[0, agent, current, alternative] = True
        labels, who = self.panel.labels, self.reporters[agent]
        self.rounds.append(MediatorRound(record.round, record.action, record.decision, record.energy, record.margin,
                                         who, labels[alternative]))
        note = challenge_note(labels[current], labels[alternative])
        return RoundDecision(False, f"D-CEM DIFFERENTIAL_STEER to {who}", notes={who: note})
