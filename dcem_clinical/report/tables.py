"""The clinical LLM tables (Appendix H, section 5.5) from stored metrics.

- :func:`table6`: system risk R_L^sys and harmful consensus H.C. of Single, Free, Pool
  and D-CEM per scenario (Table 6);
- :func:`table7`: D-CEM escalation rate and average rounds per scenario (Table 7);
- :func:`table1`: D-CEM against D-CEM without STOP_AND_ESCALATE (Table 1);
- :func:`detail_table`: accuracy, parse-error rate and the D-CEM action mix.

Every table is mean ± std over seeds (ddof 0), per dataset.  ``metrics`` frames carry
the columns of :meth:`dcem.store.database.Store.metrics` plus ``dataset``.  Tables 6 and 1
show, beside the system risk (an escalated case counts 0), the risk with escalation
charged at ``escalation_cost`` (``charged_risk``, :mod:`dcem.analysis.charged_risk`;
default 0.5).
"""
from __future__ import annotations

from typing import Any

import pandas as pd

from dcem.analysis.charged_risk import CHARGED, DEFAULT_COST, named_for_text, with_charged_risk
from dcem.analysis.report import format_table, mean_std

__all__ = ["table6", "table7", "table1", "detail_table", "clinical_text", "clinical_dict"]

_SCENARIO_ORDER = ("S1", "S2", "S3a", "S3b")
MIX = ("mix_continue", "mix_steer", "mix_decide", "mix_escalate")
_RISK_NAMES = ("decided_rate", "system_risk", CHARGED, "harmful_consensus")


def _pick(metrics: pd.DataFrame, methods: tuple[str, ...], names: tuple[str, ...]) -> pd.DataFrame:
    keep = metrics[metrics["method"].isin(methods) & metrics["metric"].isin(names)]
    if keep.empty:
        return pd.DataFrame(columns=["dataset", "scenario", "method", "metric", "mean", "std", "n"])
    out = mean_std(keep, ["dataset", "scenario", "method", "metric"])
    out["method"] = pd.Categorical(out["method"], [m for m in methods if m in set(out["method"])])
    out["metric"] = pd.Categorical(out["metric"], [m for m in names if m in set(out["metric"])])
    order = [s for s in _SCENARIO_ORDER if s in set(out["scenario"])]
    out["scenario"] = pd.Categorical(out["scenario"], order + sorted(set(out["scenario"]) - set(order)))
    return out.sort_values(["dataset", "metric", "method", "scenario"]).reset_index(drop=True)


def table6(metrics: pd.DataFrame, *, decided: bool = False, escalation_cost: float = DEFAULT_COST) -> pd.DataFrame:
    """``decided``: with each method's share of cases decided (the dashboard shows it beside
    every risk figure: an escalated case counts 0 in system risk); the charged risk at
    ``escalation_cost`` beside the system risk."""
    return _pick(with_charged_risk(metrics, escalation_cost), ("single", "free", "pool", "dcem"),
                 _RISK_NAMES[0 if decided else 1:])


def table7(metrics: pd.DataFrame) -> pd.DataFrame:
    return _pick(metrics, ("dcem",), ("escalation_rate", "avg_rounds"))


def table1(metrics: pd.DataFrame, *, decided: bool = False, escalation_cost: float = DEFAULT_COST) -> pd.DataFrame:
    """``decided``, ``escalation_cost``: as for :func:`table6`."""
    return _pick(with_charged_risk(metrics, escalation_cost), ("dcem", "dcem_noesc"),
                 _RISK_NAMES[0 if decided else 1:])


def detail_table(metrics: pd.DataFrame) -> pd.DataFrame:
    return _pick(metrics, ("single", "free", "pool", "dcem", "dcem_noesc"),
                 ("accuracy", "parse_error_rate") + MIX)


def clinical_text(metrics: pd.DataFrame, *, escalation_cost: float = DEFAULT_COST) -> str:
    """All clinical tables as fixed-width text, one block per dataset."""
    cost = escalation_cost
    blocks = [f"System risk (escalation free) counts an escalated case as 0; the risk with escalation at {cost:g} "
              f"charges it {cost:g}.", ""]
    for dataset, frame in metrics.groupby("dataset", sort=True):
        blocks.append(f"== {dataset} ==")
        for title, table in (("Table 6: system risk and harmful consensus", table6(frame, escalation_cost=cost)),
                             ("Table 7: D-CEM escalation rate and average rounds", table7(frame)),
                             ("Table 1: D-CEM with and without STOP_AND_ESCALATE", table1(frame, escalation_cost=cost)),
                             ("Accuracy, parse-error rate and D-CEM action mix", detail_table(frame))):
            blocks.append(title)
            blocks.append(format_table(named_for_text(table, cost), index=["metric", "method"], columns="scenario"))
            blocks.append("")
    return "\n".join(blocks).rstrip() + "\n"


def clinical_dict(metrics: pd.DataFrame, *, escalation_cost: float = DEFAULT_COST) -> dict[str, Any]:
    def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
        rows = frame.astype({c: str for c in ("method", "metric", "scenario") if c in frame})
        return [{k: (None if isinstance(v, float) and v != v else v) for k, v in r.items()}
                for r in rows.to_dict("records")]

    return {"escalation_cost": escalation_cost,
            "table6": records(table6(metrics, escalation_cost=escalation_cost)), "table7": records(table7(metrics)),
            "table1": records(table1(metrics, escalation_cost=escalation_cost)),
            "detail": records(detail_table(metrics))}
