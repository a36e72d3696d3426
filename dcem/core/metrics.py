"""Risk-aware evaluation metrics of Appendix E.

All functions take per-case arrays of length N: the terminal pooled decision ``d1``, the
terminal action (an :class:`~dcem.core.policy.Action` code), the number of rounds used and the
true label.  High-cost classes are given as label indices.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Mapping, Sequence

import numpy as np

from dcem.core.policy import Action
from dcem.core.results import MethodRun

__all__ = ["METRIC_NAMES", "episode_metrics", "evaluate_run", "single_agent_high_risk_miss"]

METRIC_NAMES = (
    "risk", "system_risk", "accuracy", "high_risk_miss", "harmful_consensus",
    "certified_rate", "escalation_rate", "avg_rounds", "decided_rate",
)


def episode_metrics(decision: np.ndarray, action: np.ndarray, rounds: np.ndarray,
                    truth: np.ndarray, loss: np.ndarray, high_risk: Sequence[int],
                    certified: np.ndarray | None = None) -> dict[str, float]:
    """Metrics of Appendix E for N episodes.

    risk = mean L(d1, y); system_risk = mean 1[u != ESC] L(d1, y); accuracy = mean
    1[d1 = y]; high_risk_miss = miss rate among cases whose truth is high-cost (NaN when
    there is none); harmful_consensus = mean 1[d1 != y, y high-cost, u != ESC];
    certified_rate = share of STOP_AND_DECIDE outcomes (only those flagged in
    ``certified`` when it is given, so budget decisions are not counted as certified);
    decided_rate = share of every STOP_AND_DECIDE outcome, budget decisions included
    (App. E's "Certified", 1[u = DEC]); escalation_rate = share of STOP_AND_ESCALATE;
    avg_rounds = mean rounds.
    """
    decision = np.asarray(decision, dtype=np.intp)
    truth = np.asarray(truth, dtype=np.intp)
    action = np.asarray(action)
    n = decision.shape[0]
    if n == 0:
        return {name: float("nan") for name in METRIC_NAMES}
    cert = np.ones(n, dtype=bool) if certified is None else np.asarray(certified, dtype=bool)
    lost = loss[decision, truth]
    esc = action == Action.STOP_AND_ESCALATE
    wrong = decision != truth
    high = np.isin(truth, np.asarray(list(high_risk), dtype=np.intp))
    return {
        "risk": float(lost.mean()),
        "system_risk": float((lost * ~esc).mean()),
        "accuracy": float((~wrong).mean()),
        "high_risk_miss": float(wrong[high].mean()) if high.any() else float("nan"),
        "harmful_consensus": float((wrong & high & ~esc).mean()),
        "certified_rate": float(((action == Action.STOP_AND_DECIDE) & cert).mean()),
        "escalation_rate": float(esc.mean()),
        "avg_rounds": float(np.mean(rounds)),
        "decided_rate": float((action == Action.STOP_AND_DECIDE).mean()),
    }


def single_agent_high_risk_miss(agent_reports: np.ndarray, truth: np.ndarray,
                                high_risk: Sequence[int]) -> float:
    """SA-HR of Table 5: the largest per-agent miss rate on high-cost truths.

    agent_reports : int ndarray of shape (N, A), each agent's report at the checkpoint.
    """
    truth = np.asarray(truth, dtype=np.intp)
    high = np.isin(truth, np.asarray(list(high_risk), dtype=np.intp))
    if not high.any():
        return float("nan")
    misses = agent_reports[high] != truth[high, None]
    return float(misses.mean(axis=0).max())


def evaluate_run(run: MethodRun, *, truth: np.ndarray, loss: np.ndarray, high_risk: Sequence[int],
                 extra: Mapping[str, float] | None = None) -> MethodRun:
    """``run`` with its Appendix E metrics against ``truth`` (plus ``extra`` ones)."""
    metrics = episode_metrics(run.outcome_decision, run.outcome_action, run.outcome_round, truth, loss,
                              high_risk, run.certified)
    metrics.update(extra or {})
    return replace(run, metrics=metrics)
