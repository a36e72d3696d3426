"""Hypothesis strategies shared by the D-CEM core tests.

Numbers are drawn from small integer grids (then normalised) rather than arbitrary
floats: that still covers exact ties and structural symmetries, while keeping values
away from subnormals whose rounding would make most comparisons numerically fragile.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import strategies as st

from dcem.core.config import MediatorConfig
from dcem.core.panel import Panel

__all__ = ["stochastic_rows", "panels", "configs", "trajectories", "scenarios", "distributions"]


@st.composite
def stochastic_rows(draw: Any, k: int) -> list[float]:
    weights = draw(st.lists(st.integers(1, 60), min_size=k, max_size=k))
    return [w / sum(weights) for w in weights]


@st.composite
def distributions(draw: Any, k: int) -> list[float]:
    """A strictly positive probability vector of length k."""
    return draw(stochastic_rows(k))


@st.composite
def _loss(draw: Any, k: int) -> list[list[float]]:
    kind = draw(st.sampled_from(["three_level", "zero_diagonal", "arbitrary"]))
    if kind == "three_level":
        high = draw(st.sets(st.integers(0, k - 1), max_size=k))
        l_high = draw(st.integers(1, 20)) / 2
        return [[0.0 if d == y else (l_high if y in high else 1.0) for y in range(k)]
                for d in range(k)]
    grid = st.integers(0, 40).map(lambda v: v / 4)
    rows = draw(st.lists(st.lists(grid, min_size=k, max_size=k), min_size=k, max_size=k))
    if kind == "zero_diagonal":
        for d in range(k):
            rows[d][d] = 0.0
    return rows


@st.composite
def panels(draw: Any, min_k: int = 2, max_k: int = 6, min_a: int = 2, max_a: int = 4) -> Panel:
    k = draw(st.integers(min_k, max_k))
    n_agents = draw(st.integers(min_a, max_a))
    confusion = [[draw(stochastic_rows(k)) for _ in range(k)] for _ in range(n_agents)]
    prior = draw(st.one_of(st.just([1.0 / k] * k), distributions(k)))
    labels = tuple(f"L{i}" for i in range(k))
    return Panel(labels, np.array(confusion), np.array(prior), np.array(draw(_loss(k))))


def _unit(lo: int, hi: int, scale: float) -> st.SearchStrategy[float]:
    return st.integers(lo, hi).map(lambda v: v * scale)


@st.composite
def configs(draw: Any, max_t: int = 8) -> MediatorConfig:
    eps_safe = draw(_unit(0, 400, 0.01))
    eps_low = eps_safe + draw(_unit(1, 400, 0.01))
    return MediatorConfig(
        alpha=draw(_unit(0, 20, 0.1)), beta=draw(_unit(0, 20, 0.1)),
        gamma=draw(_unit(0, 20, 0.1)), lambda_pool=draw(_unit(0, 30, 0.1)),
        rho_min=draw(_unit(1, 99, 0.01)), omega_min=draw(_unit(0, 50, 0.01)),
        eps_safe=eps_safe, eps_low=eps_low, m_safe=draw(_unit(0, 200, 0.01)),
        delta=draw(_unit(0, 100, 0.01)), window=draw(st.integers(1, 3)),
        s_asym=draw(_unit(0, 300, 0.01)), t_max=draw(st.integers(1, max_t)),
        steer_gate=draw(st.sampled_from(["risk", "reliability_gap"])),
        escalation=draw(st.booleans()),
    )


@st.composite
def trajectories(draw: Any, k: int, n_agents: int, max_cases: int = 6,
                 max_rounds: int = 8) -> np.ndarray:
    """Reports of shape (N, T, A).  Each case cycles through a small palette of report
    tuples so that repeats (steer dedup, stagnation) are common."""
    n = draw(st.integers(1, max_cases))
    rounds = draw(st.integers(1, max_rounds))
    label = st.integers(0, k - 1)
    cases = []
    for _ in range(n):
        palette = draw(st.lists(st.tuples(*[label] * n_agents), min_size=1, max_size=4))
        picks = draw(st.lists(st.integers(0, len(palette) - 1), min_size=rounds,
                              max_size=rounds))
        cases.append([palette[p] for p in picks])
    return np.array(cases, dtype=np.int64).reshape(n, rounds, n_agents)


@st.composite
def scenarios(draw: Any) -> tuple[Panel, MediatorConfig, np.ndarray]:
    panel = draw(panels())
    cfg = draw(configs())
    reports = draw(trajectories(panel.n_labels, panel.n_agents))
    return panel, cfg, reports
