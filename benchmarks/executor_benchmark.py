"""In process against Ray with two one-thread workers, on this machine, in one run.

Three measurements, each a fresh store in a temporary folder:

* ``synthetic``: a synthetic grid with the shipped settings on ``--seeds`` seeds (4 cells
  each: the scenarios, n_train 20000, the compliance ablation) in this process, then on a local Ray instance
  with 2 workers of 1 CPU each;
* ``sag``: one SAG-6 evaluation part of ``--items`` items (accuracy on MedQA, llama.cpp
  with one thread per model), in this process and on Ray (each worker loads the models once);
* ``overhead``: ``--tiny`` units that do nothing, in process and on Ray: the Ray path's
  cost per unit (submit, run in an actor, stream back, write on the driver).

Prints one JSON line per measurement with seconds and the in-process / Ray ratio; append
them to benchmarks/results/executors.jsonl.  Ray's start (about 2 s) is counted on the Ray
side.  Run on a quiet machine:

    .venv/bin/python benchmarks/executor_benchmark.py --items 20
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


@dataclass(frozen=True)
class NothingJob:
    key: str = "nothing"

    def open(self, here: Any = None) -> "NothingJob":
        return self

    def compute_unit(self, payload: Any, tick: Callable[[], None]) -> int:
        return int(payload)


class ListSink:
    def __init__(self) -> None:
        self.saved: list[Any] = []

    def save(self, unit: Any, result: Any) -> None:
        self.saved.append(result)

    def fail(self, unit: Any, failure: Any) -> None:
        raise AssertionError(failure.message)


def _timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def _ray() -> Any:
    from common.ray_work import RayExecutor

    return RayExecutor(workers=2, threads=1)


def synthetic(tmp: Path, seeds: int) -> dict[str, Any]:
    from dcem.store.database import Store
    from dcem.synthetic.spec import SyntheticSpec, run_synthetic

    spec = SyntheticSpec(seeds=tuple(range(seeds)))  # the shipped settings: 4 scenarios, n_train 20000, the ablation
    with Store(tmp / "here.duckdb") as store:
        here, a = _timed(lambda: run_synthetic(store, spec))
    with Store(tmp / "ray.duckdb") as store, _ray() as ex:
        there, b = _timed(lambda: run_synthetic(store, spec, executor=ex))
    assert a.computed == b.computed == 4 * seeds
    return {"what": f"synthetic grid, {4 * seeds} cells", "in_process_s": here, "ray_2x1_s": there, "ratio": here / there}


def sag(tmp: Path, items: int) -> dict[str, Any]:
    from sag.group.config import preset
    from sag.evaluation.runner import run_group_eval
    from sag.evaluation.suite import SuiteSpec
    from sag.debate.runners import RunnerRecipe
    from sag.store.tables import SagStore

    spec, cfg = SuiteSpec("accuracy", n_items=items), preset("sag-6")
    recipe = RunnerRecipe(n_threads=1)
    with SagStore(tmp / "here.duckdb") as store:
        here, a = _timed(lambda: run_group_eval(store, spec, cfg, runners=recipe, only=("accuracy/medqa",),
                                                measure_memory=False))
    with SagStore(tmp / "ray.duckdb") as store, _ray() as ex:
        there, b = _timed(lambda: run_group_eval(store, spec, cfg, runners=recipe, only=("accuracy/medqa",),
                                                 executor=ex))
    assert a.computed == b.computed == items
    return {"what": f"SAG-6 evaluation part accuracy/medqa, {items} items", "in_process_s": here, "ray_2x1_s": there,
            "ratio": here / there, "model_calls": a.model_calls}


def overhead(n: int) -> dict[str, Any]:
    from common.work import Unit, run_units

    units = [Unit(f"u{i}", f"u{i}", i) for i in range(n)]
    here, _ = _timed(lambda: run_units(ListSink(), units, NothingJob(), run_id="x"))
    with _ray() as ex:
        run_units(ListSink(), units[:4], NothingJob(), run_id="warm", executor=ex)  # Ray started, actors up
        there, _ = _timed(lambda: run_units(ListSink(), units, NothingJob(), run_id="x", executor=ex))
    return {"what": f"{n} empty units", "in_process_ms_per_unit": 1000 * here / n, "ray_ms_per_unit": 1000 * there / n}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=20)
    parser.add_argument("--tiny", type=int, default=500)
    parser.add_argument("--seeds", type=int, default=2, help="seeds of the synthetic grid (4 scenarios each)")
    parser.add_argument("--only", choices=("synthetic", "sag", "overhead"), default=None)
    args = parser.parse_args()
    os.environ.setdefault("DCEM_THREADS", "1")
    stamp = {"date": time.strftime("%Y-%m-%d"), "cpus": os.cpu_count()}
    with tempfile.TemporaryDirectory() as tmp:
        jobs = {"overhead": lambda: overhead(args.tiny), "synthetic": lambda: synthetic(Path(tmp), args.seeds),
                "sag": lambda: sag(Path(tmp), args.items)}
        for name, job in jobs.items():
            if args.only in (None, name):
                print(json.dumps({"benchmark": "executors", "measure": name, **stamp, **job()}), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
