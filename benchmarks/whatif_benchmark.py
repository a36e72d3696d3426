"""What-if benchmark: re-scoring a whole stored run for the dashboard.

Run with ``.venv/bin/python benchmarks/whatif_benchmark.py [--seeds 25] [--n-eval 100]``.

Builds a synthetic run in a temporary DuckDB file: the four scenarios x ``--seeds``
seeds, each cell from ``dcem.synthetic.experiment.run_cell(..., n_train=2000,
n_eval=N, ablation=False)`` (default 4 x 25 cells x 100 cases = 10,000 cases x 12
rounds), then times in one process:

(a) ``load_run_replay`` (one ``Store.load_cell`` per cell), once;
(b) ``rescore`` under a new configuration for every cell (the dashboard's sliders),
    best of ``--repeats``: "warm" reuses the per-cell mediator tables memoised on the
    replay (a threshold moved), "cold" clears them first (first call, or a new loss or
    energy weight);
(c) ``rescore`` with each cell's original (fitted) configuration, and with a new loss
    (warm);
(d) a 20-point ``sweep`` of eps_safe (best of 3).

Prints the timings and one JSON line.  The target is (b) under 200 ms.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dcem.analysis.whatif import load_run_replay, rescore, sweep  # noqa: E402
from dcem.core.config import MediatorConfig  # noqa: E402
from dcem.core.vocabulary import SCENARIOS  # noqa: E402
from dcem.store.database import Store  # noqa: E402
from dcem.synthetic.experiment import run_cell  # noqa: E402


def best_of(fn: Callable[[], object], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=25)
    parser.add_argument("--n-eval", type=int, default=100)
    parser.add_argument("--n-train", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        store = Store(Path(tmp) / "whatif.duckdb")
        start = time.perf_counter()
        store.ensure_run("bench", kind="synthetic", spec={"benchmark": "whatif"},
                         config=MediatorConfig(prior="empirical"), seeds=list(range(args.seeds)))
        for scenario in SCENARIOS:
            for seed in range(args.seeds):
                store.save_cell("bench", run_cell(scenario, seed, n_train=args.n_train, n_eval=args.n_eval,
                                                  ablation=False))
        setup = time.perf_counter() - start
        start = time.perf_counter()
        replay = load_run_replay(store, "bench")
        load = time.perf_counter() - start
        store.close()

    cells, cases = len(replay.cells), replay.n_cases
    rounds = replay.cells[0].reports.shape[1]
    cfg = MediatorConfig(prior="empirical", eps_safe=3.0, eps_low=4.0, m_safe=0.5, delta=0.1,
                         s_asym=0.8, t_max=12)
    new_loss = np.array(replay.cells[0].panel.loss) * 2.0
    rescore(replay, config=cfg)  # warm-up
    t_config = best_of(lambda: rescore(replay, config=cfg), args.repeats)

    def cold() -> None:
        replay._tables.clear()
        rescore(replay, config=cfg)

    t_cold = best_of(cold, args.repeats)
    t_original = best_of(lambda: rescore(replay), args.repeats)
    t_loss = best_of(lambda: rescore(replay, config=cfg, loss=new_loss), args.repeats)
    values = np.linspace(0.0, 6.0, 20)
    t_sweep = best_of(lambda: sweep(replay, parameter="eps_safe", values=values, config=cfg), 3)
    result = rescore(replay, config=cfg)
    table = sweep(replay, parameter="eps_safe", values=values, config=cfg)

    print(f"run: {cells} cells, {cases} cases x {rounds} rounds (setup {setup:.1f} s)")
    print(f"(a) load_run_replay                  {load * 1e3:9.1f} ms (once)")
    print(f"(b) rescore, new config, warm        {t_config * 1e3:9.1f} ms (best of {args.repeats})")
    print(f"    rescore, new config, cold        {t_cold * 1e3:9.1f} ms")
    print(f"(c) rescore, original configs        {t_original * 1e3:9.1f} ms")
    print(f"    rescore, new config + new loss   {t_loss * 1e3:9.1f} ms")
    print(f"(d) sweep eps_safe, 20 points        {t_sweep * 1e3:9.1f} ms "
          f"({int(table['valid'].sum())} valid)")
    print(f"outcome mix under the new config: {result.outcome_mix}")
    print(json.dumps({
        "benchmark": "whatif", "cells": cells, "cases": cases, "rounds": rounds,
        "cpus": os.cpu_count(), "python": platform.python_version(), "numpy": np.__version__,
        "setup_seconds": setup, "load_seconds": load, "rescore_config_seconds": t_config,
        "rescore_config_cold_seconds": t_cold,
        "rescore_original_seconds": t_original, "rescore_loss_seconds": t_loss,
        "sweep20_seconds": t_sweep, "sweep_valid_points": int(table["valid"].sum()),
        "outcome_mix": result.outcome_mix,
    }))


if __name__ == "__main__":
    main()
