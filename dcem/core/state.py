"""Everything the mediator computes from one round's reports, batched.

``assess_reports`` maps reported labels and ``assess_probabilities`` maps reported
probability vectors to a :class:`RoundState`; both accept any leading batch axes.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from dcem.core.config import MediatorConfig
from dcem.core.decision import bayes_decision
from dcem.core.energy import energy_terms
from dcem.core.panel import Panel
from dcem.core.pooling import log_pool, pool_weights, reliability
from dcem.core.posterior import agent_risk, dangerous_miss, report_posteriors, soft_report_posteriors
from common.errors import InputError

__all__ = ["RoundState", "assess_reports", "assess_probabilities", "check_reports"]


class RoundState(NamedTuple):
    """Per-round mediator quantities; ``...`` is the batch shape.

    reports (..., A) int; posteriors (..., A, K); reliability (..., A);
    weights (..., A); pooled (..., K); decision, runner_up (...) int; margin (...);
    agent_risk (..., A); dangerous_miss (..., A) int; disagreement, risk_term,
    margin_term, energy (...).
    """

    reports: np.ndarray
    posteriors: np.ndarray
    reliability: np.ndarray
    weights: np.ndarray
    pooled: np.ndarray
    decision: np.ndarray
    runner_up: np.ndarray
    margin: np.ndarray
    agent_risk: np.ndarray
    dangerous_miss: np.ndarray
    disagreement: np.ndarray
    risk_term: np.ndarray
    margin_term: np.ndarray
    energy: np.ndarray


def check_reports(panel: Panel, reports: np.ndarray) -> np.ndarray:
    """Validate integer label reports of shape (..., A) against the panel."""
    arr = np.asarray(reports)
    if arr.ndim < 1 or arr.shape[-1] != panel.n_agents:
        raise InputError("reports", f"expected one report per agent ({panel.n_agents}), got shape {arr.shape}")
    if arr.size and (not np.issubdtype(arr.dtype, np.integer)):
        raise InputError("reports", "reports must be integer label indices")
    if arr.size and (arr.min() < 0 or arr.max() >= panel.n_labels):
        raise InputError("reports", f"label index outside 0..{panel.n_labels - 1}")
    return arr.astype(np.intp, copy=False)


def _finish(panel: Panel, reports: np.ndarray, post: np.ndarray, cfg: MediatorConfig) -> RoundState:
    rho = reliability(post, reports)
    omega = pool_weights(rho, lambda_pool=cfg.lambda_pool, rho_min=cfg.rho_min, omega_min=cfg.omega_min)
    q = log_pool(post, omega)
    dec = bayes_decision(panel.loss, q)
    risks = agent_risk(panel.loss, post, reports)
    z = dangerous_miss(panel.loss, post, reports)
    terms = energy_terms(post, risks, dec.margin, alpha=cfg.alpha, beta=cfg.beta, gamma=cfg.gamma)
    return RoundState(reports, post, rho, omega, q, dec.best, dec.runner_up, dec.margin, risks, z,
                      terms.disagreement, terms.risk, terms.margin, terms.total)


def assess_reports(panel: Panel, reports: np.ndarray, cfg: MediatorConfig) -> RoundState:
    """Mediator state for label reports of shape (..., A)."""
    reports = check_reports(panel, reports)
    post = report_posteriors(panel.confusion, panel.prior, reports)
    return _finish(panel, reports, post, cfg)


def assess_probabilities(panel: Panel, probs: np.ndarray, cfg: MediatorConfig) -> RoundState:
    """Mediator state for probability-vector reports of shape (..., A, K).

    The reported label of each agent is the argmax of its vector (ties to the lowest
    index); the posterior is :func:`dcem.core.posterior.soft_report_posteriors`.
    """
    arr = np.asarray(probs, dtype=float)
    if arr.ndim < 2 or arr.shape[-2:] != (panel.n_agents, panel.n_labels):
        raise InputError("probabilities",
                         f"expected shape (..., {panel.n_agents}, {panel.n_labels}), got {arr.shape}")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise InputError("probabilities", "entries must be finite and >= 0")
    sums = arr.sum(axis=-1, keepdims=True)
    if np.any(sums <= 0):
        raise InputError("probabilities", "each vector needs positive total mass")
    arr = arr / sums
    reports = np.argmax(arr, axis=-1)
    post = soft_report_posteriors(panel.confusion, panel.prior, arr)
    return _finish(panel, reports, post, cfg)
