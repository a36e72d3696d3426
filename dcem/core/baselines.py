"""Aggregation baselines of section 5.2, run under the same agents, cases and seeds.

* Single best: the agent with the highest calibration accuracy answers alone; its
  round-1 report is the decision (1 round).
* Free discussion: the agents talk for a fixed number of rounds with no mediator and
  the decision is the Bayes decision (eq. 8) of the D-CEM log pool of the last round
  (rule agents: :mod:`dcem.synthetic.free_discussion`; language-model agents:
  :func:`pooled_decision_probabilities` on their last round).
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

import numpy as np

from dcem.core.config import MediatorConfig
from dcem.core.decision import bayes_decision
from dcem.core.panel import Panel
from dcem.core.pooling import log_pool, pool_weights
from dcem.core.posterior import report_posteriors, soft_report_posteriors
from dcem.core.results import MethodRun, decided_run
from dcem.core.soft import argmax_labels, check_probabilities, normalised
from dcem.core.state import assess_probabilities
from common.errors import InputError

__all__ = ["best_agent", "single_best", "fixed_pool", "fixed_pool_probabilities",
           "pooled_decision_probabilities"]



def best_agent(cal_accuracy: np.ndarray) -> int:
    """Index of the calibration-best agent (ties to the lowest index)."""
    acc = np.asarray(cal_accuracy, dtype=float)
    if acc.ndim != 1 or acc.size == 0:
        raise InputError("cal_accuracy", f"expected one accuracy per agent, got shape {acc.shape}")
    return int(np.argmax(acc))


def single_best(first_reports: np.ndarray, cal_accuracy: np.ndarray) -> MethodRun:
    """Single best: the calibration-best agent's round-1 report.

    first_reports : int (N, A); cal_accuracy : (A,).
    """
    r = np.asarray(first_reports, dtype=np.int64)
    return decided_run("single", r[:, None, :], r[:, best_agent(cal_accuracy)])


def fixed_pool(panel: Panel, first_reports: np.ndarray, cal_accuracy: np.ndarray,
               cfg: MediatorConfig) -> MethodRun:
    """Fixed-weight log pool of the round-1 posteriors (eq. 2, 6-8).

    The weights use calibration accuracy in place of the per-round reliability:
    ``pool_weights(acc, lambda_pool, rho_min, omega_min)`` of :mod:`dcem.core.pooling`.
    """
    r = np.asarray(first_reports, dtype=np.int64)
    post = report_posteriors(panel.confusion, panel.prior, r)  # (N, A, K)
    acc = np.asarray(cal_accuracy, dtype=float)
    omega = pool_weights(acc, lambda_pool=cfg.lambda_pool, rho_min=cfg.rho_min, omega_min=cfg.omega_min)
    q = log_pool(post, np.broadcast_to(omega, r.shape))
    return decided_run("pool", r[:, None, :], bayes_decision(panel.loss, q).best)


def fixed_pool_probabilities(panel: Panel, first_probs: np.ndarray, cal_accuracy: np.ndarray,
                             cfg: MediatorConfig) -> MethodRun:
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
    return decided_run("pool", r[:, None, :], bayes_decision(panel.loss, q).best, probs[:, None])


def pooled_decision_probabilities(panel: Panel, probs: np.ndarray, cfg: MediatorConfig) -> np.ndarray:
    """Bayes decision (eq. 8) of the D-CEM log pool of one round of probability reports.

    probs : (N, A, K), e.g. the last round of a free discussion among agents that report
    probability vectors.  Returns int64 (N,): ``assess_probabilities(...).decision``.
    """
    arr = check_probabilities(probs, panel.n_agents, panel.n_labels, ndim=3)
    return np.asarray(assess_probabilities(panel, arr, cfg).decision, dtype=np.int64)
