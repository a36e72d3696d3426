"""The synthetic worlds side by side against the paper's Fig. 3 and Table 5 cells.

The seed reads its agents three ways: App. D.1 samples the report from the softmax of
the rule scores (the specification's world), Table 5's accuracies need sharper agents
(the sharpened world), and App. B.7 says an agent "reports the MAP label" (the MAP
world).  :func:`world_comparison_markdown` puts every run of a synthetic export beside
the cells the paper states:

- Fig. 3 (section 5.2's text): D-CEM's accuracy in S3a (0.93) and S3b (0.90) and the
  baselines' range there (0.59-0.68 and 0.44-0.62), and high-risk misses of 0.00 in
  both;
- Table 5 (App. F): every (scenario, xi, T) cell of A1, A2, R_L, SA-HR and Esc., as the
  mean absolute difference between ours and the paper's means, per scenario and over all.

The world with the smallest Table 5 difference is named the closest, when the worlds'
readings cover the same scenarios.  A cell a world's run cannot fill (a scenario it did
not run, no ablation) shows "—", and a sentence below the table says so.
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import pandas as pd

from dcem.analysis.report import compliance_table

__all__ = ["FIG3", "TABLE5_METRICS", "table5_distance", "world_comparison_markdown"]

FIG3 = {"S3a": (0.93, (0.59, 0.68)), "S3b": (0.90, (0.44, 0.62))}  # D-CEM accuracy, baselines' range
TABLE5_METRICS = ("A1", "A2", "risk_at_T", "sa_hr", "escalation_at_T")
_BASELINES = ("single", "free", "pool")
_SCENARIOS = ("S1", "S2", "S3a", "S3b")


def table5_distance(ablation: pd.DataFrame, paper: Mapping[str, Any]) -> tuple[float, int]:
    """Mean absolute difference of our Table 5 means from the paper's, and the cells compared."""
    table = compliance_table(ablation)
    diffs = []
    for r in table.itertuples():
        ref = paper.get(str(r.scenario), {}).get(str(float(r.xi)), {}).get(str(int(r.horizon)), {})
        if str(r.metric) in TABLE5_METRICS and str(r.metric) in ref and not pd.isna(r.mean):
            diffs.append(abs(float(r.mean) - float(ref[str(r.metric)][0])))
    return (float(np.mean(diffs)) if diffs else float("nan")), len(diffs)


def _mean(metrics: pd.DataFrame, scenario: str, method: str, metric: str) -> float:
    rows = metrics[(metrics["scenario"] == scenario) & (metrics["method"] == method) & (metrics["metric"] == metric)]
    return float(rows["value"].mean()) if len(rows) else float("nan")


def _num(value: float, fmt: str = ".2f") -> str:
    return "—" if np.isnan(value) else format(value, fmt)


def _fig3_cells(metrics: pd.DataFrame) -> list[str]:
    cells = []
    for scen in FIG3:
        base = [b for b in (_mean(metrics, scen, m, "accuracy") for m in _BASELINES) if not np.isnan(b)]
        dcem = _mean(metrics, scen, "dcem", "accuracy")
        cells.append("—" if np.isnan(dcem) and not base else
                     f"{_num(dcem)} vs " + (f"{min(base):.2f}-{max(base):.2f}" if base else "—"))
    misses = [_mean(metrics, scen, "dcem", "high_risk_miss") for scen in FIG3]
    cells.append(" / ".join(_num(m) for m in misses))
    return cells


def _closest(scored: list[tuple[float, str, tuple[str, ...]]]) -> str:
    """The sentence naming the world closest to Table 5, or saying why none is named."""
    known = [s for s in scored if not np.isnan(s[0])]
    if not known:
        return "No world is named closest to Table 5: the export holds no Table 5 readings."
    if len({s[2] for s in known}) > 1:
        return "No world is named closest to Table 5: the worlds' readings cover different scenarios."
    if len(known) == 1 and len(scored) > 1:
        return f"No world is named closest to Table 5: only {known[0][1]} has Table 5 readings."
    best = min(known)
    return f"Closest to Table 5: {best[1]} (mean absolute difference {best[0]:.3f})."


def world_comparison_markdown(export: Any, paper: Mapping[str, Any], label: Any) -> str:
    """A markdown table: one row per run of ``export`` (a synthetic RunExport) and the
    paper's row; ``label(spec)`` names a run's world.  The closest world is named below."""
    lines = ["| world | S3a accuracy: D-CEM vs baselines | S3b accuracy: D-CEM vs baselines | "
             "high-risk miss S3a / S3b | Table 5 difference S1 / S2 / S3a / S3b | all (cells) |", "|---" * 6 + "|"]
    lines.append(f"| paper | {FIG3['S3a'][0]:.2f} vs {FIG3['S3a'][1][0]:.2f}-{FIG3['S3a'][1][1]:.2f} | "
                 f"{FIG3['S3b'][0]:.2f} vs {FIG3['S3b'][1][0]:.2f}-{FIG3['S3b'][1][1]:.2f} | 0.00 / 0.00 | 0 | 0 |")
    scored: list[tuple[float, str, tuple[str, ...]]] = []
    unfilled = False
    for run_id in export.run_ids:
        spec = export.run(run_id)["spec"]
        metrics = export.metrics[export.metrics["run_id"] == run_id]
        ablation = export.ablation[export.ablation["run_id"] == run_id]
        distance, n = table5_distance(ablation, paper)
        per = [table5_distance(ablation[ablation["scenario"] == scen], paper)[0] for scen in _SCENARIOS]
        name = str(label(spec))
        scored.append((distance, name, tuple(s for s, d in zip(_SCENARIOS, per) if not np.isnan(d))))
        cells = [*_fig3_cells(metrics), " / ".join(_num(d) for d in per), f"{_num(distance, '.3f')} ({n})"]
        unfilled = unfilled or any("—" in c for c in cells)
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    if unfilled:
        lines += ["", "— marks a cell the export cannot fill: the world's run holds no results (or no Table 5 "
                  "readings) of that scenario."]
    lines += ["", _closest(scored)]
    return "\n".join(lines)
