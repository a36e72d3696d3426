"""A pool of recorded synthetic deliberations with one fixed panel, for checking what a
calibration promises: many CAL/TEST splits of the same cases (risk control's check).

:func:`trajectory_pool` builds a cell's world as :func:`dcem.synthetic.experiment.run_cell`
does (the panel estimated on the training part's round-1 reports), then records
``n_cases`` fresh evaluation cases deliberated under ``base`` (every round up to its
``t_max``).  Replaying them under other thresholds keeps the recorded reports, as the
threshold fit and the what-if do.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dcem.core.config import MediatorConfig
from dcem.core.deliberation import deliberate
from dcem.core.panel import Panel
from dcem.core.steering import SteeringConfig
from dcem.synthetic.experiment import DEFAULT_CONFIG, _world
from dcem.synthetic.generator import HIGH_RISK
from dcem.synthetic.rule_agents import AGENT_SHARPNESS, KAPPA

__all__ = ["TrajectoryPool", "trajectory_pool", "round_one_cases"]


@dataclass(frozen=True)
class TrajectoryPool:
    """panel : the cell's calibrated panel; reports : int (N, T, A) recorded reports;
    truth : int (N,); high_risk : the high-risk labels."""

    panel: Panel
    reports: np.ndarray
    truth: np.ndarray
    high_risk: tuple[int, ...]


def trajectory_pool(scenario: str, seed: int, n_cases: int, *, base: MediatorConfig | None = None,
                    n_train: int = 20000, sharpness: float = AGENT_SHARPNESS, xi: float = 1.0) -> TrajectoryPool:
    """``n_cases`` deliberations of one synthetic (scenario, seed) world under ``base``."""
    cfg = base or DEFAULT_CONFIG
    world = _world(scenario, seed, cfg, SteeringConfig(), n_train, n_cases, sharpness=sharpness, kappa=KAPPA,
                   compliance="adopt", reports="sample")
    run = deliberate(world.panel, world.eval_agents(xi), cfg)
    return TrajectoryPool(world.panel, run.reports, np.asarray(world.ev.labels, dtype=np.intp), tuple(HIGH_RISK))


def round_one_cases(scenario: str, n: int, rng: np.random.Generator, *,
                    sharpness: float = AGENT_SHARPNESS) -> tuple[np.ndarray, np.ndarray]:
    """``n`` fresh cases of a scenario and its agents' unsteered round-1 reports, as the
    world's calibration draws them: (truth (n,), reports (n, A))."""
    from dcem.synthetic.generator import generate
    from dcem.synthetic.rule_agents import RuleAgents
    from dcem.synthetic.rule_agents import scenario as build_scenario

    cases = generate(n, rng)
    reports = RuleAgents(build_scenario(scenario), cases.features, rng, sharpness=sharpness).report(1)
    return np.asarray(cases.labels, dtype=np.intp), np.asarray(reports)
