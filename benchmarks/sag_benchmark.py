"""SAG speed on two cores: the batched, prefix-sharing runner against agent-after-agent.

Run with ``.venv/bin/python benchmarks/sag_benchmark.py [--quick] [--json PATH]``.

One loaded SmolLM2-135M (the packaged GGUF) serves every agent.  Measured in one process:

1. One SAG-6 item (MedQA, greedy rationales of ``--tokens`` tokens, ``--t-max`` rounds)
   played twice, interleaved: ``batched`` = :class:`runtime.llama_batch.BatchedLlamaTurns`
   (the shared transcript evaluated once per step, its KV state kept across steps and
   rounds, the agents' rationales decoded together as one multi-sequence batch) and
   ``sequential`` = the same runner with ``share_prefix=False`` (one agent after another,
   every prompt evaluated from scratch).  The two must give the same answers, the same
   rationales and distributions within 1e-6; ``sag6_speedup_vs_sequential`` is
   sequential time / batched time (median over ``--repeats``, alternating which goes first).
2. One single-agent answer (the ``single`` baseline on the same item, batched runner);
   ``sag6_over_single`` is the SAG-6 item's batched time over it.
3. Items per minute for SAG-6, SAG-10 and SAG-15 (batched) on ``--items`` MedQA items.
4. Peak RSS of the process (one shared model), ``resource.getrusage``.

No call log is used, so every turn reaches the model.  Prints a table and one JSON line.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from clinical.questions import load_benchmark  # noqa: E402
from runtime.factory import make_backend  # noqa: E402
from runtime.llama_batch import BatchedLlamaTurns  # noqa: E402
from sag.group.config import preset  # noqa: E402
from sag.debate.answer import answer_item  # noqa: E402
from sag.debate.results import ItemResult  # noqa: E402
from sag.retrieval import retrievers  # noqa: E402
from sag.debate.runners import DEFAULT_N_CTX, batch_width  # noqa: E402

MODEL = "smollm2-135m"


def _play(backend: Any, name: str, item: Any, corpora: dict, args: argparse.Namespace, *,
          share_prefix: bool = True) -> tuple[float, ItemResult]:
    """One item on a fresh runner (nothing kept from an earlier play), timed without the
    runner's creation; the runner has the width :mod:`sag.debate.runners` gives the group."""
    cfg = preset(name).with_changes(t_max=args.t_max, rationale_tokens=args.tokens)
    with BatchedLlamaTurns(backend, n_ctx=args.n_ctx, n_seq_max=batch_width(cfg) + 1,
                           share_prefix=share_prefix) as runner:
        start = time.perf_counter()
        result = answer_item(item, cfg, {MODEL: runner}, corpora)
        return time.perf_counter() - start, result


def _same(a: ItemResult, b: ItemResult) -> dict[str, Any]:
    """How far two plays of one item agree (answers, rationales, distributions)."""
    pairs = list(zip(a.outcome.messages, b.outcome.messages))
    turns = [(x, y) for x, y in pairs if x.phase != "retrieve"]
    gap = max((abs(p - q) for x, y in turns for p, q in zip(x.distribution, y.distribution)), default=0.0)
    return {"messages": len(pairs) == len(a.outcome.messages) == len(b.outcome.messages),
            "answers": all(x.answer == y.answer for x, y in turns),
            "rationales": all(x.rationale == y.rationale for x, y in turns),
            "max_probability_gap": gap, "group_answer": a.answer == b.answer}


def _speedup(backend: Any, item: Any, corpora: dict, args: argparse.Namespace) -> dict[str, Any]:
    times: dict[str, list[float]] = {"batched": [], "sequential": []}
    results: dict[str, ItemResult] = {}
    for rep in range(args.repeats):
        order = ("batched", "sequential") if rep % 2 == 0 else ("sequential", "batched")
        for which in order:
            seconds, results[which] = _play(backend, "sag-6", item, corpora, args,
                                            share_prefix=which == "batched")
            times[which].append(seconds)
    b, s = statistics.median(times["batched"]), statistics.median(times["sequential"])
    single = [_play(backend, "single", item, corpora, args)[0] for _ in range(args.repeats)]
    one = statistics.median(single)
    turns = sum(1 for m in results["batched"].outcome.messages if m.phase != "retrieve")
    return {"sag6_batched_s": b, "sag6_sequential_s": s, "sag6_speedup_vs_sequential": s / b,
            "single_s": one, "sag6_over_single": b / one, "sag6_turns": turns,
            "sag6_rounds": results["batched"].outcome.rounds, "same_outputs": _same(results["batched"],
                                                                                  results["sequential"]),
            "batched_times": times["batched"], "sequential_times": times["sequential"]}


def _throughput(backend: Any, items: list, corpora: dict, args: argparse.Namespace) -> dict[str, Any]:
    out = {}
    for name in ("sag-6", "sag-10", "sag-15"):
        seconds = sum(_play(backend, name, item, corpora, args)[0] for item in items)
        out[f"{name}_items_per_min"] = 60.0 * len(items) / seconds
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1 repeat, 1 item per size, 1 round")
    parser.add_argument("--json", type=Path, help="also write the JSON line here")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--tokens", type=int, default=32, help="rationale tokens per turn")
    parser.add_argument("--t-max", dest="t_max", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--items", type=int, default=3)
    parser.add_argument("--n-ctx", dest="n_ctx", type=int, default=DEFAULT_N_CTX, help="context per sequence")
    args = parser.parse_args()
    if args.quick:
        args.repeats, args.items, args.t_max = 1, 1, 1
    items = list(load_benchmark("medqa")[: args.items])
    corpora = retrievers(("medlineplus", "pubmedqa", "ddxplus"))
    backend = make_backend(MODEL, n_ctx=2048, n_threads=args.threads)
    figures: dict[str, Any] = {"benchmark": "sag", "model": MODEL, "cpus": os.cpu_count(), "threads": args.threads,
                               "python": platform.python_version(), "rationale_tokens": args.tokens,
                               "t_max": args.t_max, "repeats": args.repeats, "items": len(items)}
    figures.update(_speedup(backend, items[0], corpora, args))
    figures.update(_throughput(backend, items, corpora, args))
    figures["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(f"SAG-6 item: batched {figures['sag6_batched_s']:.2f} s, agent after agent "
          f"{figures['sag6_sequential_s']:.2f} s -> {figures['sag6_speedup_vs_sequential']:.2f}x; "
          f"single answer {figures['single_s']:.2f} s ({figures['sag6_over_single']:.1f}x); "
          f"same outputs: {figures['same_outputs']}")
    print("items/min: " + ", ".join(f"{k.split('_')[0]} {figures[k]:.2f}" for k in figures if k.endswith("per_min"))
          + f"; peak RSS {figures['peak_rss_mb']:.0f} MB")
    line = json.dumps(figures)
    print(line)
    if args.json:
        args.json.write_text(line + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
