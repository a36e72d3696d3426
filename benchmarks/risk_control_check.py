"""The Learn-then-Test promise checked on data: random CAL/TEST splits of recorded cases.

Two kinds of pool, each replayed under every setting once:

* ``synthetic``: per scenario, ``--pool`` fresh cases of the seed-0 world deliberated
  under the shipped defaults (t_max 12), the panel fitted as ``run synthetic`` fits it;
  ``--splits`` splits into ``--n-cal`` CAL cases and the rest as TEST;
* ``clinical``: every (scenario, seed) cell of a shipped clinical run export (its TEST
  cases, its own panel and fitted configuration); ``--clinical-splits`` splits per cell
  into half CAL, half TEST.

Per target (risk, alpha; delta 0.1) and pool: the share of splits whose TEST rate
exceeds alpha (the promise: at most delta), the mean TEST rate and decided share of the
LTT choice, and the same for the eq. (1) fit on the same CAL cases.  One JSON line per
(pool, target); append them to benchmarks/results/risk_control.jsonl:

    .venv/bin/python benchmarks/risk_control_check.py
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

from dcem.calibration.risk_check import check_guarantee  # noqa: E402
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


def _merge(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Cells of one run: splits added up, shares and means weighted by splits."""
    out = dict(rows[0])
    total = sum(r["splits"] for r in rows)
    for key in [k for k in out if k.endswith(("_share", "_rate", "_decided"))]:
        out[key] = sum(r[key] * r["splits"] for r in rows) / total
    out.update(splits=total, cells=len(rows), worst_cell_violation=max(r["ltt_violation_share"] for r in rows))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pool", type=int, default=3000)
    parser.add_argument("--n-cal", type=int, default=200)
    parser.add_argument("--splits", type=int, default=1000)
    parser.add_argument("--clinical", action="append", default=None,
                        help="shipped clinical export(s) (default: dcem_clinical_trio and dcem_clinical_views)")
    parser.add_argument("--clinical-splits", type=int, default=200)
    args = parser.parse_args()
    exports = [Path(p) for p in (args.clinical or [ROOT / "data/results/dcem_clinical_trio",
                                                    ROOT / "data/results/dcem_clinical_views"])]
    rng = np.random.default_rng(0)
    for name, panel, reports, probs, truth, base, high, n_cal in _synthetic(args):
        began = time.monotonic()
        for check in check_guarantee(panel, reports, truth, base, TARGETS, high, n_cal=n_cal, splits=args.splits,
                                     rng=rng, probabilities=probs):
            print(json.dumps({"benchmark": "risk_control", "pool": name, "cases": len(truth), **check.summary(),
                              "seconds": round(time.monotonic() - began, 1)}), flush=True)
    for export in exports:
        per_target: dict[int, list[dict[str, Any]]] = {}
        began = time.monotonic()
        for name, panel, reports, probs, truth, base, high, n_cal in _clinical(export):
            checks = check_guarantee(panel, reports, truth, base, TARGETS, high, n_cal=n_cal,
                                     splits=args.clinical_splits, rng=rng, probabilities=probs)
            for i, check in enumerate(checks):
                per_target.setdefault(i, []).append(check.summary())
        for rows in per_target.values():
            print(json.dumps({"benchmark": "risk_control", "pool": f"clinical {export.name}", **_merge(rows),
                              "seconds": round(time.monotonic() - began, 1)}), flush=True)


if __name__ == "__main__":
    main()
