"""Small worlds of probability-vector reports shared by the soft-report tests."""
from __future__ import annotations

import numpy as np

from dcem.core.panel import Panel, three_level_loss

__all__ = ["soft_panel", "soft_reports"]


def soft_panel(k: int = 3, n_agents: int = 2, seed: int = 0) -> Panel:
    """A panel with diagonal-leaning confusion rows of different sharpness per agent."""
    rng = np.random.default_rng(seed)
    conf = rng.dirichlet(np.ones(k), size=(n_agents, k)) + np.linspace(1.0, 3.0, n_agents)[:, None, None] * np.eye(k)
    return Panel(tuple(f"L{i}" for i in range(k)), conf / conf.sum(-1, keepdims=True), np.full(k, 1.0 / k),
                 three_level_loss(k, [0], 3.0))


def soft_reports(truth: np.ndarray, rounds: int, n_agents: int, k: int,
                 rng: np.random.Generator) -> np.ndarray:
    """(N, T, A, K) Dirichlet noise pulled towards the truth more each round."""
    n = len(truth)
    noise = rng.dirichlet(np.full(k, 0.8), size=(n, rounds, n_agents))
    peak = np.zeros((n, rounds, n_agents, k))
    peak[np.arange(n), :, :, truth] = 1.0
    w = np.linspace(0.0, 0.7, rounds)[None, :, None, None] * rng.random((n, 1, n_agents, 1))
    return (1 - w) * noise + w * peak
