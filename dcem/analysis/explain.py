"""The ``explain`` audit: one episode from a JSON description, every quantity shown.

Input (a JSON object)::

    {"labels": [...], "confusion": [C_1, C_2, ...], "prior": "uniform" | [...],
     "loss": L, "reports": [[label per agent] per round], "params": {...}}

``confusion[a][i][j] = Pr(agent a reports j | truth i)``, ``loss[d][y]``.  Parameters
missing from ``params`` take the :class:`~dcem.core.config.MediatorConfig` defaults.

Output: ``{"rounds": [...], "outcome": {"action", "decision", "rounds"}}``; see
:func:`explain_episode`.  The episode ends at the first terminal action; when the
reports run out first, the outcome action is ``"PENDING"`` with the last decision.
"""
from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np

from dcem.core.config import MediatorConfig
from dcem.core.panel import Panel
from dcem.core.policy import NO_TARGET, Action
from dcem.core.replay import score_reports
from dcem.errors import InputError

__all__ = ["parse_episode", "explain_episode", "explain"]

_KEYS = ("labels", "confusion", "prior", "loss", "reports", "params")


def _matrix(value: Any, field: str) -> np.ndarray:
    if not isinstance(value, list):
        raise InputError(field, "must be a JSON array")
    try:
        arr = np.array(value, dtype=float)
    except (TypeError, ValueError):
        raise InputError(field, "must be a rectangular array of numbers") from None
    return arr


def parse_episode(doc: Any) -> tuple[Panel, MediatorConfig, np.ndarray]:
    """Validate an explain document; return the panel, the config and reports (T, A)."""
    if not isinstance(doc, Mapping):
        raise InputError("input", "must be a JSON object")
    unknown = sorted(set(doc) - set(_KEYS))
    if unknown:
        raise InputError(unknown[0], f"unknown key (expected {', '.join(_KEYS)})")
    for key in ("labels", "confusion", "loss", "reports"):
        if key not in doc:
            raise InputError(key, "is required")
    labels = doc["labels"]
    if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels):
        raise InputError("labels", "must be an array of strings")
    k = len(labels)
    confusion = _matrix(doc["confusion"], "confusion")
    if confusion.ndim != 3:
        raise InputError("confusion", f"must be a list of {k}x{k} matrices, one per agent")
    prior_doc = doc.get("prior", "uniform")
    if prior_doc == "uniform":
        prior = np.full(k, 1.0 / max(k, 1))
    elif isinstance(prior_doc, str):
        raise InputError("prior", f'must be "uniform" or an array of {k} numbers, got {prior_doc!r}')
    else:
        prior = _matrix(prior_doc, "prior")
    panel = Panel(tuple(labels), confusion, prior, _matrix(doc["loss"], "loss"))
    params = doc.get("params", {})
    if not isinstance(params, Mapping):
        raise InputError("params", "must be a JSON object")
    if "prior" in params:
        raise InputError("params.prior", "give the prior at the top level")
    cfg = MediatorConfig.from_mapping(params)
    rounds = doc["reports"]
    if not isinstance(rounds, list) or not rounds:
        raise InputError("reports", "must be a non-empty array of rounds")
    out = np.empty((len(rounds), panel.n_agents), dtype=np.int64)
    for t, row in enumerate(rounds):
        if not isinstance(row, list) or len(row) != panel.n_agents:
            raise InputError("reports", f"round {t + 1} must list one label for each of the {panel.n_agents} agents")
        for a, label in enumerate(row):
            if not isinstance(label, str) or label not in panel.labels:
                raise InputError("reports", f"round {t + 1} agent {a}: unknown label {label!r}")
            out[t, a] = panel.labels.index(label)
    return panel, cfg, out


def _num(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


def explain_episode(panel: Panel, cfg: MediatorConfig, reports: np.ndarray) -> dict[str, Any]:
    """Every mediator quantity of every round up to the outcome, labels as strings."""
    sc = score_reports(panel, reports[None], cfg, detail=True)
    st = sc.state
    assert st is not None
    lab = panel.labels
    end = int(sc.outcome_round[0])
    rounds = []
    for i in range(end):
        action = Action(int(sc.action[0, i]))
        steer = None
        if action == Action.DIFFERENTIAL_STEER and sc.steer_agent[0, i] != NO_TARGET:
            steer = {"agent": int(sc.steer_agent[0, i]), "current": lab[int(sc.steer_current[0, i])],
                     "alternative": lab[int(sc.steer_alternative[0, i])]}
        rounds.append({
            "round": i + 1,
            "posteriors": st.posteriors[0, i].tolist(),
            "reliability": st.reliability[0, i].tolist(),
            "weights": st.weights[0, i].tolist(),
            "pooled": st.pooled[0, i].tolist(),
            "decision": lab[int(st.decision[0, i])],
            "runner_up": lab[int(st.runner_up[0, i])],
            "margin": float(st.margin[0, i]),
            "agent_risk": st.agent_risk[0, i].tolist(),
            "dangerous_miss": [lab[int(z)] for z in st.dangerous_miss[0, i]],
            "energy": float(st.energy[0, i]),
            "energy_terms": {"disagreement": float(st.disagreement[0, i]),
                             "risk": float(st.risk_term[0, i]),
                             "margin": float(st.margin_term[0, i])},
            "descent": _num(float(sc.descent[0, i])),
            "action": action.name,
            "steer": steer,
            "certified": bool(sc.certified[0, i]),
            "budget": bool(sc.budget[0, i]),
        })
    outcome = {"action": Action(int(sc.outcome_action[0])).name,
               "decision": lab[int(sc.outcome_decision[0])], "rounds": end}
    return {"rounds": rounds, "outcome": outcome}


def explain(doc: Any) -> dict[str, Any]:
    """Parse and explain an episode document in one call."""
    return explain_episode(*parse_episode(doc))
