"""Server-side dashboard timings on a run of 10,000 cases.

Usage: python benchmarks/dashboard_benchmark.py [--db PATH]

Without --db it first stores a synthetic run of 100 cells x 100 cases (4 scenarios x 25
seeds, 2,000 calibration samples per seed) in a temporary file.  It then drives each page
with Streamlit's AppTest (the same script run the server does, without the browser) and
times: the first load of every page in a new session, and on the what-if page the rerun
after a threshold change (re-scoring every case, the 20-point trade-off sweep and all
figures).  Prints a table and one JSON line.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from streamlit.testing.v1 import AppTest  # noqa: E402

from dcem.core.config import MediatorConfig  # noqa: E402
from dcem.store.database import Store  # noqa: E402
from dcem.synthetic.spec import SyntheticSpec, run_synthetic  # noqa: E402

PAGES = ("overview", "calibration", "whatif", "walkthrough", "experiments", "review")


def build(path: Path) -> None:
    spec = SyntheticSpec(seeds=tuple(range(25)), n_train=2000, ablation=False,
                         base_config=MediatorConfig(prior="empirical"))
    with Store(path) as store:
        run_synthetic(store, spec)


def timed_run(at: AppTest) -> float:
    t = time.perf_counter()
    at.run()
    elapsed = time.perf_counter() - t
    if at.exception:
        raise RuntimeError(at.exception[0].message)
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", type=Path, default=None)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    db = args.db or Path(tempfile.mkdtemp()) / "bench.duckdb"
    if not db.exists():
        print(f"building a 10,000-case run in {db} ...", file=sys.stderr)
        build(db)
    os.environ["DCEM_DB"] = str(db)
    with Store(db) as store:
        n_cases = store.con.execute("SELECT count(*) FROM cases").fetchone()[0]
    opens = []
    for _ in range(20):  # each page run opens the store and closes it at its end (studio.store_scope)
        t = time.perf_counter()
        Store(db).close()
        opens.append(time.perf_counter() - t)
    first_load = {}
    for page in PAGES:
        at = AppTest.from_file(str(ROOT / "pages" / f"{page}.py"), default_timeout=300)
        first_load[page] = timed_run(at)
    at = AppTest.from_file(str(ROOT / "pages" / "whatif.py"), default_timeout=300)
    timed_run(at)
    changes, others, weights = [], [], []
    for i in range(args.repeats):
        # the swept threshold (eps_safe): metrics, mix and figures; the sweep curve is reused
        at.slider(key="wi_eps_safe").set_value(0.5 + 0.1 * i)
        changes.append(timed_run(at))
        # another threshold (eps_low): the 20-point sweep of eps_safe is recomputed as well
        at.slider(key="wi_eps_low").set_value(4.0 + 0.1 * i)
        others.append(timed_run(at))
        # an energy weight (beta): every cell's mediator table is rebuilt, then the sweep
        at.slider(key="wi_beta").set_value(0.5 + 0.25 * i)
        weights.append(timed_run(at))
    result = {"benchmark": "dashboard", "cases": n_cases, "first_load_s": first_load,
              "threshold_change_s_median": statistics.median(changes),
              "threshold_change_s_min": min(changes),
              "other_threshold_with_sweep_s_median": statistics.median(others),
              "energy_weight_change_s_median": statistics.median(weights), "repeats": args.repeats,
              "store_open_close_s_median": statistics.median(opens)}
    print(f"cases: {n_cases}")
    for page, s in first_load.items():
        print(f"first load {page:12s} {s * 1000:8.0f} ms")
    print(f"what-if threshold change: median {result['threshold_change_s_median'] * 1000:.0f} ms, "
          f"best {result['threshold_change_s_min'] * 1000:.0f} ms over {args.repeats}")
    print(f"what-if change of another threshold (sweep recomputed): median "
          f"{result['other_threshold_with_sweep_s_median'] * 1000:.0f} ms")
    print(f"what-if change of an energy weight (tables and sweep recomputed): median "
          f"{result['energy_weight_change_s_median'] * 1000:.0f} ms")
    share = result["store_open_close_s_median"] / result["threshold_change_s_median"]
    print(f"store open and close (once per page run): median {result['store_open_close_s_median'] * 1000:.1f} ms, "
          f"{share:.0%} of the threshold change")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
