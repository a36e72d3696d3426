"""The view group's cost against one single answer, both measured in one process.

Run with ``.venv/bin/python benchmarks/views_cost.py [--items N] [--repeats R] [--json PATH]``.

The held-out evaluation (``python -m sag eval-views``) plays the group and the single
SmolLM2 answer as separate runs, hours apart, under whatever else the machine was doing;
their ratio of seconds per item mixes the two loads.  Here both play the same
``--items`` DDXPlus-8 TEST cases in one process, alternating which goes first, each on a
fresh scratch store (no call log: every turn reaches the model) with the runners
``python -m sag eval-views`` uses.  Seconds and tokens per item are read from the stored
item rows exactly as the report reads them (``sag.views.report``'s cost line).  Prints a
table and one JSON line; the issue's goal is a group at most 8x one single answer's
seconds per item.

The group is played twice: as shipped, and with the batched runner's parked prefixes
turned off (``park=False``: each member's context keeps only its last prompt, as before
parking existed).  Its answers, distributions and rationales must be identical, or the
benchmark fails: the speed-up changes no output.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sag.group.config import load_group_file  # noqa: E402
from sag.views.featured import FEATURED_GROUP  # noqa: E402
from sag.runs.run import run_sag  # noqa: E402
from sag.debate.runners import RunnerRecipe  # noqa: E402
from sag.store.tables import SagStore  # noqa: E402
from sag.views.report import view_specs  # noqa: E402


@dataclass(frozen=True)
class _Unparked(RunnerRecipe):
    """The same runners with parked prefixes turned off (the reference)."""

    def __call__(self, cfg: Any) -> Any:
        runners = super().__call__(cfg)
        for runner in runners.values():
            if hasattr(runner, "park"):
                runner.park = False
        return runners


def _play(spec: Any, n: int, threads: int, park: bool = True) -> dict[str, Any]:
    """Seconds and tokens per item of ``spec`` on ``n`` items, on a fresh store, and what
    every agent said (to compare outputs)."""
    spec = replace(spec, n_items=n)
    recipe = (RunnerRecipe if park else _Unparked)(n_threads=threads)
    with tempfile.TemporaryDirectory() as tmp, SagStore(Path(tmp) / "bench.duckdb") as store:
        summary = run_sag(store, spec, runners=recipe)
        if summary.failed:
            raise SystemExit(f"{len(summary.failed)} item(s) of {spec.cfg.name} failed: {summary.failed[:1]}")
        rows = store.outcomes(summary.run_id)
        said = [tuple(m) for item in rows["item_id"]
                for m in store.messages(summary.run_id, item)[["agent_id", "round", "answer", "distribution",
                                                               "rationale"]].astype(str).itertuples(index=False)]
    return {"seconds": float(rows["seconds"].mean()),
            "tokens": float((rows["prompt_tokens"] + rows["completion_tokens"]).mean()), "said": said}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--group", default=str(FEATURED_GROUP))
    p.add_argument("--items", type=int, default=8)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--json", default=None, help="append the JSON line to this file")
    args = p.parse_args(argv)
    specs = view_specs(load_group_file(Path(args.group)))
    group_spec, single_spec = specs["test"], specs["single"]
    group, single, unparked = [], [], []
    for r in range(args.repeats):
        order = [("group", group_spec, group, True), ("single", single_spec, single, True),
                 ("group unparked", group_spec, unparked, False)]
        for name, spec, into, park in (order if r % 2 == 0 else order[::-1]):
            into.append(_play(spec, args.items, args.threads, park))
            print(f"repeat {r + 1} {name}: {into[-1]['seconds']:.2f} s/item, {into[-1]['tokens']:.0f} tokens/item",
                  file=sys.stderr)
    if any(x["said"] != group[0]["said"] for x in group + unparked):
        raise SystemExit("the group's outputs differ between plays (parked prefixes changed an output)")
    u_s = statistics.median(x["seconds"] for x in unparked)
    g_s = statistics.median(x["seconds"] for x in group)
    s_s = statistics.median(x["seconds"] for x in single)
    g_t = statistics.median(x["tokens"] for x in group)
    s_t = statistics.median(x["tokens"] for x in single)
    out = {"benchmark": "views_cost", "items": args.items, "repeats": args.repeats, "threads": args.threads,
           "group_seconds_per_item": round(g_s, 3), "single_seconds_per_item": round(s_s, 3),
           "seconds_ratio": round(g_s / s_s, 2), "group_tokens_per_item": round(g_t, 1),
           "single_tokens_per_item": round(s_t, 1), "tokens_ratio": round(g_t / s_t, 2), "goal_ratio": 8.0,
           "unparked_seconds_per_item": round(u_s, 3), "unparked_ratio": round(u_s / s_s, 2),
           "outputs_identical": True, "group": Path(args.group).name,
           "goal_met": bool(g_s / s_s <= 8.0), "runs_group": [round(x["seconds"], 3) for x in group],
           "runs_single": [round(x["seconds"], 3) for x in single], "cpus": os.cpu_count(),
           "python": platform.python_version()}
    print("| figure | value |\n|---|---|")
    print(f"| group, seconds per item | {g_s:.2f} (runs: {', '.join(f'{x:.2f}' for x in out['runs_group'])}) |")
    print(f"| one single answer, seconds per item | {s_s:.2f} (runs: {', '.join(f'{x:.2f}' for x in out['runs_single'])}) |")
    print(f"| seconds ratio | {g_s / s_s:.1f}x (goal <= 8x) |")
    print(f"| group without parked prefixes, seconds per item | {u_s:.2f} ({u_s / s_s:.1f}x; outputs identical) |")
    print(f"| tokens per item, group / single | {g_t:.0f} / {s_t:.0f} ({g_t / s_t:.1f}x) |")
    line = json.dumps(out)
    print(line)
    if args.json:
        with open(args.json, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
