"""Prompt layouts with solved examples: one clinical cell with agent-first, then case-first prompts.

Run with ``.venv/bin/python benchmarks/llm_bench_layout.py [--few-shot 3] [--json PATH]``.

The cell of ``benchmarks/llm_benchmark.py`` part 3 (DDXPlus-8, S1, seed 0, the packaged
SmolLM2 as both agents on one model, saved KV states on, TEST cases stopped when decided)
with ``--few-shot`` solved CAL cases in every prompt, the setting of the informative-panel
grid.  The examples come before the case and are the same for both agents, so the
``case-first`` layout (each agent's name and role after the case) lets agent B restore
agent A's evaluation of the examples and the case; ``agent-first`` prompts differ from the
fourth token on.  The two runs are made in one process on fresh stores, agent-first
first; ``layout_speedup`` = case-first TEST cases/min / agent-first's.  The layouts' prompts
differ, so their answers (and the number of calls) may differ too: the per-call figures
(scored seconds per scored call) are the like-for-like comparison.

Prints one line per run and one JSON line (also written to ``--json`` when given).
"""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from llm_bench_e2e import cell_parser, fresh_run, finish_cell_benchmark, start_cell_benchmark  # noqa: E402


def per_call(run: dict[str, Any]) -> dict[str, float]:
    """Seconds per scored call and per cue call, and the share of scored prompt tokens
    restored from saved KV states."""
    stats = run["backend_stats"]
    return {"score_s_per_call": stats["score_s"] / max(stats["score_calls"], 1),
            "generate_s_per_call": stats["generate_s"] / max(stats["generate_calls"], 1),
            "scored_reused_share": stats["score_reused_tokens"] / max(stats["prompt_tokens"], 1)}


def main() -> None:
    parser = cell_parser(__doc__.splitlines()[0])
    parser.add_argument("--few-shot", type=int, default=3, help="solved CAL cases per prompt (default 3)")
    args = parser.parse_args()
    backend, result = start_cell_benchmark("llm_layout", args)
    result["few_shot_k"] = args.few_shot
    for layout in ("agent-first", "case-first"):
        result[layout] = run = fresh_run(backend, args, stop=True, layout=layout)
        run.update(per_call(run))
        print(f"  {layout}: {run['test_cases_per_min']:.2f} TEST cases/min in {run['total_s']:.0f}s, "
              f"{run['backend_stats']['score_calls']} scored calls at {run['score_s_per_call']:.3f}s, "
              f"{run['scored_reused_share']:.1%} of scored prompt tokens restored", flush=True)
    first, case = result["agent-first"], result["case-first"]
    result["layout_speedup"] = case["test_cases_per_min"] / first["test_cases_per_min"]
    result["score_call_speedup"] = first["score_s_per_call"] / case["score_s_per_call"]
    print(f"case-first / agent-first: {result['layout_speedup']:.2f}x TEST cases/min, "
          f"{result['score_call_speedup']:.2f}x per scored call")
    finish_cell_benchmark(result, args)


if __name__ == "__main__":
    main()
