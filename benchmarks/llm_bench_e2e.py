"""Part 3 of benchmarks/llm_benchmark.py: the end-to-end clinical cell, and the same cell
with the saved KV states off and then on (see that script's docstring)."""
from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

import llama_cpp
from llm_bench_util import CountingBackend, maxrss_mb, timed

from clinical.datasets import load_dataset
from dcem.core.config import MediatorConfig
from dcem.store.database import Store
from dcem_clinical.call_log import call_count
from dcem_clinical.cell import run_clinical_cell
from dcem_clinical.run import ClinicalSpec, run_clinical
from runtime.factory import make_backend
from runtime.kv_cache import kv_cache_mb
from runtime.llama_backend import LlamaCppBackend

SMOL = "smollm2-135m"


def cell_parser(description: str) -> argparse.ArgumentParser:
    """The options of a script that runs the end-to-end cell (sizes, threads, --json)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--n-cal", type=int, default=8)
    parser.add_argument("--n-test", type=int, default=8)
    parser.add_argument("--t-max", type=int, default=6)
    parser.add_argument("--free-rounds", type=int, default=6)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", type=Path, default=None, help="also write the JSON result here")
    return parser


def start_cell_benchmark(name: str, args: argparse.Namespace) -> tuple[LlamaCppBackend, dict[str, Any]]:
    """Load SmolLM2 and the result's header (machine, versions, load average)."""
    load_avg = os.getloadavg()
    load_s, backend = timed(lambda: make_backend(SMOL, n_threads=args.threads))
    assert isinstance(backend, LlamaCppBackend)
    print(f"{os.cpu_count()} CPUs, load average at start {load_avg[0]:.2f}; threads {args.threads}; "
          f"n_cal {args.n_cal}, n_test {args.n_test}", flush=True)
    return backend, {"benchmark": name, "date": time.strftime("%Y-%m-%d"), "cpus": os.cpu_count(),
                     "threads": args.threads, "python": platform.python_version(),
                     "llama_cpp_python": llama_cpp.__version__, "loadavg_start": load_avg, "load_s": load_s,
                     "began": time.perf_counter()}


def finish_cell_benchmark(result: dict[str, Any], args: argparse.Namespace) -> None:
    """Peak RSS, load average and total time into ``result``; print it as one JSON line
    (and write it to ``--json``)."""
    result["peak_rss_mb"], result["loadavg_end"] = maxrss_mb(), os.getloadavg()
    result["total_s"] = time.perf_counter() - result.pop("began")
    line = json.dumps(result)
    print(line)
    if args.json is not None:
        args.json.write_text(line + "\n")


# ------------------------------------------------------------------ 3. end to end
def bench_end_to_end(backend: LlamaCppBackend, args: argparse.Namespace, *, stop: bool = False,
                     layout: str = "agent-first") -> dict[str, Any]:
    few_shot = getattr(args, "few_shot", 0)  # solved CAL cases per prompt (benchmarks/llm_bench_layout.py)
    spec = ClinicalSpec(dataset="ddxplus8", scenarios=("S1",), seeds=(0,), n_cal=args.n_cal,
                        n_test=args.n_test, agents=(SMOL, SMOL), free_rounds=args.free_rounds,
                        base_config=MediatorConfig(prior="empirical", t_max=args.t_max), stop_when_decided=stop,
                        layout=layout, few_shot_k=few_shot)
    counting = CountingBackend(backend)
    shared = [counting, counting]  # what run_clinical builds for the same key twice: one model
    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "bench.duckdb") as store:
        backend.llm.reset()
        start = time.perf_counter()
        wall_start = time.time()
        summary = run_clinical(store, spec, backends=shared, n_threads=args.threads)
        total_s = time.perf_counter() - start
        calls = store.con.cursor().execute(
            "SELECT case_id, purpose, duration_s, epoch(created_at) FROM llm_calls WHERE run_id = ?",
            [summary.run_id]).fetchall()
        n_calls = call_count(store)
        cal_end = max(c[3] for c in calls if c[0].split("-", 3)[2] == "cal")
        # created_at is naive local time; convert the wall clock the same way
        local_offset = (time.mktime(time.localtime(wall_start)) - time.mktime(time.gmtime(wall_start)))
        cal_s = max(0.0, cal_end - (wall_start + local_offset))
        model_by = {}
        for phase in ("cal", "test"):
            for purpose in ("classify", "cues"):
                sel = [c[2] for c in calls if c[0].split("-", 3)[2] == phase and c[1] == purpose]
                model_by[f"{phase}_{purpose}"] = {"calls": len(sel), "model_s": float(sum(sel))}
        dataset = load_dataset(spec.dataset)
        rerun_s, _ = timed(lambda: run_clinical_cell(store, summary.run_id, dataset, "S1", 0, shared, spec))
        rerun_new_calls = call_count(store) - n_calls
    test_s = total_s - cal_s
    return {"spec": {"n_cal": args.n_cal, "n_test": args.n_test, "t_max": args.t_max,
                     "free_rounds": args.free_rounds, "scenario": "S1", "seed": 0,
                     "agents": [SMOL, SMOL], "threads": args.threads, "stop_when_decided": stop,
                     "layout": layout, "few_shot_k": few_shot, "split": backend.split.name},
            "total_s": total_s, "cal_s": cal_s, "test_s": test_s,
            "test_cases_per_min": args.n_test / (total_s / 60.0),
            "test_cases_per_min_test_phase": args.n_test / (test_s / 60.0) if test_s > 0 else float("nan"),
            "model_calls": n_calls, "calls_by_phase": model_by, "backend_stats": counting.stats,
            "rerun_s": rerun_s, "rerun_new_calls": rerun_new_calls,
            "rerun_test_cases_per_min": args.n_test / (rerun_s / 60.0)}


