"""System risk with escalation charged at a stated cost, beside the seed's escalation-free one.

App. E's system risk R_L^sys = mean 1[u != ESC] L(d, y) counts an escalated case as 0:
the seed assumes an expert backstop that costs nothing.  A method that escalates half its
cases can then look safer than one that decides them all, however much the escalations
cost.  The charged risk counts each escalated case at ``cost`` instead,

    R_L^esc(c) = mean [ 1[u != ESC] L(d, y) + 1[u = ESC] c ] = R_L^sys + c * escalation rate,

per cell (scenario and seed), so mean and spread over seeds come from the cells' values as
for every other metric.  The default ``c`` is :data:`dcem.calibration.fitting.C_ESC` (0.5),
the escalation cost the thresholds of eq. (1) are fitted with.  Neither is stored: the
reports, tables and pages derive the charged risk from the stored ``system_risk`` and
``escalation_rate`` with the cost they are given.
"""
from __future__ import annotations

from typing import Any, Mapping

import pandas as pd

from common.errors import InputError
from common.fields import Number, check
from dcem.calibration.fitting import C_ESC

__all__ = ["CHARGED", "DEFAULT_COST", "MAX_COST", "SYSTEM_WORDS", "check_escalation_cost", "charged_words",
           "charged_risk", "with_charged_risk", "with_charged_metrics", "with_charged_column", "text_names",
           "named_for_text"]

CHARGED = "charged_risk"  # the metric's name in tables (never stored)
DEFAULT_COST = C_ESC
MAX_COST = 1000.0
SYSTEM_WORDS = "System risk (escalation free)"


def check_escalation_cost(value: Any) -> float:
    """``value`` as a cost: a finite number from 0 to :data:`MAX_COST` (InputError naming
    ``escalation_cost`` otherwise)."""
    return float(check("escalation_cost", value, Number(0.0, MAX_COST, finite=True,
                                                       msg="must be a number from 0 to {high:g}, got {value!r}"),
                       error=InputError))


def charged_words(cost: float = DEFAULT_COST) -> str:
    """The charged risk's name in words, with its cost: "Risk with escalation at 0.5"."""
    return f"Risk with escalation at {check_escalation_cost(cost):g}"


def charged_risk(system_risk: float, escalation_rate: float, cost: float = DEFAULT_COST) -> float:
    """R_L^sys + cost * escalation rate (both over the same cases)."""
    return float(system_risk) + check_escalation_cost(cost) * float(escalation_rate)


def with_charged_risk(metrics: pd.DataFrame, cost: float = DEFAULT_COST) -> pd.DataFrame:
    """A long metrics frame (key columns, ``metric``, ``value``) with a :data:`CHARGED` row
    for every key combination that has both ``system_risk`` and ``escalation_rate`` (a
    method that never escalates has the same value in both); rows already named
    :data:`CHARGED` are replaced."""
    cost = check_escalation_cost(cost)
    if metrics.empty or not {"metric", "value"} <= set(metrics.columns):
        return metrics
    base = metrics[metrics["metric"].astype(str) != CHARGED].astype({"metric": str})
    keys = [c for c in base.columns if c not in ("metric", "value")]
    sys_rows = base[base["metric"] == "system_risk"]
    esc_rows = base[base["metric"] == "escalation_rate"]
    if sys_rows.empty or esc_rows.empty:
        return base.reset_index(drop=True)
    merged = sys_rows.merge(esc_rows[[*keys, "value"]], on=keys, how="inner", suffixes=("", "_esc"))
    charged = merged.assign(metric=CHARGED, value=merged["value"] + cost * merged["value_esc"])
    charged = charged.drop(columns="value_esc")[list(base.columns)]
    return pd.concat([base, charged], ignore_index=True)


def with_charged_metrics(metrics: Mapping[str, float], cost: float = DEFAULT_COST) -> dict[str, float]:
    """A metrics mapping (one value per name) with :data:`CHARGED` right after ``system_risk``."""
    out: dict[str, float] = {}
    for name, value in metrics.items():
        if name == CHARGED:
            continue
        out[name] = value
        if name == "system_risk" and "escalation_rate" in metrics:
            out[CHARGED] = charged_risk(value, metrics["escalation_rate"], cost)
    return out


def with_charged_column(frame: pd.DataFrame, cost: float = DEFAULT_COST) -> pd.DataFrame:
    """A wide frame (a ``system_risk`` and an ``escalation_rate`` column, one row per
    group) with a :data:`CHARGED` column right after ``system_risk``."""
    cost = check_escalation_cost(cost)
    if not {"system_risk", "escalation_rate"} <= set(frame.columns):
        return frame
    out = frame.drop(columns=[CHARGED], errors="ignore")
    values = out["system_risk"].astype(float) + cost * out["escalation_rate"].astype(float)
    out = out.copy()
    out.insert(list(out.columns).index("system_risk") + 1, CHARGED, values)
    return out


def text_names(cost: float = DEFAULT_COST) -> dict[str, str]:
    """How the command-line tables name the two risks, so each says which it is."""
    return {"system_risk": "system risk (escalation free)",
            CHARGED: f"risk with escalation at {check_escalation_cost(cost):g}"}


def named_for_text(table: pd.DataFrame, cost: float = DEFAULT_COST) -> pd.DataFrame:
    """A tidy table (a ``metric`` column) for a fixed-width text report: the two risks
    named by :func:`text_names`, the charged one right after the escalation-free one, the
    other metrics in the order they come."""
    names = text_names(cost)
    keys = list(dict.fromkeys(table["metric"].astype(str)))
    if CHARGED in keys and "system_risk" in keys:
        keys.remove(CHARGED)
        keys.insert(keys.index("system_risk") + 1, CHARGED)
    shown = [names.get(k, k) for k in keys]
    metric = table["metric"].astype(str).map(lambda k: names.get(k, k))
    return table.assign(metric=pd.Categorical(metric, categories=shown, ordered=True))
