"""The synthetic experiment's REPRODUCTION tables (Fig. 3, Table 5, Table 1 style) as markdown.

:func:`render_synthetic_markdown` prints, for every synthetic run of an export (the
specification's world first, then any variant), the comparison with the baselines
(section 5.2, Fig. 3), the partial-compliance ablation read at round T as App. F reads
it, beside the paper's Table 5 (``data/dcem_paper/table5.json``), and the escalation
ablation.  Values are mean ± std over seeds (ddof 0), two decimals.  Beside the system risk
(escalation free: an escalated case counts 0) stands the risk with escalation charged at
``escalation_cost`` (:mod:`dcem.analysis.charged_risk`, default 0.5).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from common.db import PROJECT_ROOT
from dcem.analysis.charged_risk import CHARGED, DEFAULT_COST, text_names
from dcem.analysis.world_comparison import world_comparison_markdown
from dcem.analysis.report import compliance_table, comparison_table
from dcem.core.vocabulary import method_label
from common.errors import InputError

__all__ = ["render_synthetic_markdown", "load_paper_table5", "PAPER_TABLE5", "world_label", "short_world"]

PAPER_TABLE5 = PROJECT_ROOT / "data" / "dcem_paper" / "table5.json"
_METHODS = ("single", "free", "pool", "dcem", "dcem_noesc")
_SCENARIOS = ("S1", "S2", "S3a", "S3b")
_XI_SHOWN = (0.25, 1.0)


def load_paper_table5(path: Path | None = None) -> dict[str, Any]:
    """The paper's Table 5: scenario -> xi -> T -> metric -> [mean, std]."""
    file = path or PAPER_TABLE5
    try:
        return dict(json.loads(file.read_text(encoding="utf-8"))["table5"])
    except (OSError, ValueError, KeyError) as exc:
        raise InputError("paper", f"cannot read the paper's Table 5 from {file}: {exc}") from None


def world_label(spec: Mapping[str, Any]) -> str:
    """'the specification's world' or a labelled variant, from a run's spec."""
    sharp, kappa = float(spec.get("sharpness", 1.0)), float(spec.get("kappa", 1.0))
    comp, reports = spec.get("compliance", "adopt"), spec.get("reports", "sample")
    if sharp == 1.0 and kappa == 1.0 and comp == "adopt" and reports == "sample":
        return "The specification's world (agents p ∝ exp(s), App. B.7)"
    parts = []
    if reports == "map":
        parts.append("MAP reports (the label of largest score, App. B.7's reading)")
    elif sharp != 1.0:
        parts.append(f"sharpened agents, p ∝ exp({sharp:g} s)")
    if kappa != 1.0:
        parts.append(f"peer influence kappa {kappa:g}")
    if comp != "adopt":
        parts.append(f"compliance {comp} (eq. 19)")
    return "Variant: " + ", ".join(parts)


def _ms(mean: float, std: float) -> str:
    return "n/a" if pd.isna(mean) else f"{mean:.2f} ± {std:.2f}"


def _cells(metrics: pd.DataFrame, cost: float) -> dict[tuple[str, str, str], tuple[float, float]]:
    table = comparison_table(metrics, escalation_cost=cost)
    return {(str(r.scenario), str(r.method), str(r.metric)): (float(r.mean), float(r.std))
            for r in table.itertuples()}


def _method_table(cells: Mapping[tuple[str, str, str], tuple[float, float]], metric: str) -> list[str]:
    head = "| scen. | " + " | ".join(method_label(m) for m in _METHODS) + " |"
    lines = [head, "|---" * (len(_METHODS) + 1) + "|"]
    for scen in _SCENARIOS:
        row = [_ms(*cells.get((scen, m, metric), (float("nan"), 0.0))) for m in _METHODS]
        lines.append(f"| {scen} | " + " | ".join(row) + " |")
    return lines


