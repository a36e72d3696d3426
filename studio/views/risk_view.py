"""The what-if page's "Thresholds with a guarantee" as plain data: the per-cell table,
the one-line summary, the promise in words, and the points of one cell's trade-off chart.

One unit per kind of number, as on the rest of the page: a controlled share of cases
(harmful consensus, harmful consensus among decided cases) and a decided share are
percentages with one decimal; the system risk is a mean loss with three decimals.  A cell
where no energy level passes has no level and no CAL rate: the table says "none passed",
not None.
"""
from __future__ import annotations

from typing import Any

import pandas as pd

from dcem.analysis.whatif_risk import CellRiskControl, cells_worst_first, guarantee_counts, pooled_risk_control
from dcem.calibration.risk_control import RISKS, RiskTarget

__all__ = ["RISK_WORDS", "RISK_TABLE_COLUMNS", "is_share", "rate_text", "risk_table", "risk_summary", "risk_statement",
           "cell_curve", "cell_label"]

RISK_WORDS = {"harmful_consensus": "Harmful consensus (share of all cases)",
              "harmful_among_decided": "Harmful consensus among decided cases",
              "system_risk": "System risk R_L^sys"}
assert set(RISK_WORDS) == set(RISKS)
NONE_PASSED = "none passed"
# column -> (title, tooltip)
RISK_TABLE_COLUMNS: dict[str, tuple[str, str]] = {
    "cell": ("Cell", "Scenario and seed."),
    "split": ("CAL / TEST", "The cell's stored cases, split at random: the level is chosen on CAL and measured on "
                            "TEST."),
    "guarantee": ("Passed", "Whether some energy level passed the test on the CAL half; where none passed, every "
                            "case is escalated."),
    "level": ("Energy at most", "The decision energy the chosen level allows (cases above it are escalated)."),
    "cal_rate": ("CAL rate", "The controlled rate of the chosen level on the CAL half."),
    "test_rate": ("TEST rate", "The controlled rate of the chosen level on the TEST half."),
    "above": ("Above the bound", "Whether the chosen level's rate on the TEST half exceeds the bound. The promise "
                                 "allows this in a share delta of random CAL/TEST splits of a cell; each cell here "
                                 "has one split."),
    "own_rate": ("TEST rate, own", "The controlled rate of the run's own thresholds on the TEST half."),
    "cal_decided": ("CAL decided", "Share of the CAL half decided (not escalated) at the chosen level."),
    "test_decided": ("TEST decided", "Share of the TEST half decided at the chosen level."),
    "own_decided": ("TEST decided, own", "Share of the TEST half the run's own thresholds decided."),
}


def is_share(risk: str) -> bool:
    """Whether the controlled rate is a share of cases (shown in percent), not a mean loss."""
    return risk != "system_risk"


def rate_text(value: float | None, risk: str) -> str:
    """A controlled rate in its unit: "2.4%" for a share, "0.181" for the system risk."""
    if value is None or pd.isna(value):
        return NONE_PASSED
    return f"{value:.1%}" if is_share(risk) else f"{value:.3f}"


def _share(value: float) -> str:
    return f"{value:.1%}"


def cell_label(cell: CellRiskControl) -> str:
    return f"{cell.scenario} / seed {cell.seed}"


def risk_table(cells: list[CellRiskControl]) -> pd.DataFrame:
    """One row per cell: the CAL half's choice and both settings on the TEST half, as text
    in each number's unit (:data:`RISK_TABLE_COLUMNS` names the columns); the cells where a
    level passed first, worst first (largest TEST rate), then those where none passed."""
    rows = []
    for c in cells_worst_first(cells):
        risk = c.fit.target.risk
        passed = c.fit.chosen_lambda is not None
        rows.append({
            "cell": cell_label(c), "split": f"{c.n_cal} / {c.n_test}",
            "guarantee": "yes" if c.fit.guaranteed else "no: all escalated",
            "level": f"{c.fit.chosen_lambda:.3f}" if passed else NONE_PASSED,
            "cal_rate": rate_text(c.fit.report.get("cal_rate"), risk),
            "test_rate": rate_text(c.test_rate, risk),
            "above": ("yes" if c.test_rate > c.fit.target.alpha else "no") if c.fit.guaranteed else NONE_PASSED,
            "own_rate": rate_text(c.own_rate, risk),
            "cal_decided": _share(c.fit.report.get("cal_decided_share") or 0.0),
            "test_decided": _share(c.test_decided), "own_decided": _share(c.own_decided),
        })
    return pd.DataFrame(rows, columns=list(RISK_TABLE_COLUMNS))


def _bound(target: RiskTarget) -> str:
    return rate_text(target.alpha, target.risk)


def risk_summary(cells: list[CellRiskControl], target: RiskTarget) -> str:
    """The section's summary, cell by cell: where a level passed, where none did (every
    case escalated, nothing shown), how many passed cells are above the bound on their
    TEST half against what the promise allows, the worst; then the decided shares over all cells."""
    n = guarantee_counts(cells, target)
    p = pooled_risk_control(cells)
    name = RISK_WORDS[target.risk].lower()
    unit = "" if is_share(target.risk) else " (mean loss)"
    out = (f"{n['passed']} of {n['cells']} cells found a setting whose {name} is at most {_bound(target)}{unit} with "
           f"probability at least {1 - target.delta:.1%}.")
    if n["none_passed"]:
        out += (f" In the other {n['none_passed']} no level passed and every case is escalated, so their rate of 0 "
                "shows nothing.")
    if n["worst"] is not None:
        worst = n["worst"]
        out += (f" The promise is per cell, over random draws of a cell's CAL half, and each cell here has one "
                f"draw: up to {target.delta:.1%} of the passed cells may be above the bound on their TEST half by "
                f"chance. {n['above']} of {n['passed']} are; the worst, first in the table, is {cell_label(worst)} at "
                f"{rate_text(worst.test_rate, target.risk)}.")
    return (out + f" Over every cell's TEST half, the chosen levels decided {_share(p['test_decided'])} of the cases "
            f"and the run's own thresholds {_share(p['own_decided'])}; each cell's rates are in the table.")


_NAMES = {"harmful_consensus": "the share of cases ending in a harmful consensus",
          "harmful_among_decided": "the share of harmful consensus among decided cases",
          "system_risk": "the system risk R_L^sys"}


def risk_statement(cell: CellRiskControl) -> str:
    """The promise of one cell's choice in words, in the page's units."""
    target = cell.fit.target
    if cell.fit.chosen_lambda is None:
        return (f"No setting could be shown to keep {_NAMES[target.risk]} at most {_bound(target)} with probability "
                f"{1 - target.delta:.1%} on this cell's CAL half: every case is escalated.")
    return (f"With probability at least {1 - target.delta:.1%} over the draw of the CAL cases, {_NAMES[target.risk]} "
            f"on new cases like them is at most {_bound(target)} (decision energy at most "
            f"{cell.fit.chosen_lambda:.3f}).")


def cell_curve(cell: CellRiskControl) -> dict[str, Any]:
    """The CAL half's settings as points (decided share, rate), passed or not, and the chosen one."""
    rows = cell.fit.rows
    chosen = next((r for r in rows if r["lam"] == cell.fit.chosen_lambda), None)
    return {"decided": [r["decided_share"] for r in rows], "rate": [r["rate"] for r in rows],
            "passed": [r["passed"] for r in rows], "lam": [r["lam"] for r in rows],
            "chosen": None if chosen is None else (chosen["decided_share"], chosen["rate"], chosen["lam"]),
            "test": (cell.test_decided, cell.test_rate), "own": (cell.own_decided, cell.own_rate)}
