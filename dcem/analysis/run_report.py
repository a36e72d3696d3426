"""The report of one synthetic run as ``python -m dcem report`` prints it: the comparison
with the baselines (Fig. 3), the partial-compliance ablation (Table 5) read at round T and
by round T, and the escalation ablation, each as mean ± std over seeds.

:func:`synthetic_report_text` reads a stored run and returns the text; :func:`read_synthetic_run`
checks and reads it (StoreError, one line, for an unknown run or a run of another kind);
:func:`synthetic_run_text` and :func:`synthetic_run_dict` shape a run read from the store
or from a run export.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pandas as pd

from dcem.analysis.charged_risk import DEFAULT_COST, check_escalation_cost, named_for_text
from dcem.analysis.report import (AT_T_METRICS, BY_T_METRICS, comparison_table, compliance_table, escalation_table,
                                  format_table, report_dict)
from dcem.store.database import Store, StoreError
from dcem.store.run_reads import run_kind, run_spec_text

__all__ = ["SyntheticRun", "read_synthetic_run", "synthetic_run_text", "synthetic_run_dict", "synthetic_report_text",
           "clinical_elsewhere"]


@dataclass(frozen=True)
class SyntheticRun:
    """A synthetic run's stored metrics and ablation rows (one row per seed) and its specification."""

    run_id: str
    metrics: pd.DataFrame
    ablation: pd.DataFrame
    spec: dict[str, Any]


def clinical_elsewhere(what: str) -> StoreError:
    """The error for clinical runs handed to the synthetic report: ``what`` and where to report them."""
    return StoreError(f"{what}: report clinical runs with python -m dcem_clinical report")


def read_synthetic_run(store: Store, run_id: str) -> SyntheticRun:
    """The stored run ``run_id``; StoreError for an unknown run or one of another kind."""
    store.check_run(run_id)
    kind = run_kind(store, run_id)
    if kind == "clinical":
        raise clinical_elsewhere(f"run {run_id} is a clinical run (python -m dcem_clinical report --run {run_id})")
    if kind != "synthetic":
        raise StoreError(f"run {run_id} is a {kind} run, not a synthetic one: python -m dcem report reports "
                         "synthetic runs")
    spec = json.loads(run_spec_text(store, run_id) or "{}")
    return SyntheticRun(run_id, store.metrics(run_id), store.ablation(run_id), spec)


def _threshold_line(spec: dict[str, Any]) -> str:
    """How the run's thresholds were chosen, in one line."""
    target = spec.get("risk_target")
    if not target:
        return "Thresholds: fitted on the tuning cases by the costed objective of eq. (1)"
    return (f"Thresholds: Learn-then-Test on the tuning cases, {target['risk']} at most {target['alpha']:g} with "
            f"probability at least {1 - target['delta']:.0%} ({target['fwer']}); a cell where no setting passed "
            "escalates every case")


def _compliance_text(table: pd.DataFrame, metrics: tuple[str, ...]) -> str:
    if table.empty:
        return "(no ablation results)"
    core = table[table["metric"].isin(metrics)].copy()
    core["metric"] = pd.Categorical(core["metric"], [m for m in metrics if m in set(core["metric"])])
    return format_table(core, index=["scenario", "xi", "horizon"], columns="metric")


def synthetic_run_text(run: SyntheticRun, *, escalation_cost: float = DEFAULT_COST) -> str:
    """The run's tables as text, final newline included (exactly what the command writes)."""
    cost = check_escalation_cost(escalation_cost)
    table5 = compliance_table(run.ablation)
    blocks = [
        f"Run {run.run_id}: mean ± std over seeds",
        _threshold_line(run.spec),
        f"System risk (escalation free) counts an escalated case as 0; the risk with escalation at {cost:g} "
        f"charges it {cost:g}.\n",
        "Comparison with baselines (Fig. 3)",
        format_table(named_for_text(comparison_table(run.metrics, escalation_cost=cost), cost),
                     index=["scenario", "metric"], columns="method"),
        "\nPartial-compliance ablation (Table 5, App. F: the signal and decision AT round T)",
        _compliance_text(table5, AT_T_METRICS),
        "\nSecond view: the outcome reached BY round T (first terminal signal up to T)",
        _compliance_text(table5, BY_T_METRICS),
        "\nEscalation ablation (D-CEM vs without STOP_AND_ESCALATE)",
        format_table(named_for_text(escalation_table(run.metrics, escalation_cost=cost), cost),
                     index=["scenario", "metric"], columns="method"),
    ]
    return "".join(block + "\n" for block in blocks)


def synthetic_run_dict(run: SyntheticRun, *, escalation_cost: float = DEFAULT_COST) -> dict[str, Any]:
    """The run's tables as plain data (``report --json``): run id, risk target if any, tables."""
    cost = check_escalation_cost(escalation_cost)
    extra = {"risk_target": run.spec["risk_target"]} if run.spec.get("risk_target") else {}
    return {"run_id": run.run_id, **extra, **report_dict(run.metrics, run.ablation, escalation_cost=cost)}


def synthetic_report_text(store: Store, run_id: str, *, escalation_cost: float = DEFAULT_COST) -> str:
    """What ``python -m dcem report --run RUN_ID`` prints for the stored synthetic run, final
    newline included; StoreError for an unknown run or a run of another kind, InputError for
    an escalation cost outside 0 to 1000."""
    cost = check_escalation_cost(escalation_cost)
    return synthetic_run_text(read_synthetic_run(store, run_id), escalation_cost=cost)