def _pair_table(cells: Mapping[tuple[str, str, str], tuple[float, float]]) -> list[str]:
    lines = ["| scen. | " + " | ".join(method_label(m) for m in _METHODS) + " |",
             "|---" * (len(_METHODS) + 1) + "|"]
    for scen in _SCENARIOS:
        row = [f"{cells[(scen, m, 'high_risk_miss')][0]:.2f} / {cells[(scen, m, 'harmful_consensus')][0]:.2f}"
               for m in _METHODS]
        lines.append(f"| {scen} | " + " | ".join(row) + " |")
    return lines


def _behaviour(cells: Mapping[tuple[str, str, str], tuple[float, float]]) -> str:
    def per(metric: str) -> str:
        return ", ".join(f"{s} {cells[(s, 'dcem', metric)][0]:.2f}" for s in _SCENARIOS)
    decided = (f"; decided (App. E's certified, budget decisions included) {per('decided_rate')}"
               if all((s, 'dcem', 'decided_rate') in cells for s in _SCENARIOS) else "")
    return (f"D-CEM's terminal actions: certified rate {per('certified_rate')}{decided}; escalation rate "
            f"{per('escalation_rate')}; average rounds {per('avg_rounds')} (Free discussion: "
            f"{cells[('S1', 'free', 'avg_rounds')][0]:.0f}).")


def _table5(ablation: pd.DataFrame, paper: Mapping[str, Any]) -> list[str]:
    table = compliance_table(ablation)
    got = {(str(r.scenario), float(r.xi), int(r.horizon), str(r.metric)): float(r.mean) for r in table.itertuples()}

    def pair(scen: str, xi: float, horizon: int, a: str, b: str) -> tuple[str, str]:
        ours = f"{got[(scen, xi, horizon, a)]:.2f} / {got[(scen, xi, horizon, b)]:.2f}"
        ref = paper.get(scen, {}).get(str(xi), {}).get(str(horizon), {})
        theirs = f"{ref[a][0]:.2f} / {ref[b][0]:.2f}" if a in ref and b in ref else "—"
        return ours, theirs

    def one(scen: str, xi: float, horizon: int, a: str) -> tuple[str, str]:
        ref = paper.get(scen, {}).get(str(xi), {}).get(str(horizon), {})
        return f"{got[(scen, xi, horizon, a)]:.2f}", (f"{ref[a][0]:.2f}" if a in ref else "—")

    lines = ["| scen. | xi | T=4 A1 / A2 | paper | T=12 A1 / A2 | paper | T=12 R_L | paper | "
             "T=12 SA-HR | paper | Esc. T=4 / 12 | paper |", "|---" * 12 + "|"]
    for scen in _SCENARIOS:
        for xi in _XI_SHOWN:
            if (scen, xi, 4, "A1") not in got:
                continue
            cols = [*pair(scen, xi, 4, "A1", "A2"), *pair(scen, xi, 12, "A1", "A2"),
                    *one(scen, xi, 12, "risk_at_T"), *one(scen, xi, 12, "sa_hr")]
            ref4 = paper.get(scen, {}).get(str(xi), {})
            esc = (f"{got[(scen, xi, 4, 'escalation_at_T')]:.2f} / {got[(scen, xi, 12, 'escalation_at_T')]:.2f}",
                   f"{ref4['4']['escalation_at_T'][0]:.2f} / {ref4['12']['escalation_at_T'][0]:.2f}"
                   if '4' in ref4 and '12' in ref4 else "—")
            lines.append(f"| {scen} | {xi:.0%} | " + " | ".join([*cols, *esc]) + " |")
    return lines


def _escalation(cells: Mapping[tuple[str, str, str], tuple[float, float]], cost: float) -> list[str]:
    lines = [f"| scen. | R_L^sys D-CEM | w/o esc. | {text_names(cost)[CHARGED]} D-CEM | w/o esc. | "
             "harmful consensus D-CEM | w/o esc. |", "|---" * 7 + "|"]
    for scen in _SCENARIOS:
        vals = [_ms(*cells[(scen, m, k)]) for k in ("system_risk", CHARGED, "harmful_consensus")
                for m in ("dcem", "dcem_noesc")]
        lines.append(f"| {scen} | " + " | ".join(vals) + " |")
    return lines


