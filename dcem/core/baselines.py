"""Aggregation baselines of section 5.2, run under the same agents, cases and seeds.

* Single best: the agent with the highest calibration accuracy answers alone; its
  round-1 report is the decision (1 round).
* Free discussion: the agents talk for a fixed number of rounds with no mediator.  In
  round ``t >= 2`` each agent adds a social-influence bonus ``kappa`` to the score of
  every label its peers reported in round ``t - 1`` (``kappa / (A - 1)`` per peer,
  so the total pull is ``kappa`` for any panel size) and samples again.  The decision
  is the Bayes decision (eq. 8) of the D-CEM log pool of the last round's reports.
* Fixed-weight log pool: round-1 reports, pooled with weights fixed per agent from
  calibration accuracy (``omega ∝ acc ** lambda_pool``, clipped as in Assumption B.4),
  Bayes decision, no mediator actions (1 round).
* D-CEM without escalation is the live loop with ``MediatorConfig.escalation=False``.

Agents that report probability vectors (N, A, K) instead of labels: the single best
takes their argmax labels (:func:`dcem.core.soft.argmax_labels`) as they are;
:func:`fixed_pool_probabilities` pools the soft posteriors
(:func:`dcem.core.posterior.soft_report_posteriors`); a free discussion among such agents
decides with :func:`pooled_decision_probabilities` on its last round.  A one-hot vector
gives exactly the label posterior, so one-hot reports reproduce the label baselines.

Every baseline decides (STOP_AND_DECIDE) and never certifies: ``certified`` is False.
Matching: callers build each method's agents from the same seed, so round-1 reports
are the same draws for every method.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from dcem.core.config import MediatorConfig
from dcem.core.decision import bayes_decision
from dcem.errors import InputError
from dcem.core.panel import Panel
from dcem.core.policy import Action
from dcem.core.pooling import log_pool, pool_weights
from dcem.core.posterior import report_posteriors, soft_report_posteriors
from dcem.synthetic.rule_agents import RuleAgents, sample_reports
from dcem.core.soft import argmax_labels, check_probabilities, normalised
from dcem.core.state import assess_probabilities, assess_reports

__all__ = ["KAPPA", "BaselineRun", "best_agent", "single_best", "fixed_pool", "fixed_pool_probabilities",
           "free_discussion", "pooled_decision_probabilities"]

log = logging.getLogger(__name__)

KAPPA = 1.0  # a peer's previous answer weighs about as much as one fired rule (1.0-1.7)


@dataclass(frozen=True, eq=False)
class BaselineRun:
    """A baseline's answers for N cases.

    reports : int (N, T, A) every round played; decision : int (N,);
    action : int (N,) (always STOP_AND_DECIDE); rounds : int (N,) (= T);
    certified, budget : bool (N,) (always False);
    probabilities : (N, T, A, K) normalised probability reports, or None for label reports
    (``reports`` are then their argmax labels).
    """

    reports: np.ndarray
    decision: np.ndarray
    action: np.ndarray
    rounds: np.ndarray
    certified: np.ndarray
    budget: np.ndarray
    probabilities: np.ndarray | None = None


def _decided(reports: np.ndarray, decision: np.ndarray,
             probabilities: np.ndarray | None = None) -> BaselineRun:
    n, rounds = reports.shape[:2]
    return BaselineRun(reports, np.asarray(decision, dtype=np.int64),
                       np.full(n, Action.STOP_AND_DECIDE, dtype=np.int8),
                       np.full(n, rounds, dtype=np.int64), np.zeros(n, dtype=bool),
                       np.zeros(n, dtype=bool), probabilities)


def best_agent(cal_accuracy: np.ndarray) -> int:
    """Index of the calibration-best agent (ties to the lowest index)."""
    acc = np.asarray(cal_accuracy, dtype=float)
    if acc.ndim != 1 or acc.size == 0:
        raise InputError("cal_accuracy", f"expected one accuracy per agent, got shape {acc.shape}")
    return int(np.argmax(acc))


def single_best(first_reports: np.ndarray, cal_accuracy: np.ndarray) -> BaselineRun:
    """Single best: the calibration-best agent's round-1 report.

    first_reports : int (N, A); cal_accuracy : (A,).
    """
    r = np.asarray(first_reports, dtype=np.int64)
    return _decided(r[:, None, :], r[:, best_agent(cal_accuracy)])


def fixed_pool(panel: Panel, first_reports: np.ndarray, cal_accuracy: np.ndarray,
               cfg: MediatorConfig) -> BaselineRun:
    """Fixed-weight log pool of the round-1 posteriors (eq. 2, 6-8).

    The weights use calibration accuracy in place of the per-round reliability:
    ``pool_weights(acc, lambda_pool, rho_min, omega_min)`` of :mod:`dcem.core.pooling`.
    """
    r = np.asarray(first_reports, dtype=np.int64)
    post = report_posteriors(panel.confusion, panel.prior, r)  # (N, A, K)
    acc = np.asarray(cal_accuracy, dtype=float)
    omega = pool_weights(acc, lambda_pool=cfg.lambda_pool, rho_min=cfg.rho_min, omega_min=cfg.omega_min)
    q = log_pool(post, np.broadcast_to(omega, r.shape))
    return _decided(r[:, None, :], bayes_decision(panel.loss, q).best)


def fixed_pool_probabilities(panel: Panel, first_probs: np.ndarray, cal_accuracy: np.ndarray,
                             cfg: MediatorConfig) -> BaselineRun:
    """:func:`fixed_pool` for probability-vector reports ``first_probs`` (N, A, K).

    Each vector is normalised, its posterior is the soft posterior
    (:func:`dcem.core.posterior.soft_report_posteriors`) and its reported label the argmax;
    the weights and the decision are those of :func:`fixed_pool`.  Returns reports
    (N, 1, A) = the argmax labels and probabilities (N, 1, A, K) = the normalised vectors.
    """
    probs = normalised(check_probabilities(first_probs, panel.n_agents, panel.n_labels, ndim=3,
                                           field="first_probs"))
    r = argmax_labels(probs)
    post = soft_report_posteriors(panel.confusion, panel.prior, probs)  # (N, A, K)
    acc = np.asarray(cal_accuracy, dtype=float)
    omega = pool_weights(acc, lambda_pool=cfg.lambda_pool, rho_min=cfg.rho_min, omega_min=cfg.omega_min)
    q = log_pool(post, np.broadcast_to(omega, r.shape))
    return _decided(r[:, None, :], bayes_decision(panel.loss, q).best, probs[:, None])


def pooled_decision_probabilities(panel: Panel, probs: np.ndarray, cfg: MediatorConfig) -> np.ndarray:
    """Bayes decision (eq. 8) of the D-CEM log pool of one round of probability reports.

    probs : (N, A, K), e.g. the last round of a free discussion among agents that report
    probability vectors.  Returns int64 (N,): ``assess_probabilities(...).decision``.
    """
    arr = check_probabilities(probs, panel.n_agents, panel.n_labels, ndim=3)
    return np.asarray(assess_probabilities(panel, arr, cfg).decision, dtype=np.int64)


def free_discussion(panel: Panel, agents: RuleAgents, cfg: MediatorConfig, *, rounds: int,
                    kappa: float = KAPPA) -> BaselineRun:
    """Unmediated discussion for ``rounds`` rounds (no steering, no stopping).

    Round 1 is ``agents.report(1)`` (the same draws as every other method built from
    the same seed); later rounds add the social bonus to the scores and sample with the
    agents' own generator.  Decision: the D-CEM log-pool Bayes decision of the last
    round.  Returns reports of shape (N, rounds, A).
    """
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds < 1:
        raise InputError("rounds", f"must be an integer >= 1, got {rounds!r}")
    if kappa < 0 or not np.isfinite(kappa):
        raise InputError("kappa", f"must be finite and >= 0, got {kappa}")
    n, a, k = agents.n_cases, agents.n_agents, len(agents.labels)
    reports = np.empty((n, rounds, a), dtype=np.int64)
    reports[:, 0] = agents.report(1)
    share = kappa / max(a - 1, 1)
    for i in range(1, rounds):
        prev = np.eye(k)[reports[:, i - 1]]  # (N, A, K) one-hot of each agent's last report
        peers = prev.sum(axis=1, keepdims=True) - prev  # labels the other agents gave
        reports[:, i] = sample_reports(agents.scores() + share * peers, agents.rng)
    state = assess_reports(panel, reports[:, -1], cfg)
    log.debug("free discussion: %d cases x %d rounds, final agreement %.2f", n, rounds,
              float((reports[:, -1] == reports[:, -1, :1]).all(axis=1).mean()))
    return _decided(reports, state.decision)
