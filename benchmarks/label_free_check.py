"""Confusions without labels against counted ones: at which CAL size labels stop mattering.

For each pool, CAL draws of ``n`` cases (10, 40, 200) give the agents' round-1 reports
and their truths; from them three sources build the panel's confusions and prior:
``labelled`` (counted with the truths, the shipped estimator), ``one-coin`` and
``dawid-skene`` (the EM of ``dcem.calibration.dawid_skene`` without the truths; the full
model needs three agents).  Per source: the mean absolute error of its confusions
against the labelled estimate of the same draw and against the reference (the pool's own
panel), the share of draws whose estimate was refused (a problem found), and D-CEM's
system risk, harmful consensus, accuracy and escalation on the pool's evaluation cases,
replayed with that panel and the reference thresholds; a ``reference`` line gives the
same metrics with the pool's own panel.

* ``synthetic``: per scenario, the seed-0 world (reference: its panel counted on 16,000
  labelled cases); 1,000 recorded cases fit the thresholds, 2,000 are replayed; CAL
  draws are fresh cases;
* ``clinical``: every cell of the shipped trio export (three members; reference: the
  cell's own panel and thresholds); CAL draws come from the cell's 100 stored cases and
  the rest are replayed (so ``n`` 200 is not possible there).

One JSON line per (pool, n, source); append them to benchmarks/results/label_free.jsonl:

    .venv/bin/python benchmarks/label_free_check.py
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

from dcem.calibration.dawid_skene import estimate_without_labels  # noqa: E402
from dcem.calibration.fitting import estimate_confusion, estimate_prior, fit_thresholds  # noqa: E402
from dcem.calibration.risk_control import mediator_states  # noqa: E402
from dcem.core.metrics import episode_metrics  # noqa: E402
from dcem.core.panel import Panel  # noqa: E402
from dcem.core.replay import score_states  # noqa: E402

SOURCES = ("labelled", "one-coin", "dawid-skene")
METRICS = ("system_risk", "harmful_consensus", "accuracy", "escalation_rate")


def _source(name: str, reports: np.ndarray, truth: np.ndarray, k: int) -> tuple[Any, Any, bool]:
    if name == "labelled":
        return estimate_confusion(truth, reports, k), estimate_prior(truth, k, "empirical"), True
    est = estimate_without_labels(reports, k, method=name)
    return est.confusion, est.prior, est.usable


def _metrics(ref: Panel, confusion: Any, prior: Any, cfg: Any, reports: Any, probs: Any, truth: Any,
             high: Any) -> dict[str, float]:
    panel = Panel(ref.labels, confusion, prior, ref.loss)
    scored = score_states(mediator_states(panel, reports, probs, cfg), cfg)
    m = episode_metrics(scored.outcome_decision, scored.outcome_action, scored.outcome_round, truth, ref.loss, high)
    return {k: m[k] for k in METRICS}


def _draws(pool: dict[str, Any], n: int, repeats: int, rng: np.random.Generator) -> Iterator[tuple[Any, Any]]:
    for _ in range(repeats):
        yield pool["draw"](n, rng)


def _summarise(name: str, n: int, source: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    usable = [r for r in rows if r["usable"]]
    out: dict[str, Any] = {"benchmark": "label_free", "pool": name, "n_cal": n, "source": source,
                           "draws": len(rows), "refused_share": 1 - len(usable) / len(rows) if rows else None}
    for key in ("error_vs_labelled", "error_vs_reference", *METRICS):
        vals = [r[key] for r in usable if r.get(key) is not None]
        out[key] = float(np.mean(vals)) if vals else None
    return out


def _run_pool(pool: dict[str, Any], sizes: tuple[int, ...], repeats: int, rng: np.random.Generator) -> None:
    ref, k = pool["panel"], len(pool["panel"].labels)
    for n in sizes:
        rows: dict[str, list[dict[str, Any]]] = {s: [] for s in SOURCES}
        for truth_c, rep_c in _draws(pool, n, repeats, rng):
            counted = estimate_confusion(truth_c, rep_c, k)
            for source in SOURCES:
                if source == "dawid-skene" and rep_c.shape[1] < 3:
                    continue
                confusion, prior, usable = _source(source, rep_c, truth_c, k)
                row = {"usable": usable, "error_vs_labelled": float(np.abs(confusion - counted).mean()),
                       "error_vs_reference": float(np.abs(confusion - ref.confusion).mean())}
                if usable:
                    row.update(_metrics(ref, confusion, prior, pool["config"], pool["reports"], pool["probs"],
                                        pool["truth"], pool["high"]))
                rows[source].append(row)
        rows["reference"] = [{"usable": True, "error_vs_labelled": None, "error_vs_reference": 0.0,
                              **_metrics(ref, ref.confusion, ref.prior, pool["config"], pool["reports"], pool["probs"],
                                         pool["truth"], pool["high"])}]
        for source, got in rows.items():
            if got:
                print(json.dumps(_summarise(pool["name"], n, source, got)), flush=True)


def _synthetic_pools() -> Iterator[dict[str, Any]]:
    from dcem.synthetic.experiment import DEFAULT_CONFIG
    from dcem.synthetic.pool import round_one_cases, trajectory_pool

    base = DEFAULT_CONFIG.with_changes(t_max=12)
    for scenario in ("S1", "S2", "S3a", "S3b"):
        pool = trajectory_pool(scenario, 0, 3000, base=base)
        cfg = fit_thresholds(pool.panel, pool.reports[:1000], pool.truth[:1000], base).config
        yield {"name": f"synthetic {scenario}/seed 0", "panel": pool.panel, "config": cfg,
               "reports": pool.reports[1000:], "probs": None, "truth": pool.truth[1000:], "high": pool.high_risk,
               "draw": lambda n, rng, s=scenario: round_one_cases(s, n, rng)}


def _clinical_pools(export: Path) -> Iterator[dict[str, Any]]:
    from dcem.analysis.run_replay import load_run_replay
    from dcem.store.database import Store
    from dcem.store.run_import import import_run_export

    with tempfile.TemporaryDirectory() as tmp, Store(Path(tmp) / "s.duckdb") as store:
        for run_id in import_run_export(store, export):
            for cell in load_run_replay(store, run_id).cells:
                first = cell.reports[:, 0, :] if cell.probabilities is None else \
                    cell.probabilities[:, 0].argmax(axis=-1)
                truth = np.asarray(cell.truth)

                def draw(n: int, rng: np.random.Generator, first: Any = first, truth: Any = truth) -> Any:
                    pick = rng.choice(len(truth), n, replace=False)
                    return truth[pick], first[pick]

                yield {"name": f"clinical {export.name} {cell.scenario}/seed {cell.seed}", "panel": cell.panel,
                       "config": cell.config, "reports": cell.reports, "probs": cell.probabilities, "truth": truth,
                       "high": cell.high_risk, "draw": draw}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--clinical-repeats", type=int, default=10)
    parser.add_argument("--clinical", default=str(ROOT / "data/results/dcem_clinical_trio"))
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    began = time.monotonic()
    for pool in _synthetic_pools():
        _run_pool(pool, (10, 40, 200), args.repeats, rng)
    for pool in _clinical_pools(Path(args.clinical)):
        _run_pool(pool, (10, 40), args.clinical_repeats, rng)
    print(json.dumps({"benchmark": "label_free", "seconds": round(time.monotonic() - began, 1)}), flush=True)


if __name__ == "__main__":
    main()