def _run_block(run: Mapping[str, Any], metrics: pd.DataFrame, ablation: pd.DataFrame,
               paper: Mapping[str, Any], cost: float) -> list[str]:
    spec = run["spec"]
    seeds = spec.get("seeds", [])
    cells = _cells(metrics, cost)
    out = [f"#### {world_label(spec)}", "",
           f"Run `{run['run_id']}`: sharpness {float(spec.get('sharpness', 1.0)):g}, kappa "
           f"{float(spec.get('kappa', 1.0)):g}, compliance {spec.get('compliance', 'adopt')}, xi {spec.get('xi')}, "
           f"seeds {min(seeds)}-{max(seeds)}, {spec.get('n_train')} calibration and {spec.get('n_eval')} "
           "evaluation cases per seed.", ""]
    for title, metric in (("Pooled accuracy (higher is better)", "accuracy"),
                          ("Expected diagnostic cost R_L (lower is better; every case's decision d1, "
                           "escalated or not)", "risk"),
                          ("System risk R_L^sys, escalation free (escalated cases go to the expert backstop and "
                           "count 0)", "system_risk"),
                          (f"Risk with escalation at {cost:g} (each escalated case counts {cost:g}, the escalation "
                           "cost of eq. 1's fit)", CHARGED)):
        out += [title, "", *_method_table(cells, metric), ""]
    out += ["High-risk miss rate / harmful consensus (lower is better)", "", *_pair_table(cells), "",
            _behaviour(cells), ""]
    if not ablation.empty:
        out += ["Table 5, read at round T as App. F reads it (agent accuracies, R_L and SA-HR of round T, "
                "share of round-T STOP_AND_ESCALATE signals); paper values beside ours:", "",
                *_table5(ablation, paper), ""]
    out += ["Escalation ablation (Table 1 style)", "", *_escalation(cells, cost), ""]
    return out


def render_synthetic_markdown(export: Any, *, paper: Mapping[str, Any] | None = None,
                              escalation_cost: float = DEFAULT_COST) -> str:
    """Markdown tables of every synthetic run in ``export`` (a
    :class:`dcem.store.run_export.RunExport`), the specification's world first."""
    table5 = load_paper_table5() if paper is None else paper
    runs = [export.run(r) for r in export.run_ids]
    if not runs or any(r["kind"] != "synthetic" for r in runs):
        raise InputError("export", "render_synthetic_markdown needs an export of synthetic runs only")
    runs.sort(key=lambda r: world_label(r["spec"]).startswith("Variant"))
    command = export.manifest.get("command", "")
    out = ["Commands:", "", "```", command.strip(), "```", ""]
    for run in runs:
        rid = run["run_id"]
        metrics = export.metrics[export.metrics["run_id"] == rid].drop(columns="run_id")
        ablation = export.ablation[export.ablation["run_id"] == rid].drop(columns="run_id")
        out += _run_block(run, metrics, ablation, table5, escalation_cost)
    if len(runs) > 1:
        out += ["#### The worlds side by side", "",
                "D-CEM's accuracy against the baselines' range where Fig. 3 states it, its high-risk miss "
                "rate, and the mean absolute difference of every Table 5 cell (A1, A2, R_L, SA-HR, Esc. at "
                "each xi and T) from the paper's:", "",
                world_comparison_markdown(export, table5, short_world), ""]
    return "\n".join(out).rstrip() + "\n"


def short_world(spec: Mapping[str, Any]) -> str:
    """A world's name in a few words (the comparison table's rows)."""
    label = world_label(spec)
    if label.startswith("The specification"):
        return "specification (sampled, exp(s))"
    return label.removeprefix("Variant: ")
