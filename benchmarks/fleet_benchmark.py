"""Calls per minute on one vs two local OpenAI-compatible servers (the ``openai:`` fleet).

Run with ``.venv/bin/python benchmarks/fleet_benchmark.py [--turns N] [--json PATH]``.

Two ``llama_cpp.server`` processes serve the packaged SmolLM2-135M on 127.0.0.1, one
thread each.  The same workload -- ``--turns`` agent turns on MedQA questions (each turn
= option scores + a greedy rationale of ``--tokens`` tokens, i.e. two HTTP calls) -- is
run through :class:`runtime.fleet_turns.ConcurrentTurns` in three settings, one after
another on the same servers:

- ``one_server``: one URL, concurrency 1 (what an ``openai:`` key did before the fleet);
- ``two_servers``: both URLs, concurrency 2 (one request in flight per server);
- ``one_server_c4`` / ``two_servers_c4``: the same at concurrency ``--concurrency``
  (default 4), several requests queued per server.

Every setting must give the same answers and rationales (temperature 0).  Reported:
calls per minute of each, and ``two_over_one`` = two_servers / one_server calls per minute.

llama-cpp-python's server answers one request at a time and keeps the last prompt's KV
state, so a turn's second call (the rationale, same prompt as the option scores) is cheap
only if no other request came between them: more requests in flight than servers
interleave turns and cost prompt re-evaluation (the ``_c4`` rows show how much).

Caveat: both servers run on the same machine, so they share its cores (two here, also
used by other work).  The ratio therefore mostly shows the client's overhead and how much
two one-thread servers overlap on a shared CPU; on separate machines each server brings
its own cores and the ratio approaches the number of servers.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from clinical.questions import load_benchmark  # noqa: E402
from runtime.fleet import FleetConfig  # noqa: E402
from runtime.fleet_turns import ConcurrentTurns  # noqa: E402
from runtime.http_fleet import FleetBackend  # noqa: E402
from runtime.messages import Message, Role  # noqa: E402
from runtime.turns import TurnRequest, TurnResult  # noqa: E402
from tests.runtime.llama_servers import start_servers, stop_servers  # noqa: E402


def workload(turns: int, tokens: int) -> list[TurnRequest]:
    """``turns`` single-agent turns on the first MedQA questions."""
    items = load_benchmark("medqa")[:turns]
    out = []
    for item in items:
        options = "\n".join(f"{letter}. {text}" for letter, text in item.options)
        out.append(TurnRequest(
            messages=(Message(Role.SYSTEM, "You are a physician. Answer with one letter, then one short reason."),
                      Message(Role.USER, f"{item.question}\n{options}\nAnswer:")),
            options=tuple(letter for letter, _ in item.options), max_tokens=tokens, temperature=0.0))
    return out


def measure(urls: list[str], concurrency: int, requests: list[TurnRequest]) -> tuple[float, list[TurnResult],
                                                                                       list[int]]:
    backend = FleetBackend(FleetConfig(urls=tuple(urls), model="smollm2", concurrency=concurrency, timeout_s=300))
    runner = ConcurrentTurns(backend)
    start = time.perf_counter()
    results = runner.run(requests)
    seconds = time.perf_counter() - start
    return seconds, results, [s.ok for s in backend.stats()]


def SETTINGS(urls: list[str], concurrency: int) -> list[tuple[str, list[str], int]]:  # noqa: N802
    return [("one_server", urls[:1], 1), ("two_servers", urls, 2),
            ("one_server_c4", urls[:1], concurrency), ("two_servers_c4", urls, concurrency)]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--turns", type=int, default=16)
    p.add_argument("--tokens", type=int, default=16)
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--json", type=Path)
    args = p.parse_args()
    requests = workload(args.turns, args.tokens)
    calls = 2 * len(requests)
    with tempfile.TemporaryDirectory() as tmp:
        servers = start_servers(Path(tmp), 2)
        try:
            urls = [s.url for s in servers]
            measure(urls, args.concurrency, requests[:2])  # warm both servers
            runs: dict[str, Any] = {}
            for name, use, conc in SETTINGS(urls, args.concurrency):
                seconds, results, per_url = measure(use, conc, requests)
                assert not any(r.error for r in results), [r.error for r in results if r.error]
                runs[name] = {"seconds": round(seconds, 2), "calls_per_min": round(60 * calls / seconds, 1),
                              "calls_per_server": per_url, "texts": [r.text for r in results]}
        finally:
            stop_servers(servers)
    texts = {name: run.pop("texts") for name, run in runs.items()}
    same = all(t == texts["one_server"] for t in texts.values())
    out = {"turns": len(requests), "calls": calls, "concurrency": args.concurrency, "cpus": os.cpu_count(),
           "identical_results": same, **runs,
           "two_over_one": round(runs["two_servers"]["calls_per_min"] / runs["one_server"]["calls_per_min"], 2),
           "two_c4_over_one": round(runs["two_servers_c4"]["calls_per_min"]
                                    / runs["one_server"]["calls_per_min"], 2)}
    for name in runs:
        r = runs[name]
        print(f"{name:15s} {r['seconds']:7.1f} s  {r['calls_per_min']:7.1f} calls/min  per server {r['calls_per_server']}")
    print(f"two_over_one {out['two_over_one']}  two_c4_over_one {out['two_c4_over_one']}  "
          f"identical results {same}")
    print(json.dumps(out))
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
