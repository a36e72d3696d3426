"""D-CEM against every baseline with intervals: paired bootstrap over the TEST cases.

In one (dataset, scenario) the methods answer the same TEST cases, seed by seed, so the
difference D-CEM minus a baseline is paired by case.  :func:`paired_differences` pools
the cases of every seed and resamples them (``n_boot`` draws from an explicit
``numpy.random.Generator``) for a 95 % percentile interval of the mean difference of four
per-case quantities:

- ``system_risk``: L(d, y) when the method decided, 0 when it escalated (R_L^sys, escalation free);
- ``charged_risk``: L(d, y) when the method decided, the escalation cost when it escalated
  (:mod:`dcem.analysis.charged_risk`; ``escalation_cost``, default 0.5);
- ``harmful_consensus``: a wrong decision on a high-risk truth, not escalated;
- ``accuracy``: d = y (an escalated case keeps its pooled decision d1, as App. E counts it);
- ``escalation``: STOP_AND_ESCALATE.

A negative difference in either risk or in harmful consensus favours D-CEM.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import pandas as pd

from dcem.analysis.charged_risk import DEFAULT_COST, check_escalation_cost

__all__ = ["QUANTITIES", "case_quantities", "paired_differences", "paired_markdown", "export_paired_markdown"]

QUANTITIES = ("system_risk", "charged_risk", "harmful_consensus", "accuracy", "escalation")
_BASELINES = ("single", "free", "pool")
_NAMES = {"single": "Single", "free": "Free", "pool": "Pool"}


def case_quantities(outcomes: pd.DataFrame, high_risk: Sequence[int], *,
                    escalation_cost: float = DEFAULT_COST) -> pd.DataFrame:
    """Per (scenario, seed, case, method) the quantities of the module docstring."""
    cost = check_escalation_cost(escalation_cost)
    esc = outcomes["action"].astype(str) == "STOP_AND_ESCALATE"
    wrong = outcomes["decision"].astype(int) != outcomes["truth"].astype(int)
    high = outcomes["truth"].astype(int).isin(list(high_risk))
    return outcomes[["scenario", "seed", "case_id", "method"]].assign(
        system_risk=outcomes["loss"].astype(float) * ~esc,
        charged_risk=outcomes["loss"].astype(float) * ~esc + cost * esc,
        harmful_consensus=(wrong & high & ~esc).astype(float),
        accuracy=(~wrong).astype(float), escalation=esc.astype(float))


def paired_differences(quantities: pd.DataFrame, rng: np.random.Generator, *, n_boot: int = 2000,
                       method: str = "dcem") -> pd.DataFrame:
    """Rows (scenario, baseline, quantity, difference, low, high, n) of ``method`` minus each baseline."""
    rows: list[dict[str, Any]] = []
    for scenario, cell in quantities.groupby("scenario", sort=True):
        wide = cell.pivot_table(index=["seed", "case_id"], columns="method", values=list(QUANTITIES))
        draws = rng.integers(0, len(wide), size=(n_boot, len(wide)))
        for base in _BASELINES:
            if (QUANTITIES[0], base) not in wide.columns or (QUANTITIES[0], method) not in wide.columns:
                continue
            for q in QUANTITIES:
                diff = (wide[(q, method)] - wide[(q, base)]).to_numpy(float)
                boot = diff[draws].mean(axis=1)
                rows.append({"scenario": scenario, "baseline": base, "quantity": q, "difference": float(diff.mean()),
                             "low": float(np.percentile(boot, 2.5)), "high": float(np.percentile(boot, 97.5)),
                             "n": int(len(diff))})
    return pd.DataFrame(rows, columns=["scenario", "baseline", "quantity", "difference", "low", "high", "n"])


def paired_markdown(table: pd.DataFrame, scenarios: Sequence[str], *, escalation_cost: float = DEFAULT_COST) -> str:
    """A markdown table: one row per scenario and baseline, each quantity as ``diff [low, high]``."""
    lines = ["| scenario | D-CEM minus | cases | R_L^sys (escalation free) | "
             f"risk with escalation at {check_escalation_cost(escalation_cost):g} | harmful consensus | accuracy | "
             "escalation |", "|---" * 8 + "|"]
    for scenario in scenarios:
        for base in _BASELINES:
            part = table[(table["scenario"] == scenario) & (table["baseline"] == base)].set_index("quantity")
            if part.empty:
                continue
            cells = [f"{part.loc[q, 'difference']:+.3f} [{part.loc[q, 'low']:+.3f}, {part.loc[q, 'high']:+.3f}]"
                     for q in QUANTITIES]
            lines.append(f"| {scenario} | {_NAMES[base]} | {int(part['n'].iloc[0])} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def export_paired_markdown(export: Any, *, seed: int = 0, n_boot: int = 2000,
                           escalation_cost: float = DEFAULT_COST) -> str:
    """For every clinical run of a run export: its dataset and the paired table over every
    scenario (bootstrap draws from ``numpy.random.default_rng(seed)``, run by run)."""
    out = [f"D-CEM minus each baseline, mean over the TEST cases of every seed, 95 % paired bootstrap "
           f"interval ({n_boot} draws, seed {seed}); negative risks and harmful consensus favour D-CEM. R_L^sys "
           f"counts an escalated case as 0; the risk with escalation at {escalation_cost:g} charges it "
           f"{escalation_cost:g}."]
    for run_id in export.run_ids:
        spec = export.run(run_id)["spec"]
        cells = export.cells[export.cells["run_id"] == run_id]
        outcomes = export.outcomes[export.outcomes["run_id"] == run_id]
        if cells.empty or outcomes.empty:
            continue
        quantities = case_quantities(outcomes, [int(i) for i in cells.iloc[0]["high_risk"]],
                                     escalation_cost=escalation_cost)
        table = paired_differences(quantities, np.random.default_rng(seed), n_boot=n_boot)
        scenarios = sorted(set(table["scenario"]))
        out += ["", f"`{spec.get('dataset', '?')}` (run `{run_id}`):", "",
                paired_markdown(table, scenarios, escalation_cost=escalation_cost)]
    return "\n".join(out) + "\n"
