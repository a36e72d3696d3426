"""Issue 51, item 6: Learn-then-Test's promise is per cell, over random CAL/TEST splits of
that cell.  A share pooled over cells hid a cell above delta, and a cell where no level ever
passes (every case escalated) shows 0 % above alpha by construction.  The check reports
cell by cell, worst first, and keeps those cells apart; BENCHMARKS.md prints that report of
the recorded lines."""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from common.errors import InputError
from dcem.calibration.risk_check import PROMISE, check_guarantee, per_cell, per_cell_markdown
from dcem.calibration.risk_control import RiskTarget
from dcem.synthetic.experiment import DEFAULT_CONFIG
from dcem.synthetic.pool import TrajectoryPool, trajectory_pool

ROOT = Path(__file__).resolve().parents[2]
BASE = DEFAULT_CONFIG.with_changes(t_max=6)
TARGETS = [RiskTarget(risk="system_risk", alpha=0.37), RiskTarget(risk="harmful_consensus", alpha=0.001)]


@lru_cache(maxsize=None)
def _pool(scenario: str) -> TrajectoryPool:
    return trajectory_pool(scenario, 0, 400, base=BASE)


def _summaries() -> list[dict[str, object]]:
    rows = []
    for scenario in ("S1", "S3a"):
        pool = _pool(scenario)
        for check in check_guarantee(pool.panel, pool.reports, pool.truth, BASE, TARGETS, pool.high_risk, n_cal=100,
                                     splits=40, rng=np.random.default_rng(0), compare_eq1=False):
            rows.append({"benchmark": "risk_control_cell", "pool": "synthetic", "cell": f"{scenario}/seed 0",
                         **check.summary()})
    return rows


def test_cells_are_reported_worst_first_and_cells_where_nothing_passed_apart() -> None:
    rows = _summaries()
    tested, nothing = per_cell(rows)
    assert len(tested) + len(nothing) == len(rows) == 4
    assert all(r["guaranteed_share"] > 0 for r in tested) and all(r["guaranteed_share"] == 0 for r in nothing)
    assert nothing and all(r["risk"] == "harmful_consensus" for r in nothing)  # 0.1 % cannot be shown on 100 cases
    shares = [r["ltt_violation_share"] for r in tested]
    assert shares == sorted(shares, reverse=True)
    assert all(r["kept"] == (r["ltt_violation_share"] <= r["delta"]) for r in tested + nothing)
    with pytest.raises(InputError):
        per_cell([{k: v for k, v in rows[0].items() if k != "cell"}])


def test_a_cell_over_delta_leads_the_report_where_a_pooled_share_would_hide_it() -> None:
    """The issue's case, with the shipped shares: one cell at 13.5 % among cells at 0 %
    pools to under delta; per cell it comes first, marked over delta."""
    base = {"benchmark": "risk_control_cell", "pool": "clinical x", "risk": "harmful_consensus", "alpha": 0.05,
            "delta": 0.1, "n_cal": 50, "n_test": 50, "splits": 200, "ltt_mean_rate": 0.01, "ltt_mean_decided": 0.4,
            "eq1_violation_share": 0.1, "eq1_mean_decided": 0.5}
    rows = [{**base, "cell": f"S1/seed {k}", "guaranteed_share": 1.0, "ltt_violation_share": 0.0} for k in range(5)]
    rows += [{**base, "cell": "S3a/seed 0", "guaranteed_share": 1.0, "ltt_violation_share": 0.135},
             {**base, "cell": "S2/seed 0", "guaranteed_share": 0.0, "ltt_violation_share": 0.0}]
    assert np.mean([r["ltt_violation_share"] for r in rows]) < 0.1  # pooled, the promise looks kept
    tested, nothing = per_cell(rows)
    assert tested[0]["cell"] == "S3a/seed 0" and not tested[0]["kept"]
    assert [r["cell"] for r in nothing] == ["S2/seed 0"]
    text = per_cell_markdown(rows)
    table = [line for line in text.splitlines() if line.startswith("| S")]
    assert len(table) == 1 and table[0].startswith("| S3a/seed 0") and "13.5% (over delta)" in table[0]
    assert "1 rows in which no level passed" in text and "per cell" in PROMISE


def test_benchmarks_md_prints_the_per_cell_report_of_the_recorded_lines() -> None:
    lines = [json.loads(t) for t in (ROOT / "benchmarks" / "results" / "risk_control.jsonl").read_text(
        encoding="utf-8").splitlines() if t.strip()]
    cells = [r for r in lines if r.get("benchmark") == "risk_control_cell"]
    assert len(cells) == 6 * (4 + 20 + 40)  # six targets on 4 synthetic pools and 60 clinical cells
    assert per_cell_markdown(lines).strip() in (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")
