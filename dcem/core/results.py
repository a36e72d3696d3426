"""Result containers shared by the experiment runners, the store and the reports."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dcem.core.config import MediatorConfig
from dcem.core.panel import Panel
from dcem.core.policy import Action
from dcem.core.replay import Trajectory
from dcem.core.vocabulary import DEFAULT_METHODS

__all__ = ["METHODS", "MethodRun", "ScenarioResult", "decided_run"]

# The D-CEM experiments' method keys, in display order (see dcem.core.vocabulary).
METHODS = DEFAULT_METHODS


@dataclass(frozen=True, eq=False)
class MethodRun:
    """One method's outcome on a set of N cases: the project's one result type.

    Baselines (:mod:`dcem.core.baselines`), live deliberation
    (:func:`dcem.core.deliberation.deliberate`) and the experiments all return it;
    :func:`dcem.core.metrics.evaluate_run` adds the metrics against the truth.

    Attributes
    ----------
    method : str, one of :data:`METHODS`
    reports : int ndarray of shape (N, T, A)
        Every agent's reported label in every round that was played (T = 1 for the
        one-shot baselines, the free-discussion length for ``free``, ``t_max`` for the
        mediated methods, which record the full fixed horizon).
    outcome_action, outcome_decision, outcome_round : ndarrays of shape (N,)
        Terminal action code (:class:`~dcem.core.policy.Action`), decision and 1-based round.
    certified, budget : bool ndarrays of shape (N,)
    steer_features : dict mapping (case index, round) to the feature/rule names S(t)
        of the DIFFERENTIAL_STEER issued in that round (mediated methods only).
    metrics : dict of Appendix E metrics (see :func:`dcem.core.metrics.evaluate_run`);
        empty until the run is evaluated against the truth.
    probabilities : float ndarray (N, T, A, K) of the agents' probability reports when the
        agents report vectors (language-model agents), else None; ``reports`` are then the
        argmax labels and the mediated methods are scored on the vectors.
    turns : one dict per agent turn (language-model agents): case (index), round,
        agent, note, reply, label, probabilities, error, cached, cache_key.
    trajectory : the mediator's per-round record (energy, margin, descent, decision,
        action, steer target, certified, budget, each (N, T)) of a live mediated run,
        else None.
    """

    method: str
    reports: np.ndarray
    outcome_action: np.ndarray
    outcome_decision: np.ndarray
    outcome_round: np.ndarray
    certified: np.ndarray
    budget: np.ndarray
    metrics: dict[str, float] = field(default_factory=dict)
    steer_features: dict[tuple[int, int], tuple[str, ...]] = field(default_factory=dict)
    probabilities: np.ndarray | None = None
    turns: list[dict[str, Any]] = field(default_factory=list)
    trajectory: Trajectory | None = None


def decided_run(method: str, reports: np.ndarray, decision: np.ndarray,
                probabilities: np.ndarray | None = None) -> MethodRun:
    """A method that decides every case after the rounds it played (the baselines).

    reports : int (N, T, A); decision : int (N,).  Every case ends in STOP_AND_DECIDE at
    round T, never certified, never by the budget rule.
    """
    n, rounds = reports.shape[:2]
    return MethodRun(method, reports, np.full(n, int(Action.STOP_AND_DECIDE), dtype=np.int8),
                     np.asarray(decision, dtype=np.int64), np.full(n, rounds, dtype=np.int64),
                     np.zeros(n, dtype=bool), np.zeros(n, dtype=bool), probabilities=probabilities)


@dataclass(frozen=True, eq=False)
class ScenarioResult:
    """Everything one (scenario, seed) cell of a synthetic experiment produced.

    Attributes
    ----------
    scenario : str ("S1", "S2", "S3a" or "S3b"); seed : int
    panel : Panel with the calibration confusion matrices, prior and loss
    config : MediatorConfig actually used on the evaluation cases (fitted thresholds)
    case_ids : tuple of str, length N; truth : int ndarray (N,)
    features : int ndarray (N, d) of binary features (empty second axis if none)
    high_risk : tuple of label indices
    methods : dict method key -> MethodRun
    ablation : list of dict rows, each with keys xi, horizon and metric values
        (A1, A2, risk, sa_hr, escalation_rate ...)
    info : free-form JSON-ready details (calibration accuracies, fitted thresholds ...)
    texts : the case text each agent read (clinical runs; empty for the synthetic world);
    source_ids : the dataset's own id of each case (same length as texts)
    """

    scenario: str
    seed: int
    panel: Panel
    config: MediatorConfig
    case_ids: tuple[str, ...]
    truth: np.ndarray
    features: np.ndarray
    high_risk: tuple[int, ...]
    methods: dict[str, MethodRun]
    ablation: list[dict[str, float]] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)
    texts: tuple[str, ...] = ()
    source_ids: tuple[str, ...] = ()
