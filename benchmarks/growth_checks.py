"""How the hardened inputs' time grows: the checks that used to be time bounds in the tests.

The tests keep the behaviour (what is parsed, refused, counted; peak memory under
tracemalloc); a time bound there fails on a busy machine.  Here each input is timed as
the best of ``--repeats`` runs, and a growth check reports the ratio of the large input's
time to the small one's beside the ratio a linear and a quadratic cost would give:

* ``csv_agents``: a calibration CSV of 250 agents against 1,000 (50 rows per agent, each
  agent skipping almost every case; ``tests/dcem/test_calibration_hardening.py``);
* ``csv_one_case_per_agent``: 1,000 agents over 200,000 one-row cases;
* ``csv_agent_cap``: the issue's 16,000 agents, refused at the 1,001st;
* ``upload_5mb``: a 5 MB upload of each shape through the calibration page's steps;
* ``explain_rounds``: ``explain`` on 1,000 rounds against 10,000
  (``tests/dcem/test_hardening.py``);
* ``explain_agent_cap``: ``explain`` refusing 1,001 and 10,000 agents
  (``tests/dcem/test_explain_agent_cap.py``);
* ``hub_key``: an ``hf:`` key that cannot resolve, offline and with the Hub unreachable
  (``tests/runtime/test_hub_key_unreachable.py``).

One JSON line per check; append them to benchmarks/results/growth.jsonl:

    .venv/bin/python benchmarks/growth_checks.py >> benchmarks/results/growth.jsonl
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def best(work: Callable[[], Any], repeats: int) -> float:
    """The shortest of ``repeats`` timings of ``work()`` (exceptions count as its end)."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        try:
            work()
        except Exception:  # noqa: BLE001 - a refusal is the work being timed
            pass
        times.append(time.perf_counter() - start)
    return min(times)


def _line(check: str, **values: Any) -> dict[str, Any]:
    return {"benchmark": "growth", "check": check, "date": time.strftime("%Y-%m-%d"),
            **{k: float(f"{v:.4g}") if isinstance(v, float) else v for k, v in values.items()}}


def csv_checks(repeats: int) -> list[dict[str, Any]]:
    from dcem.calibration.csv_import import parse_csv_rows
    from dcem.calibration.sets import parse_calibration_csv
    from tests.dcem.calibration_files import FIVE_MB, HEADER, SHAPES
    from studio.views.calibration_view import calibration_view, load_upload, prior_table

    def text(rows: list[str]) -> bytes:
        return (HEADER + "\n".join(rows) + "\n").encode()

    def agents_file(n_agents: int) -> bytes:
        return text([f"c{i},a{i % n_agents},k{i % 3},k{i % 3}" for i in range(n_agents * 50)])

    small, large = agents_file(250), agents_file(1000)
    s, l_ = best(lambda: parse_csv_rows(small), repeats), best(lambda: parse_csv_rows(large), repeats)
    out = [_line("csv_agents", small="250 agents, 12,500 rows", large="1,000 agents, 50,000 rows",
                 small_s=s, large_s=l_, ratio=l_ / s, linear=4, quadratic=16)]
    one = text([f"c{i},a{i % 1000},k{i % 2},k{i % 2}" for i in range(200_000)])
    out.append(_line("csv_one_case_per_agent", input="1,000 agents over 200,000 one-row cases",
                     seconds=best(lambda: parse_calibration_csv(one), repeats)))
    cap = text([f"c{i},ag{i},k{i % 2},k{i % 2}" for i in range(16_000)])
    out.append(_line("csv_agent_cap", input="16,000 agents, refused at the 1,001st",
                     seconds=best(lambda: parse_calibration_csv(cap), repeats)))

    def steps(data: bytes) -> None:
        cset, _ = load_upload(data, "", "upload.csv")
        calibration_view(cset, 0.5)
        prior_table(cset, "empirical", 0.5)

    for shape in sorted(SHAPES):
        data = SHAPES[shape](FIVE_MB)
        out.append(_line("upload_5mb", shape=shape, bytes=len(data), seconds=best(lambda: steps(data), repeats)))
    return out


def explain_checks(repeats: int) -> list[dict[str, Any]]:
    import numpy as np

    from dcem.analysis.explain import explain
    from tests.dcem.test_explain_cli import EPISODE

    def episode(rounds: int) -> dict[str, Any]:  # as tests/dcem/test_hardening.py builds it
        rng = np.random.default_rng(0)
        labels = EPISODE["labels"]
        reports = [[labels[i] for i in row] for row in rng.integers(0, 3, size=(rounds, 2))]
        return {**EPISODE, "reports": reports,
                "params": {"t_max": rounds, "s_asym": 0.0, "eps_safe": 0.0, "eps_low": 1e9}}

    small, large = episode(1_000), episode(10_000)
    s, l_ = best(lambda: explain(small), repeats), best(lambda: explain(large), repeats)
    out = [_line("explain_rounds", small="1,000 rounds", large="10,000 rounds", small_s=s, large_s=l_,
                 ratio=l_ / s, linear=10, quadratic=100)]
    eye = [[0.8, 0.1, 0.1], [0.1, 0.8, 0.1], [0.1, 0.1, 0.8]]
    for n in (1_001, 10_000):
        doc = {"labels": ["l0", "l1", "l2"], "confusion": [eye] * n,
               "loss": [[0 if d == y else 1 for y in range(3)] for d in range(3)],
               "reports": [[f"l{a % 3}" for a in range(n)]]}
        out.append(_line("explain_agent_cap", input=f"{n:,} agents, refused",
                         seconds=best(lambda: explain(doc), repeats)))
    return out


def hub_checks(repeats: int) -> list[dict[str, Any]]:
    import huggingface_hub.constants

    from runtime.registry import resolve

    key = "hf:someone/absent-repo:model.gguf"
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["HF_HUB_CACHE"] = str(Path(tmp) / "hub")
        os.environ["DCEM_MODEL_CACHE"] = str(Path(tmp) / "models")
        os.environ["HF_HUB_OFFLINE"] = "1"
        out.append(_line("hub_key", input="offline, empty cache", seconds=best(lambda: resolve(key), repeats)))
        del os.environ["HF_HUB_OFFLINE"]
        huggingface_hub.constants.HF_HUB_OFFLINE = False
        huggingface_hub.constants.ENDPOINT = "http://127.0.0.1:9"
        out.append(_line("hub_key", input="online, Hub unreachable", seconds=best(lambda: resolve(key), repeats)))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", choices=["csv", "explain", "hub"], action="append")
    args = parser.parse_args()
    groups = {"csv": csv_checks, "explain": explain_checks, "hub": hub_checks}
    for name, run in groups.items():
        if args.only and name not in args.only:
            continue
        for line in run(args.repeats):
            print(json.dumps(line), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
