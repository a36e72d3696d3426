"""The live, round-by-round use of :func:`dcem.core.policy.policy_step` (as the deliberation
loop runs it), for comparing with the round-vectorised replay kernel."""
from __future__ import annotations

import numpy as np

from dcem.core.config import MediatorConfig
from dcem.core.energy import windowed_descent
from dcem.core.policy import Action, StepResult, policy_step
from dcem.core.state import RoundState

__all__ = ["round_by_round"]


def round_by_round(state: RoundState, cfg: MediatorConfig) -> dict[str, np.ndarray]:
    """StepResult fields stacked to (N, T); an explicit (N, A, K, K) issued array holds
    the steer history.  T may exceed t_max."""
    n, rounds = state.energy.shape
    descent = windowed_descent(state.energy, cfg.window)
    k = state.posteriors.shape[-1]
    issued = np.zeros((n, state.reports.shape[-1], k, k), dtype=bool)
    out: dict[str, list[np.ndarray]] = {f: [] for f in StepResult._fields}
    for i in range(rounds):
        view = RoundState(*(f[:, i] for f in state))
        step = policy_step(view, descent[:, i], issued, i + 1, cfg)
        for name in StepResult._fields:
            out[name].append(getattr(step, name))
        hit = np.flatnonzero(step.action == Action.DIFFERENTIAL_STEER)
        issued[hit, step.steer_agent[hit], step.steer_current[hit], step.steer_alternative[hit]] = True
    return {name: np.stack(v, axis=1) for name, v in out.items()}
