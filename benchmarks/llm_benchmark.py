"""LLM-agent benchmark: scored agent reports vs raw llama.cpp, end-to-end DDXPlus runs, memory.

Run with ``.venv/bin/python benchmarks/llm_benchmark.py [--quick] [--json PATH]``.

Uses the packaged GGUF models (SmolLM2-135M-Instruct Q4_1, and Gemma-3-270M Q4_K_M as a
second row unless ``--models`` says otherwise) on real DDXPlus-8 cases, with the
scored-mode messages of :class:`dcem_clinical.agent.DiagnosticAgent` (``messages(case.text)``).
Everything is measured in one process on one ``Llama`` instance per model; the compared
variants are interleaved case by case (alternating which goes first), so load from
other jobs on the machine affects both sides alike.  Reported values are medians.

1. Per agent report, on ``--cases`` distinct cases (so nothing is reused):
   raw   = ``llm.reset(); llm.eval(tokens)`` (one call: llama.cpp's own batching,
           n_batch 512) + reading the last logits (``llama_get_logits_ith(ctx, -1)``);
   cold  = ``backend.score_options(messages, letters)`` after ``llm.reset()`` (chat
           template, tokenisation, evaluation in BLOCK-token blocks + the last token
           alone, log-softmax of the option letters);
   reuse = the next-round call right after ``cold``: the same case re-scored with the
           mediator's CONTINUE note appended (KV prefix reuse, ``backend.last_reused``);
           its speedup is against a cold ``score_options`` of the same noted prompt, and
           the two must give identical log-probabilities.
   Target: raw/cold time (= our throughput / raw throughput) >= 0.8.
2. Block-size sweep (``--blocks``, on ``--sweep-cases`` cases): raw, and the cold and the
   reuse evaluation with ``runtime.llama_backend.BLOCK`` monkeypatched (for this measurement
   only); also raw and the default block on one thread (``llama_set_n_threads`` on the
   same context), all interleaved with the order rotated per case.
3. End to end: ``run_clinical`` on a fresh temporary DuckDB, SmolLM2 as both agents
   (``smollm2-135m,smollm2-135m``, one shared model, ``--threads`` threads), one
   scenario (S1), seed 0, ``--n-cal``/``--n-test`` cases, ``--t-max`` / ``--free-rounds``;
   TEST cases per minute including the CAL phase, the wall time of each phase (split at
   the last CAL call in the call log), model time by call kind; then the same cell
   re-run (``run_clinical_cell`` with the same run id: every answer from the call log,
   checked to add no call-log row).
   Reuse off and on: the end-to-end run is made twice in one process, each on a fresh
   store, first with the saved KV states switched off (``kv_cache_mb`` 0: only what the
   context holds is reused, the code path before the saved states), then on (the
   backend's default budget); ``reuse_speedup`` = TEST cases/min on / off,
   ``reused_token_share`` = prompt tokens taken from the KV cache / all prompt tokens the
   model evaluated in the run with reuse on (scored calls and cue generations; the scored
   calls alone under ``reused_token_share_scored``), ``peak_rss_mb`` the process's peak.
   A third run keeps the states on and stops each TEST case when D-CEM decides it
   (``stop_when_decided``): ``stop_speedup`` = its TEST cases/min / reuse off's.  A
   fourth run is the third with the ``case-first`` prompt layout (each agent's name and
   role after the case, so agent B restores agent A's evaluation of the case):
   ``case_first_speedup`` = its TEST cases/min / reuse off's, its cached share under
   ``reused_token_share_case_first``.  (The layout changes the prompts, so its answers
   may differ from the other runs'.)  A fifth run is the third with paragraph-aligned
   evaluation blocks (``LlamaCppBackend(split="paragraph")``, the clinical runner's):
   ``paragraph_speedup`` = its TEST cases/min / reuse off's, its cached share under
   ``reused_token_share_paragraph``.  (The blocks change llama.cpp's float grouping, so its
   answers may differ from the third run's by float noise.)
   ``--reuse-only`` runs just these.
4. Peak memory, ``resource.getrusage(RUSAGE_SELF).ru_maxrss``, after loading each model
   and after the end-to-end run (plus the current RSS from /proc/self/status).

Sizes: by default part 1 on 10 cases (6 with Gemma), the sweep on 3 cases with BLOCK
64/128/256/512, the runs with n_cal 8, n_test 8, t_max 6, free_rounds 6 (a DDXPlus-8 S1 cell at the default
horizon); ``--quick``: 3 cases, SmolLM2 only, no sweep, a run with n_cal 4, n_test 2,
t_max 2, free_rounds 2 (about 2 minutes on idle cores, estimated).  Under a concurrent
llama.cpp job every size takes several times longer.  Every size has its own option.
``--background-load THREADS`` runs a competing llama.cpp scoring loop in a child process
during the benchmark (another LLM job on the same cores).

Prints a results table and one JSON line (also written to ``--json`` when given).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import llama_cpp  # noqa: E402
from llm_bench_e2e import bench_reuse_pair  # noqa: E402
from llm_bench_util import cold_score, maxrss_mb, med, pick_cases, raw_eval, rss_mb, timed  # noqa: E402

import runtime.llama_backend as llama_backend  # noqa: E402
from clinical.datasets import ClinicalCase, load_dataset  # noqa: E402
from dcem_clinical.agent import DiagnosticAgent  # noqa: E402
from dcem_clinical.prompts import continue_note, letters  # noqa: E402
from dcem_clinical.run import make_backend  # noqa: E402
from runtime.blocks import FixedSplit  # noqa: E402
from runtime.kv_cache import KvSnapshots  # noqa: E402
from runtime.llama_backend import LlamaCppBackend  # noqa: E402

SMOL, GEMMA = "smollm2-135m", "gemma3-270m"


# ----------------------------------------------------------- 1. report vs raw pass
def bench_reports(backend: LlamaCppBackend, agent: DiagnosticAgent, cases: list[ClinicalCase],
                  warm: ClinicalCase) -> dict[str, Any]:
    opts = letters(len(agent.labels))
    labels = agent.labels
    # warm-up (page in the weights, build the graph allocations) on a case not measured
    wmsgs = agent.messages(warm.text)
    raw_eval(backend, backend.prompt_tokens(wmsgs))
    cold_score(backend, wmsgs, opts)
    rows = []
    for i, case in enumerate(cases):
        m1 = agent.messages(case.text)
        tokens = backend.prompt_tokens(m1)
        row: dict[str, Any] = {"case": case.source_id, "tokens": len(tokens)}

        def do_raw() -> None:
            row["raw_s"], _ = timed(lambda: raw_eval(backend, tokens))

        def do_cold_then_reuse() -> None:
            row["cold_s"], lp1 = timed(lambda: cold_score(backend, m1, opts))
            top = np.argsort(-np.asarray(lp1), kind="stable")[:2]
            m2 = agent.messages(case.text, continue_note(labels[top[0]], labels[top[1]]))
            row["note_tokens"] = len(backend.prompt_tokens(m2))
            row["reuse_s"], sc = timed(lambda: backend.score_options(m2, opts))
            row["reused"], row["reuse_logprobs"], row["m2"] = backend.last_reused, sc.logprobs, m2

        for step in ((do_raw, do_cold_then_reuse) if i % 2 == 0 else (do_cold_then_reuse, do_raw)):
            step()
        m2 = row.pop("m2")
        row["cold_note_s"], lp2 = timed(lambda: cold_score(backend, m2, opts))
        row["identical"] = tuple(lp2) == tuple(row.pop("reuse_logprobs"))
        row["ratio"] = row["raw_s"] / row["cold_s"]
        row["reuse_speedup"] = row["cold_note_s"] / row["reuse_s"]
        rows.append(row)
        print(f"  case {i + 1:2d}/{len(cases)}: {row['tokens']} tok  raw {row['raw_s']:.2f}s  "
              f"cold {row['cold_s']:.2f}s  (ratio {row['ratio']:.2f})  reuse {row['reuse_s']:.2f}s "
              f"({row['reused']}/{row['note_tokens']} reused, cold {row['cold_note_s']:.2f}s)", flush=True)
    return {
        "block": llama_backend.BLOCK, "cases": len(rows), "rows": rows,
        "median_tokens": med([r["tokens"] for r in rows]),
        "median_note_tokens": med([r["note_tokens"] for r in rows]),
        "raw_s": med([r["raw_s"] for r in rows]), "cold_s": med([r["cold_s"] for r in rows]),
        "raw_tok_s": med([r["tokens"] / r["raw_s"] for r in rows]),
        "cold_tok_s": med([r["tokens"] / r["cold_s"] for r in rows]),
        "ratio_raw_over_cold": med([r["ratio"] for r in rows]),
        "reuse_s": med([r["reuse_s"] for r in rows]), "cold_note_s": med([r["cold_note_s"] for r in rows]),
        "median_reused": med([r["reused"] for r in rows]),
        "reuse_speedup": med([r["reuse_speedup"] for r in rows]),
        "reuse_identical": all(r["identical"] for r in rows),
    }


# ------------------------------------------------------------ 2. block-size sweep
def set_threads(backend: LlamaCppBackend, n: int) -> None:
    llama_cpp.llama_set_n_threads(backend.llm.ctx, n, n)


def bench_blocks(backend: LlamaCppBackend, agent: DiagnosticAgent, cases: list[ClinicalCase],
                 blocks: Sequence[int], threads: int, one_thread: bool) -> dict[str, Any]:
    """Raw and cold+reuse per block size, interleaved (rotating order per case); with
    ``one_thread`` also raw and BLOCK 64 on one thread (same context, llama_set_n_threads)."""
    opts = letters(len(agent.labels))
    labels = agent.labels
    saved, saved_split, saved_kv = llama_backend.BLOCK, backend.split, backend.kv
    backend.kv = KvSnapshots(0, 1)  # the saved states assume the default block: off for the sweep
    variants: list[tuple[str, int, int | None]] = [(f"raw/{threads}t", threads, None)]
    variants += [(f"B{b}/{threads}t", threads, b) for b in blocks]
    if one_thread and threads != 1:
        variants += [("raw/1t", 1, None), (f"B{saved}/1t", 1, saved)]
    samples: dict[str, dict[str, list[float]]] = {v[0]: {"s": [], "reuse_s": [], "reused": [], "ratio": []}
                                                  for v in variants}
    try:
        for i, case in enumerate(cases):
            m1 = agent.messages(case.text)
            tokens = backend.prompt_tokens(m1)
            shift = i % len(variants)
            got: dict[str, float] = {}
            for name, nt, b in variants[shift:] + variants[:shift]:
                set_threads(backend, nt)
                if b is None:
                    got[name], _ = timed(lambda: raw_eval(backend, tokens))
                    continue
                backend.split = FixedSplit(b)
                got[name], lp1 = timed(lambda: cold_score(backend, m1, opts))
                top = np.argsort(-np.asarray(lp1), kind="stable")[:2]
                m2 = agent.messages(case.text, continue_note(labels[top[0]], labels[top[1]]))
                reuse_s, _ = timed(lambda: backend.score_options(m2, opts))
                samples[name]["reuse_s"].append(reuse_s)
                samples[name]["reused"].append(backend.last_reused)
            for name, nt, b in variants:
                samples[name]["s"].append(got[name])
                samples[name]["ratio"].append(got[f"raw/{nt}t"] / got[name])
            print(f"  sweep case {i + 1}/{len(cases)} ({len(tokens)} tok): " +
                  "  ".join(f"{name} {got[name]:.2f}s" for name, _, _ in variants), flush=True)
    finally:
        backend.split, backend.kv = saved_split, saved_kv
        set_threads(backend, threads)
    return {"cases": len(cases),
            "variants": {name: {"threads": nt, "block": b, "s": med(samples[name]["s"]),
                                "ratio_raw_over": med(samples[name]["ratio"]),
                                "reuse_s": med(samples[name]["reuse_s"]),
                                "median_reused": med(samples[name]["reused"])}
                         for name, nt, b in variants}}


# ------------------------------------------------------------- background load
def load_worker(threads: int) -> None:
    """Stand-in for another LLM job on the same cores: score DDXPlus prompts forever."""
    dataset = load_dataset("ddxplus8")
    backend = make_backend(SMOL, n_threads=threads)
    assert isinstance(backend, LlamaCppBackend)
    agent = DiagnosticAgent(backend, dataset.labels)
    print("ready", flush=True)
    i = 0
    while True:
        backend.llm.reset()
        backend.score_options(agent.messages(dataset.cases[i % len(dataset.cases)].text),
                              letters(len(dataset.labels)))
        i += 1


def start_load(threads: int) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, __file__, "--load-worker", "--threads", str(threads)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    if proc.stdout.readline().strip() != "ready":
        proc.kill()
        raise RuntimeError("the background load process did not start")
    return proc


# ------------------------------------------------------------------------- main
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few cases, SmolLM2 only, small run (~2 min)")
    parser.add_argument("--models", default=None, help=f"comma-separated keys (default {SMOL},{GEMMA})")
    parser.add_argument("--cases", type=int, default=None, help="cases for part 1 (default 10, quick 3)")
    parser.add_argument("--second-cases", type=int, default=None,
                        help="cases for part 1 with the second model (default 6)")
    parser.add_argument("--sweep-cases", type=int, default=None, help="cases for the block sweep (default 3)")
    parser.add_argument("--blocks", default="64,128,256,512", help="block sizes of the sweep ('' = none)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--no-one-thread", action="store_true", help="leave the 1-thread variants out of the sweep")
    parser.add_argument("--n-cal", type=int, default=None)
    parser.add_argument("--n-test", type=int, default=None)
    parser.add_argument("--t-max", type=int, default=None)
    parser.add_argument("--free-rounds", type=int, default=None)
    parser.add_argument("--no-e2e", action="store_true", help="skip the end-to-end runs")
    parser.add_argument("--reuse-only", action="store_true",
                        help="only the end-to-end run with the saved KV states off and on (SmolLM2)")
    parser.add_argument("--background-load", type=int, default=0, metavar="THREADS",
                        help="run a competing llama.cpp scoring loop with this many threads in a child "
                             "process during the whole benchmark (0 = none)")
    parser.add_argument("--load-worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--json", type=Path, default=None, help="also write the JSON result here")
    args = parser.parse_args()
    if args.load_worker:
        load_worker(args.threads)
        return
    q = args.quick
    args.cases = args.cases or (3 if q else 10)
    args.second_cases = args.second_cases or 6
    args.sweep_cases = args.sweep_cases if args.sweep_cases is not None else (0 if q else 3)
    args.n_cal = args.n_cal or (4 if q else 8)
    args.n_test = args.n_test or (2 if q else 8)
    args.t_max = args.t_max or (2 if q else 6)
    args.free_rounds = args.free_rounds or (2 if q else 6)
    models = [m.strip() for m in (args.models or (SMOL if q else f"{SMOL},{GEMMA}")).split(",") if m.strip()]
    if args.reuse_only:
        models, args.sweep_cases = [SMOL], 0
    blocks = [int(b) for b in args.blocks.split(",") if b.strip()]

    began = time.perf_counter()
    load_proc = start_load(args.background_load) if args.background_load else None
    try:
        run(args, models, blocks, began, load_proc)
    finally:
        if load_proc is not None:
            load_proc.terminate()
            load_proc.wait(timeout=30)


def run(args: argparse.Namespace, models: list[str], blocks: list[int], began: float,
        load_proc: subprocess.Popen[str] | None) -> None:
    q = args.quick
    dataset = load_dataset("ddxplus8")
    cases = pick_cases(dataset.cases, max(args.cases, args.sweep_cases) + 1, seed=20261122)
    warm, cases = cases[0], cases[1:]
    load_avg = os.getloadavg()
    result: dict[str, Any] = {"benchmark": "llm", "date": time.strftime("%Y-%m-%d"), "cpus": os.cpu_count(),
                              "threads": args.threads, "python": platform.python_version(),
                              "llama_cpp_python": llama_cpp.__version__, "quick": q,
                              "loadavg_start": load_avg, "background_load_threads": args.background_load,
                              "models": {}, "memory_mb": {"before_load": {"maxrss": maxrss_mb(), "rss": rss_mb()}}}
    print(f"{os.cpu_count()} CPUs, load average at start {load_avg[0]:.2f} / {load_avg[1]:.2f}; "
          f"threads {args.threads}; llama-cpp-python {llama_cpp.__version__}"
          + (f"; background load: pid {load_proc.pid}, {args.background_load} threads" if load_proc else ""))
    for idx, key in enumerate(models):
        load_s, backend = timed(lambda: make_backend(key, n_threads=args.threads))
        assert isinstance(backend, LlamaCppBackend)
        result["memory_mb"][f"after_load_{key}"] = {"maxrss": maxrss_mb(), "rss": rss_mb()}
        agent = DiagnosticAgent(backend, dataset.labels)
        n = args.cases if idx == 0 else min(args.cases, args.second_cases)
        print(f"[{key}] loaded in {load_s:.1f}s, n_batch {backend.llm.n_batch}, BLOCK {llama_backend.BLOCK}; "
              + ("" if args.reuse_only else f"{n} cases (raw / cold / reuse, interleaved)"), flush=True)
        entry: dict[str, Any] = {"load_s": load_s, "n_batch": backend.llm.n_batch}
        if not args.reuse_only:
            entry["reports"] = bench_reports(backend, agent, cases[:n], warm)
        if idx == 0 and args.sweep_cases and blocks:
            print(f"[{key}] block sweep {blocks} on {args.sweep_cases} cases", flush=True)
            entry["block_sweep"] = bench_blocks(backend, agent, cases[:args.sweep_cases], blocks,
                                                args.threads, not args.no_one_thread)
        if idx == 0 and key == SMOL and not args.no_e2e:
            print(f"[{key}] end-to-end run_clinical: n_cal {args.n_cal}, n_test {args.n_test}, "
                  f"t_max {args.t_max}, free_rounds {args.free_rounds}", flush=True)
            pair = bench_reuse_pair(backend, args)
            result["end_to_end"] = pair["reuse_on"]
            result["end_to_end_reuse_off"] = pair["reuse_off"]
            result["end_to_end_stop"] = pair["reuse_on_stop"]
            result["end_to_end_case_first"] = pair["reuse_on_stop_case_first"]
            result["end_to_end_paragraph"] = pair["reuse_on_stop_paragraph"]
            for key_ in ("reuse_speedup", "stop_speedup", "case_first_speedup", "paragraph_speedup",
                         "reused_token_share", "reused_token_share_scored", "reused_token_share_off",
                         "reused_token_share_case_first", "reused_token_share_paragraph", "peak_rss_mb"):
                result[key_] = pair[key_]
            result["memory_mb"]["after_end_to_end"] = {"maxrss": maxrss_mb(), "rss": rss_mb()}
        result["models"][key] = entry
        del agent, backend  # free the model before loading the next one
    result["memory_mb"]["end"] = {"maxrss": maxrss_mb(), "rss": rss_mb()}
    result["loadavg_end"] = os.getloadavg()
    result["total_s"] = time.perf_counter() - began

    # ------------------------------------------------------------------ table
    print()
    print("| model | prompt tokens (median) | raw eval | score_options cold | raw/cold (target >= 0.8) "
          "| next round, prefix reuse | reused tokens | reuse speedup |")
    print("|---|---|---|---|---|---|---|---|")
    for key, entry in result["models"].items():
        if "reports" not in entry:
            continue
        r = entry["reports"]
        print(f"| {key} ({r['cases']} cases) | {r['median_tokens']:.0f} | {r['raw_s'] * 1e3:,.0f} ms "
              f"({r['raw_tok_s']:.0f} tok/s) | {r['cold_s'] * 1e3:,.0f} ms ({r['cold_tok_s']:.0f} tok/s) | "
              f"{r['ratio_raw_over_cold']:.2f} | {r['reuse_s'] * 1e3:,.0f} ms (cold {r['cold_note_s'] * 1e3:,.0f} ms)"
              f" | {r['median_reused']:.0f} / {r['median_note_tokens']:.0f} | {r['reuse_speedup']:.1f}x"
              f"{'' if r['reuse_identical'] else ' (SCORES DIFFER)'} |")
    for key, entry in result["models"].items():
        if "block_sweep" in entry:
            sw = entry["block_sweep"]
            print(f"\nblock sweep, {key}, {sw['cases']} cases (raw/b = raw time / variant time, same thread count):")
            print("| variant | cold | raw/variant | next-round reuse | reused tokens |")
            print("|---|---|---|---|---|")
            for name, s in sw["variants"].items():
                reuse = "-" if s["block"] is None else f"{s['reuse_s'] * 1e3:,.0f} ms"
                reused = "-" if s["block"] is None else f"{s['median_reused']:.0f}"
                print(f"| {name} | {s['s'] * 1e3:,.0f} ms | {s['ratio_raw_over']:.2f} | {reuse} | {reused} |")
    if "reuse_speedup" in result:
        off = result["end_to_end_reuse_off"]
        print(f"\nsaved KV states: off {off['test_cases_per_min']:.2f}, on "
              f"{result['end_to_end']['test_cases_per_min']:.2f} TEST cases/min: reuse_speedup "
              f"{result['reuse_speedup']:.2f}x; reused_token_share {result['reused_token_share']:.1%} "
              f"(scored calls {result['reused_token_share_scored']:.1%}; off "
              f"{result['reused_token_share_off']:.1%}); peak RSS {result['peak_rss_mb']:.0f} MB")
        print(f"with TEST cases stopped when decided: {result['end_to_end_stop']['test_cases_per_min']:.2f} "
              f"TEST cases/min, stop_speedup {result['stop_speedup']:.2f}x (against reuse off)")
        print(f"and with case-first prompts: {result['end_to_end_case_first']['test_cases_per_min']:.2f} "
              f"TEST cases/min, case_first_speedup {result['case_first_speedup']:.2f}x (against reuse off); "
              f"reused {result['reused_token_share_case_first']:.1%} of prompt tokens")
        print(f"stopped, agent-first, paragraph-aligned blocks: "
              f"{result['end_to_end_paragraph']['test_cases_per_min']:.2f} TEST cases/min, paragraph_speedup "
              f"{result['paragraph_speedup']:.2f}x (against reuse off); "
              f"reused {result['reused_token_share_paragraph']:.1%} of prompt tokens")
    if "end_to_end" in result:
        e = result["end_to_end"]
        print(f"\nend to end ({e['spec']}):")
        print(f"  total {e['total_s']:.1f}s (CAL {e['cal_s']:.1f}s, TEST {e['test_s']:.1f}s): "
              f"{e['test_cases_per_min']:.2f} TEST cases/min incl. CAL, "
              f"{e['test_cases_per_min_test_phase']:.2f} in the TEST phase; {e['model_calls']} model calls")
        print(f"  calls by phase: {e['calls_by_phase']}")
        print(f"  backend: {e['backend_stats']}")
        print(f"  re-run from the call log: {e['rerun_s']:.2f}s ({e['rerun_test_cases_per_min']:.0f} TEST "
              f"cases/min), {e['rerun_new_calls']} new calls")
    print(f"\nmemory (MB): {json.dumps(result['memory_mb'])}")
    print(f"total benchmark time {result['total_s']:.0f}s; load average at end "
          f"{result['loadavg_end'][0]:.2f}")
    line = json.dumps(result)
    print(line)
    if args.json:
        args.json.write_text(line + "\n")


if __name__ == "__main__":
    main()
