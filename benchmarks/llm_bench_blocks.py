"""Paragraph-aligned against fixed evaluation blocks on the clinical cell, in the reverse order.

Run with ``.venv/bin/python benchmarks/llm_bench_blocks.py [--threads 2] [--json PATH]``.

The cell of ``benchmarks/llm_benchmark.py --reuse-only`` (DDXPlus-8, S1, seed 0, the
SmolLM2 pair on one model, CAL 8 / TEST 8, t_max 6, Free discussion 6 rounds, zero-shot,
agent-first prompts), in three runs in one process, each on a fresh store and with fresh
saved states: paragraph-aligned blocks with the TEST cases stopped when decided, then the
same with fixed 64-token blocks, then fixed blocks with the saved states off and no stop
(``llm_benchmark.py``'s reference run, ``reuse_off``).  ``llm_benchmark.py`` makes these runs
in the opposite order (reference first), so the two together show whether the order (a
machine getting busier or quieter during the runs) moves the ratios.

Prints TEST cases per minute of each run, ``paragraph_speedup`` (paragraph / reference),
``paragraph_over_fixed`` (paragraph / fixed, both stopped) and one JSON line (also written
to ``--json``).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import llama_cpp  # noqa: E402
from llm_bench_e2e import SMOL, bench_end_to_end  # noqa: E402
from llm_bench_util import maxrss_mb, timed  # noqa: E402

from runtime.factory import make_backend  # noqa: E402
from runtime.llama_backend import LlamaCppBackend  # noqa: E402

RUNS = (("paragraph_stop", "paragraph", None, True), ("fixed_stop", "fixed", None, True),
        ("reuse_off", "fixed", 0, False))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--n-cal", type=int, default=8)
    parser.add_argument("--n-test", type=int, default=8)
    parser.add_argument("--t-max", type=int, default=6)
    parser.add_argument("--free-rounds", type=int, default=6)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    began = time.perf_counter()
    load_avg = os.getloadavg()
    load_s, backend = timed(lambda: make_backend(SMOL, n_threads=args.threads))
    assert isinstance(backend, LlamaCppBackend)
    result: dict[str, Any] = {"benchmark": "llm_blocks", "date": time.strftime("%Y-%m-%d"),
                              "cpus": os.cpu_count(), "threads": args.threads,
                              "python": platform.python_version(), "llama_cpp_python": llama_cpp.__version__,
                              "loadavg_start": load_avg, "load_s": load_s}
    print(f"{os.cpu_count()} CPUs, load average at start {load_avg[0]:.2f}; threads {args.threads}", flush=True)
    for label, split, mb, stop in RUNS:
        backend.set_split(split, mb)  # fresh states and counts (mb None: the default budget)
        run = bench_end_to_end(backend, args, stop=stop)
        run["kv_stats"] = backend.kv.stats()
        result[label] = run
        print(f"  {label}: {run['test_cases_per_min']:.2f} TEST cases/min in {run['total_s']:.0f}s "
              f"({run['model_calls']} calls)", flush=True)
    rate = {label: result[label]["test_cases_per_min"] for label, *_ in RUNS}
    result["paragraph_speedup"] = rate["paragraph_stop"] / rate["reuse_off"]
    result["paragraph_over_fixed"] = rate["paragraph_stop"] / rate["fixed_stop"]
    result["stop_speedup"] = rate["fixed_stop"] / rate["reuse_off"]
    result["peak_rss_mb"] = maxrss_mb()
    result["loadavg_end"] = os.getloadavg()
    result["total_s"] = time.perf_counter() - began
    print(f"paragraph_speedup {result['paragraph_speedup']:.2f}x, paragraph_over_fixed "
          f"{result['paragraph_over_fixed']:.2f}x, stop_speedup {result['stop_speedup']:.2f}x")
    line = json.dumps(result)
    print(line)
    if args.json is not None:
        args.json.write_text(line + "\n")


if __name__ == "__main__":
    main()
