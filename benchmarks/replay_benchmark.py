"""Replay benchmark: vectorised re-scoring of stored runs vs a per-case loop.

Run with ``.venv/bin/python benchmarks/replay_benchmark.py [--cases N] [--loop-cases M]``.

Builds a DDXPlus-like panel (K = 8 labels, 2 agents, three-level loss with 4 high-risk
classes and l_high = 5, confusion matrices with 0.6-0.8 on the diagonal), simulates
N cases x 6 rounds of label reports, then times in one process (best of several repeats):

(a) ``score_reports`` (per-tuple table + batched policy) under a new threshold config;
(b) a per-case loop: ``score_reports`` on one case at a time with ``table=False``,
    measured on M cases and extrapolated to N;
(c) ``score_probabilities`` (the general probability-vector path) on the same reports
    given as one-hot vectors.

Prints mediator steps per second (cases x rounds / time), the ratios, and one JSON line.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dcem.core.config import MediatorConfig  # noqa: E402
from dcem.core.panel import Panel, three_level_loss  # noqa: E402
from dcem.core.replay import score_probabilities, score_reports  # noqa: E402

K, AGENTS, ROUNDS = 8, 2, 6
HIGH_RISK = (0, 2, 4, 6)


def build_panel(rng: np.random.Generator) -> Panel:
    """Confusion rows: diagonal drawn in [0.6, 0.8], the rest spread by a Dirichlet."""
    confusion = np.empty((AGENTS, K, K))
    for a in range(AGENTS):
        for i in range(K):
            diag = rng.uniform(0.6, 0.8)
            off = rng.dirichlet(np.full(K - 1, 2.0)) * (1.0 - diag)
            confusion[a, i] = np.insert(off, i, diag)
    prior = rng.dirichlet(np.full(K, 8.0))
    return Panel(tuple(f"dx{i}" for i in range(K)), confusion, prior,
                 three_level_loss(K, HIGH_RISK, 5.0))


def simulate_reports(panel: Panel, n: int, rng: np.random.Generator) -> np.ndarray:
    """Round 1 from each agent's confusion row; later rounds keep the previous report
    with probability 0.7 and otherwise redraw it from the confusion row."""
    truth = rng.choice(K, size=n, p=panel.prior)
    reports = np.empty((n, ROUNDS, AGENTS), dtype=np.int64)
    for a in range(AGENTS):
        cdf = np.cumsum(panel.confusion[a][truth], axis=1)  # (n, K)
        for t in range(ROUNDS):
            draw = (rng.random((n, 1)) < cdf).argmax(axis=1)
            keep = rng.random(n) < 0.7 if t else np.zeros(n, dtype=bool)
            reports[:, t, a] = np.where(keep, reports[:, t - 1, a] if t else draw, draw)
    return reports


def best_time(fn: Callable[[], object], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--loop-cases", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()
    rng = np.random.default_rng(20261121)
    panel = build_panel(rng)
    reports = simulate_reports(panel, args.cases, rng)
    one_hot = np.eye(K)[reports]
    cfg = MediatorConfig(eps_safe=2.0, eps_low=3.5, m_safe=0.3, delta=0.05, s_asym=1.0,
                         window=2, t_max=ROUNDS)
    steps = args.cases * ROUNDS

    fast = score_reports(panel, reports, cfg)  # warm-up and reference result
    t_table = best_time(lambda: score_reports(panel, reports, cfg), args.repeats)
    t_prob = best_time(lambda: score_probabilities(panel, one_hot, cfg), max(3, args.repeats // 5))
    m = min(args.loop_cases, args.cases)

    def loop() -> None:
        for i in range(m):
            score_reports(panel, reports[i:i + 1], cfg, table=False)

    loop()
    t_loop = best_time(loop, 3) / m * args.cases  # extrapolated to all cases
    slow = [score_reports(panel, reports[i:i + 1], cfg, table=False) for i in range(m)]
    assert all(np.array_equal(s.action[0], fast.action[i]) for i, s in enumerate(slow))
    assert np.array_equal(score_probabilities(panel, one_hot, cfg).action, fast.action)

    mix = np.bincount(fast.outcome_action, minlength=5) / args.cases
    result = {
        "benchmark": "replay", "cases": args.cases, "rounds": ROUNDS, "labels": K,
        "agents": AGENTS, "steps": steps, "cpus": os.cpu_count(),
        "python": platform.python_version(), "numpy": np.__version__,
        "table_seconds": t_table, "table_steps_per_s": steps / t_table,
        "prob_seconds": t_prob, "prob_steps_per_s": steps / t_prob,
        "loop_seconds_extrapolated": t_loop, "loop_cases_measured": m,
        "loop_steps_per_s": steps / t_loop,
        "ratio_table_vs_loop": t_loop / t_table, "ratio_prob_vs_loop": t_loop / t_prob,
        "outcome_mix": {"decide": mix[2], "escalate": mix[3], "pending": mix[4]},
        "steer_share": float(np.mean(fast.action == 1)),
    }
    print(f"panel K={K}, A={AGENTS}; {args.cases} cases x {ROUNDS} rounds = {steps} steps")
    print(f"(a) score_reports, table:       {t_table * 1e3:8.2f} ms  "
          f"{steps / t_table / 1e6:7.2f} M steps/s")
    print(f"(c) score_probabilities:        {t_prob * 1e3:8.2f} ms  "
          f"{steps / t_prob / 1e6:7.2f} M steps/s")
    print(f"(b) per-case loop (extrap.):    {t_loop * 1e3:8.0f} ms  "
          f"{steps / t_loop / 1e3:7.2f} k steps/s  (measured on {m} cases)")
    print(f"ratio table / loop: {t_loop / t_table:.0f}x;  probabilities / loop: "
          f"{t_loop / t_prob:.0f}x")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
