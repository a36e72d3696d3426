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

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from llm_bench_e2e import cell_parser, fresh_run, finish_cell_benchmark, start_cell_benchmark  # noqa: E402

RUNS = (("paragraph_stop", "paragraph", None, True), ("fixed_stop", "fixed", None, True),
        ("reuse_off", "fixed", 0, False))


def main() -> None:
    args = cell_parser(__doc__.splitlines()[0]).parse_args()
    backend, result = start_cell_benchmark("llm_blocks", args)
    for label, split, mb, stop in RUNS:
        result[label] = run = fresh_run(backend, args, split=split, mb=mb, stop=stop)
        print(f"  {label}: {run['test_cases_per_min']:.2f} TEST cases/min in {run['total_s']:.0f}s "
              f"({run['model_calls']} calls)", flush=True)
    rate = {label: result[label]["test_cases_per_min"] for label, *_ in RUNS}
    result["paragraph_speedup"] = rate["paragraph_stop"] / rate["reuse_off"]
    result["paragraph_over_fixed"] = rate["paragraph_stop"] / rate["fixed_stop"]
    result["stop_speedup"] = rate["fixed_stop"] / rate["reuse_off"]
    print(f"paragraph_speedup {result['paragraph_speedup']:.2f}x, paragraph_over_fixed "
          f"{result['paragraph_over_fixed']:.2f}x, stop_speedup {result['stop_speedup']:.2f}x")
    finish_cell_benchmark(result, args)


if __name__ == "__main__":
    main()
