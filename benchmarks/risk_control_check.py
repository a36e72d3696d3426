"""The Learn-then-Test promise checked on data: random CAL/TEST splits of recorded cases.

Two kinds of pool, each replayed under every setting once:

* ``synthetic``: per scenario, ``--pool`` fresh cases of the seed-0 world deliberated
  under the shipped defaults (t_max 12), the panel fitted as ``run synthetic`` fits it;
  ``--splits`` splits into ``--n-cal`` CAL cases and the rest as TEST;
* ``clinical``: every (scenario, seed) cell of a shipped clinical run export (its TEST
  cases, its own panel and fitted configuration); ``--clinical-splits`` splits per cell
  into half CAL, half TEST.

Per target (risk, alpha; delta 0.1) and cell: the share of splits whose TEST rate
exceeds alpha (the promise, per cell: at most delta), the share of splits in which a
level passed, the mean TEST rate and decided share of the LTT choice, and the same for
the eq. (1) fit on the same CAL cases.  One JSON line per (cell, target), benchmark
``risk_control_cell``; append them to benchmarks/results/risk_control.jsonl:

    DCEM_THREADS=1 .venv/bin/python benchmarks/risk_control_check.py >> benchmarks/results/risk_control.jsonl

``--markdown FILE`` prints BENCHMARKS.md's tables from such lines instead: the cells in
which a level passed, worst first, and apart from them the cells in which nothing ever
passed (every case escalated, so their 0 % above alpha is no evidence).  A share pooled
over cells is not the promise and is not printed.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Iterator

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from dcem.calibration.risk_check import check_guarantee, per_cell_markdown  # noqa: E402
from dcem.calibration.risk_control import RiskTarget  # noqa: E402

TARGETS = (RiskTarget(risk="system_risk", alpha=0.05), RiskTarget(risk="system_risk", alpha=0.1),
           RiskTarget(risk="system_risk", alpha=0.3), RiskTarget(risk="harmful_consensus", alpha=0.01),
           RiskTarget(risk="harmful_consensus", alpha=0.05),
           RiskTarget(risk="harmful_among_decided", alpha=0.05, fwer="bonferroni"))


def _synthetic(args: argparse.Namespace) -> Iterator[tuple[str, Any, Any, Any, Any, Any, Any, int]]:
    from dcem.synthetic.experiment import DEFAULT_CONFIG
    from dcem.synthetic.pool import trajectory_pool

    base = DEFAULT_CONFIG.with_changes(t_max=12)
    for scenario in ("S1", "S2", "S3a", "S3b"):
        pool = trajectory_pool(scenario, 0, args.pool, base=base)
        yield f"synthetic {scenario}/seed 0", pool.panel, pool.reports, None, pool.truth, base, pool.high_risk, \
            args.n_cal


def _clinical(export: Path) -> Iterator[tuple[str, Any, Any, Any, Any, Any, Any, int]]:
    from dcem.analysis.run_replay import load_run_replay
    from dcem.store.database import Store
    from dcem.store.run_import import import_run_export

    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "s.duckdb") as store:
        for run_id in import_run_export(store, export):
            for cell in load_run_replay(store, run_id).cells:
                yield (f"{export.name} {run_id} {cell.scenario}/seed {cell.seed}", cell.panel, cell.reports,
                       cell.probabilities, cell.truth, cell.config, cell.high_risk, len(cell.truth) // 2)


def _line(pool: str, cell: str, cases: int, summary: dict[str, Any], began: float) -> str:
    return json.dumps({"benchmark": "risk_control_cell", "pool": pool, "cell": cell, "cases": cases, **summary,
                       "seconds": round(time.monotonic() - began, 1)})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pool", type=int, default=3000)
    parser.add_argument("--n-cal", type=int, default=200)
    parser.add_argument("--splits", type=int, default=1000)
    parser.add_argument("--clinical", action="append", default=None,
                        help="shipped clinical export(s) (default: dcem_clinical_trio and dcem_clinical_views)")
    parser.add_argument("--clinical-splits", type=int, default=200)
    parser.add_argument("--markdown", default=None, metavar="FILE",
                        help="print the per-cell tables from the risk_control_cell lines of FILE; run nothing")
    args = parser.parse_args()
    if args.markdown is not None:
        lines = [json.loads(t) for t in Path(args.markdown).read_text(encoding="utf-8").splitlines() if t.strip()]
        sys.stdout.write(per_cell_markdown(lines))
        return
    exports = [Path(p) for p in (args.clinical or [ROOT / "data/results/dcem_clinical_trio",
                                                    ROOT / "data/results/dcem_clinical_views"])]
    rng = np.random.default_rng(0)
    for name, panel, reports, probs, truth, base, high, n_cal in _synthetic(args):
        began = time.monotonic()
        for check in check_guarantee(panel, reports, truth, base, TARGETS, high, n_cal=n_cal, splits=args.splits,
                                     rng=rng, probabilities=probs):
            print(_line("synthetic", name, len(truth), check.summary(), began), flush=True)
    for export in exports:
        for name, panel, reports, probs, truth, base, high, n_cal in _clinical(export):
            began = time.monotonic()
            checks = check_guarantee(panel, reports, truth, base, TARGETS, high, n_cal=n_cal,
                                     splits=args.clinical_splits, rng=rng, probabilities=probs)
            for check in checks:
                print(_line(f"clinical {export.name}", name, len(truth), check.summary(), began), flush=True)


if __name__ == "__main__":
    main()
