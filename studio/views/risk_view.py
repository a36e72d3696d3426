"""The what-if page's "Thresholds with a guarantee" as plain data: the per-cell table,
the one-line summary, and the points of one cell's trade-off chart."""
from __future__ import annotations

from typing import Any

import pandas as pd

from dcem.analysis.whatif_risk import CellRiskControl, pooled_risk_control
from dcem.calibration.risk_control import RISKS, RiskTarget

__all__ = ["RISK_WORDS", "risk_table", "risk_summary", "cell_curve", "cell_label"]

RISK_WORDS = {"harmful_consensus": "Harmful consensus (share of all cases)",
              "harmful_among_decided": "Harmful consensus among decided cases",
              "system_risk": "System risk R_L^sys"}
assert set(RISK_WORDS) == set(RISKS)


def cell_label(cell: CellRiskControl) -> str:
    return f"{cell.scenario} / seed {cell.seed}"


def risk_table(cells: list[CellRiskControl]) -> pd.DataFrame:
    """One row per cell: the CAL half's choice and both settings on the TEST half."""
    return pd.DataFrame([{
        "cell": cell_label(c), "CAL / TEST cases": f"{c.n_cal} / {c.n_test}",
        "guarantee": "yes" if c.fit.guaranteed else "no: every case escalated",
        "decision energy at most": c.fit.chosen_lambda,
        "CAL rate": c.fit.report["cal_rate"], "CAL decided": c.fit.report["cal_decided_share"],
        "TEST rate": c.test_rate, "TEST decided": c.test_decided,
        "TEST rate, run's thresholds": c.own_rate, "TEST decided, run's thresholds": c.own_decided,
    } for c in cells])


def risk_summary(cells: list[CellRiskControl], target: RiskTarget) -> str:
    p = pooled_risk_control(cells)
    name = RISK_WORDS[target.risk].lower()
    return (f"{p['guaranteed']} of {p['cells']} cells found a setting whose {name} is at most {target.alpha:g} "
            f"with probability at least {1 - target.delta:.0%}. On the TEST halves it decided "
            f"{p['test_decided']:.0%} of the cases with a rate of {p['test_rate']:.3g}; the run's own thresholds "
            f"decided {p['own_decided']:.0%} with a rate of {p['own_rate']:.3g}.")


def cell_curve(cell: CellRiskControl) -> dict[str, Any]:
    """The CAL half's settings as points (decided share, rate), passed or not, and the chosen one."""
    rows = cell.fit.rows
    chosen = next((r for r in rows if r["lam"] == cell.fit.chosen_lambda), None)
    return {"decided": [r["decided_share"] for r in rows], "rate": [r["rate"] for r in rows],
            "passed": [r["passed"] for r in rows], "lam": [r["lam"] for r in rows],
            "chosen": None if chosen is None else (chosen["decided_share"], chosen["rate"], chosen["lam"]),
            "test": (cell.test_decided, cell.test_rate), "own": (cell.own_decided, cell.own_rate)}
