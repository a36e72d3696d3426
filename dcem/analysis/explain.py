"""The ``explain`` audit: one episode from a JSON description, every quantity shown.

Input (a JSON object)::

    {"labels": [...], "confusion": [C_1, C_2, ...], "prior": "uniform" | [...],
     "loss": L, "reports": [[label per agent] per round], "params": {...}}

``confusion[a][i][j] = Pr(agent a reports j | truth i)``, ``loss[d][y]``.  Parameters
missing from ``params`` take the :class:`~dcem.core.config.MediatorConfig` defaults.

Output: ``{"rounds": [...], "outcome": {"action", "decision", "rounds"}}``; see
:func:`explain_episode`.  Every number in the output is finite (a descent that is not
defined yet is ``null``), so it is strict JSON.  Validation is in
:mod:`dcem.analysis.explain_input`; at most ``MAX_ROUNDS`` (100,000) rounds are read and
the time grows linearly with them; at most 1,000 agents (the cap of a calibration set),
since the work of a round grows with the square of the agents.  The episode ends at the first terminal action; when the
reports run out first, the outcome action is ``"PENDING"`` with the last decision.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from dcem.analysis.explain_input import parse_episode
from dcem.core.config import MediatorConfig
from dcem.core.panel import Panel
from dcem.core.policy import NO_TARGET, Action
from dcem.core.replay import Trajectory, score_reports
from dcem.core.state import RoundState
from common.errors import InputError

__all__ = ["parse_episode", "explain_episode", "explain"]


def _num(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


def _check_finite(sc: Trajectory, st: RoundState, end: int) -> None:
    """Refuse to report a non-finite quantity (the bounds on losses and weights keep
    every quantity finite; this is the last guard, never a NaN in the output)."""
    for name in ("posteriors", "reliability", "weights", "pooled", "margin", "agent_risk",
                 "disagreement", "risk_term", "margin_term", "energy"):
        if not np.all(np.isfinite(getattr(st, name)[0, :end])):
            raise InputError("input", f"the {name.replace('_', ' ')} overflows; scale the loss and weights down")
    if np.any(np.isinf(sc.descent[0, :end])):
        raise InputError("input", "the energy descent overflows; scale the loss and weights down")


def explain_episode(panel: Panel, cfg: MediatorConfig, reports: np.ndarray) -> dict[str, Any]:
    """Every mediator quantity of every round up to the outcome, labels as strings."""
    sc = score_reports(panel, reports[None], cfg, detail=True)
    st = sc.state
    assert st is not None
    lab = panel.labels
    end = int(sc.outcome_round[0])
    _check_finite(sc, st, end)
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