def fresh_run(backend: LlamaCppBackend, args: argparse.Namespace, *, split: str = "fixed", mb: int | None = None,
              stop: bool = False, layout: str = "agent-first") -> dict[str, Any]:
    """The end-to-end cell with ``split`` blocks and fresh saved states of ``mb`` MB (None:
    the default budget), nothing carried over from an earlier run; with the states' counts."""
    backend.set_split(split, mb)
    run = bench_end_to_end(backend, args, stop=stop, layout=layout)
    run["kv_stats"] = backend.kv.stats()
    return run


def bench_reuse_pair(backend: LlamaCppBackend, args: argparse.Namespace) -> dict[str, Any]:
    """The end-to-end run with the saved KV states off, then on, then on with the TEST
    cases stopped when decided, then that with the case-first prompt layout, then the
    stopped agent-first run with paragraph-aligned blocks (see part 3)."""
    out: dict[str, Any] = {}
    on = kv_cache_mb(None)
    for label, mb, stop, layout, split in (
            ("reuse_off", 0, False, "agent-first", "fixed"), ("reuse_on", on, False, "agent-first", "fixed"),
            ("reuse_on_stop", on, True, "agent-first", "fixed"),
            ("reuse_on_stop_case_first", on, True, "case-first", "fixed"),
            ("reuse_on_stop_paragraph", on, True, "agent-first", "paragraph")):
        print(f"  end to end, saved KV states {'off' if mb == 0 else f'on ({mb} MB)'}"
              f"{', stop when decided' if stop else ''}, {layout} prompts, {split} blocks", flush=True)
        out[label] = fresh_run(backend, args, split=split, mb=mb, stop=stop, layout=layout)
        out[label]["maxrss_mb"] = maxrss_mb()
        e = out[label]
        print(f"    {e['test_cases_per_min']:.2f} TEST cases/min in {e['total_s']:.0f}s; "
              f"reused {_share(e['backend_stats']):.1%} of prompt tokens", flush=True)
    on, off = out["reuse_on"], out["reuse_off"]
    stats = on["backend_stats"]
    out["reuse_speedup"] = on["test_cases_per_min"] / off["test_cases_per_min"]
    out["stop_speedup"] = out["reuse_on_stop"]["test_cases_per_min"] / off["test_cases_per_min"]
    out["case_first_speedup"] = out["reuse_on_stop_case_first"]["test_cases_per_min"] / off["test_cases_per_min"]
    out["paragraph_speedup"] = out["reuse_on_stop_paragraph"]["test_cases_per_min"] / off["test_cases_per_min"]
    out["reused_token_share_paragraph"] = _share(out["reuse_on_stop_paragraph"]["backend_stats"])
    out["reused_token_share_case_first"] = _share(out["reuse_on_stop_case_first"]["backend_stats"])
    out["reused_token_share"] = _share(stats)
    out["reused_token_share_scored"] = stats["score_reused_tokens"] / max(stats["prompt_tokens"], 1)
    out["reused_token_share_off"] = _share(off["backend_stats"])
    out["peak_rss_mb"] = maxrss_mb()
    return out


def _share(stats: dict[str, Any]) -> float:
    """Prompt tokens from the KV cache / all prompt tokens the model evaluated."""
    return stats["reused_tokens"] / max(stats["prompt_tokens"] + stats["generate_prompt_tokens"], 1)
