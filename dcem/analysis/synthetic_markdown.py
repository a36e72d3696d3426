"""The synthetic experiment's REPRODUCTION tables (Fig. 3, Table 5, Table 1 style) as markdown.

:func:`render_synthetic_markdown` prints, for every synthetic run of an export (the
specification's world first, then any variant), the comparison with the baselines
(section 5.2, Fig. 3), the partial-compliance ablation read at round T as App. F reads
it, beside the paper's Table 5 (``data/dcem_paper/table5.json``), and the escalation
ablation.  Values are mean ± std over seeds (ddof 0), two decimals.  Beside the system risk
(escalation free: an escalated case counts 0) stands the risk with escalation charged at
``escalation_cost`` (:mod:`dcem.analysis.charged_risk`, default 0.5).

A run need not hold every scenario and method (``--scenarios S1,S3b``, an unfinished run,
``--no-ablation``): the tables show what the export holds, a sentence names the scenarios
and methods left out, and a block that means nothing without a method (the escalation
ablation without D-CEM w/o escalation, say) is replaced by one sentence saying why.
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
from dcem.core.vocabulary import DEFAULT_METHODS, SCENARIOS, method_label, order_methods
from common.errors import InputError

__all__ = ["render_synthetic_markdown", "load_paper_table5", "PAPER_TABLE5", "world_label", "short_world"]

PAPER_TABLE5 = PROJECT_ROOT / "data" / "dcem_paper" / "table5.json"
_XI_SHOWN = (0.25, 1.0)
_NA = (float("nan"), 0.0)
Cells = Mapping[tuple[str, str, str], tuple[float, float]]


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


def _and(names: list[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _mean(cells: Cells, key: tuple[str, str, str], fmt: str = ".2f") -> str:
    mean = cells.get(key, _NA)[0]
    return "n/a" if pd.isna(mean) else format(mean, fmt)


def _held(metrics: pd.DataFrame) -> tuple[list[str], list[str]]:
    """The scenarios (Table 3's order) and methods (display order) a run's metrics hold."""
    scens = set(metrics["scenario"].astype(str))
    return ([s for s in SCENARIOS if s in scens] + sorted(scens - set(SCENARIOS)),
            order_methods(set(metrics["method"].astype(str))))


def _gaps(scens: list[str], methods: list[str]) -> list[str]:
    """One sentence per kind of gap: the scenarios and the methods the run lacks."""
    out = []
    absent = [s for s in SCENARIOS if s not in scens]
    if absent:
        out += [f"The export holds no cells of {_and(absent)} for this run: the tables below show "
                f"{_and(scens)} only.", ""]
    lacking = [method_label(m) for m in DEFAULT_METHODS if m not in methods]
    if lacking:
        out += [f"The export holds no results of {_and(lacking)} for this run: the tables below leave "
                f"{'its column' if len(lacking) == 1 else 'their columns'} out.", ""]
    return out


def _method_table(cells: Cells, metric: str, scens: list[str], methods: list[str]) -> list[str]:
    head = "| scen. | " + " | ".join(method_label(m) for m in methods) + " |"
    lines = [head, "|---" * (len(methods) + 1) + "|"]
    for scen in scens:
        row = [_ms(*cells.get((scen, m, metric), _NA)) for m in methods]
        lines.append(f"| {scen} | " + " | ".join(row) + " |")
    return lines


def _pair_table(cells: Cells, scens: list[str], methods: list[str]) -> list[str]:
    lines = ["| scen. | " + " | ".join(method_label(m) for m in methods) + " |",
             "|---" * (len(methods) + 1) + "|"]
    for scen in scens:
        row = [f"{_mean(cells, (scen, m, 'high_risk_miss'))} / {_mean(cells, (scen, m, 'harmful_consensus'))}"
               for m in methods]
        lines.append(f"| {scen} | " + " | ".join(row) + " |")
    return lines


def _behaviour(cells: Cells, scens: list[str], methods: list[str]) -> str:
    if "dcem" not in methods:
        return "D-CEM's terminal actions are left out: the export holds no D-CEM results for this run."

    def per(metric: str) -> str:
        return ", ".join(f"{s} {_mean(cells, (s, 'dcem', metric))}" for s in scens)
    decided = (f"; decided (App. E's certified, budget decisions included) {per('decided_rate')}"
               if all((s, 'dcem', 'decided_rate') in cells for s in scens) else "")
    free = [s for s in scens if (s, "free", "avg_rounds") in cells]  # a fixed length: any scenario's
    rounds = f" (Free discussion: {_mean(cells, (free[0], 'free', 'avg_rounds'), '.0f')})" if free else ""
    return (f"D-CEM's terminal actions: certified rate {per('certified_rate')}{decided}; escalation rate "
            f"{per('escalation_rate')}; average rounds {per('avg_rounds')}{rounds}.")


def _table5(ablation: pd.DataFrame, paper: Mapping[str, Any], scens: list[str]) -> list[str]:
    """Table 5's rows of the scenarios in ``scens`` the ablation holds, and a sentence
    naming those of ``scens`` it lacks."""
    table = compliance_table(ablation)
    got = {(str(r.scenario), float(r.xi), int(r.horizon), str(r.metric)): float(r.mean) for r in table.itertuples()}

    def ours(scen: str, xi: float, horizon: int, a: str) -> str:
        value = got.get((scen, xi, horizon, a), float("nan"))
        return "n/a" if pd.isna(value) else f"{value:.2f}"

    def theirs(scen: str, xi: float, horizon: int, a: str) -> str | None:
        ref = paper.get(scen, {}).get(str(xi), {}).get(str(horizon), {})
        return f"{ref[a][0]:.2f}" if a in ref else None

    def pair(scen: str, xi: float, h1: int, a: str, h2: int, b: str) -> tuple[str, str]:
        ref = (theirs(scen, xi, h1, a), theirs(scen, xi, h2, b))
        return (f"{ours(scen, xi, h1, a)} / {ours(scen, xi, h2, b)}",
                f"{ref[0]} / {ref[1]}" if None not in ref else "—")

    def one(scen: str, xi: float, horizon: int, a: str) -> tuple[str, str]:
        return ours(scen, xi, horizon, a), theirs(scen, xi, horizon, a) or "—"

    lines = ["| scen. | xi | T=4 A1 / A2 | paper | T=12 A1 / A2 | paper | T=12 R_L | paper | "
             "T=12 SA-HR | paper | Esc. T=4 / 12 | paper |", "|---" * 12 + "|"]
    for scen in scens:
        for xi in _XI_SHOWN:
            if (scen, xi, 4, "A1") not in got:
                continue
            cols = [*pair(scen, xi, 4, "A1", 4, "A2"), *pair(scen, xi, 12, "A1", 12, "A2"),
                    *one(scen, xi, 12, "risk_at_T"), *one(scen, xi, 12, "sa_hr"),
                    *pair(scen, xi, 4, "escalation_at_T", 12, "escalation_at_T")]
            lines.append(f"| {scen} | {xi:.0%} | " + " | ".join(cols) + " |")
    shown = {key[0] for key in got if key[1] in _XI_SHOWN and key[2] == 4 and key[3] == "A1"}
    absent = [s for s in scens if s not in shown]
    if absent:
        lines += ["", f"The export holds no Table 5 readings of {_and(absent)} for this run: "
                  f"{'its rows are' if len(absent) == 1 else 'their rows are'} left out."]
    return lines


def _escalation(cells: Cells, cost: float, scens: list[str], methods: list[str]) -> list[str]:
    lacking = [method_label(m) for m in ("dcem", "dcem_noesc") if m not in methods]
    if lacking:
        return ["Left out: the ablation compares D-CEM with and without escalation, and the export holds no "
                f"results of {_and(lacking)} for this run."]
    lines = [f"| scen. | R_L^sys D-CEM | w/o esc. | {text_names(cost)[CHARGED]} D-CEM | w/o esc. | "
             "harmful consensus D-CEM | w/o esc. |", "|---" * 7 + "|"]
    for scen in scens:
        vals = [_ms(*cells.get((scen, m, k), _NA)) for k in ("system_risk", CHARGED, "harmful_consensus")
                for m in ("dcem", "dcem_noesc")]
        lines.append(f"| {scen} | " + " | ".join(vals) + " |")
    return lines


def _run_block(run: Mapping[str, Any], metrics: pd.DataFrame, ablation: pd.DataFrame,
               paper: Mapping[str, Any], cost: float) -> list[str]:
    spec = run["spec"]
    seeds = spec.get("seeds", [])
    cells = _cells(metrics, cost)
    scens, methods = _held(metrics)
    out = [f"#### {world_label(spec)}", "",
           f"Run `{run['run_id']}`: sharpness {float(spec.get('sharpness', 1.0)):g}, kappa "
           f"{float(spec.get('kappa', 1.0)):g}, compliance {spec.get('compliance', 'adopt')}, xi {spec.get('xi')}, "
           f"seeds {min(seeds)}-{max(seeds)}, {spec.get('n_train')} calibration and {spec.get('n_eval')} "
           "evaluation cases per seed.", ""]
    if metrics.empty:
        return out + ["The export holds no results of this run (it stored no cell): there is nothing to "
                      "tabulate.", ""]
    out += _gaps(scens, methods)
    for title, metric in (("Pooled accuracy (higher is better)", "accuracy"),
                          ("Expected diagnostic cost R_L (lower is better; every case's decision d1, "
                           "escalated or not)", "risk"),
                          ("System risk R_L^sys, escalation free (escalated cases go to the expert backstop and "
                           "count 0)", "system_risk"),
                          (f"Risk with escalation at {cost:g} (each escalated case counts {cost:g}, the escalation "
                           "cost of eq. 1's fit)", CHARGED)):
        out += [title, "", *_method_table(cells, metric, scens, methods), ""]
    out += ["High-risk miss rate / harmful consensus (lower is better)", "", *_pair_table(cells, scens, methods),
            "", _behaviour(cells, scens, methods), ""]
    if ablation.empty:
        out += ["Table 5 is left out: the export holds no compliance-ablation readings for this run (a run made "
                "with --no-ablation has none).", ""]
    else:
        out += ["Table 5, read at round T as App. F reads it (agent accuracies, R_L and SA-HR of round T, "
                "share of round-T STOP_AND_ESCALATE signals); paper values beside ours:", "",
                *_table5(ablation, paper, scens), ""]
    out += ["Escalation ablation (Table 1 style)", "", *_escalation(cells, cost, scens, methods), ""]
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
