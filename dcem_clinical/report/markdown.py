"""The clinical LLM tables as markdown, ours beside the paper's (REPRODUCTION.md).

:func:`render_clinical_markdown` prints, after the command that made the runs and the
model files with their sha256, per dataset:

- Table 6 (Appendix H.2): system risk R_L^sys and harmful consensus H.C. of Single, Free,
  Pool and D-CEM, one column pair "ours | paper" per scenario; beside R_L^sys (escalation
  free: an escalated case counts 0) the risk with escalation charged at
  ``escalation_cost`` (ours only: the paper reports none; :mod:`dcem.analysis.charged_risk`);
- Table 7 (Appendix H.3): D-CEM escalation rate and average rounds, ours and paper;
- Table 1 (section 5.5): D-CEM with and without STOP_AND_ESCALATE, R_L^sys, the charged
  risk (ours only) and H.C.;
- a line with every method's accuracy and one with the D-CEM action mix (ours only);
- with ``agents=`` (:func:`dcem_clinical.report.agents.export_agent_rows`), a table of
  the panel members by position: name, model key, CAL accuracy, TEST accuracy of the
  member's own round-1 answer under D-CEM (a failed call is wrong) and in how many cells it
  was the CAL-best agent (mean ± std over the dataset's cells).

"ours" is the mean over seeds (``± std``, ddof 0, only with more than one seed), two
decimals; the paper's cells are mean ± std as printed (:mod:`dcem_clinical.report.paper`).
A missing number prints "—".  :func:`reproduction_block` cuts a marked block out of a
document, so a test can compare REPRODUCTION.md with the export.
"""
from __future__ import annotations

import math
from typing import Any, Mapping

import pandas as pd

from dcem_clinical.report.agents import position_letter
from dcem_clinical.report.paper import load_paper_tables, paper_cell
from dcem.analysis.charged_risk import CHARGED, DEFAULT_COST, text_names, with_charged_risk
from dcem.core.vocabulary import SCENARIOS

__all__ = ["render_clinical_markdown", "METHOD_NAMES"]

METHOD_NAMES = {"single": "Single", "free": "Free", "pool": "Pool", "dcem": "D-CEM",
                "dcem_noesc": "D-CEM w/o escalation"}
_METRIC_NAMES = {"system_risk": "R_L^sys", "harmful_consensus": "H.C.",
                 "escalation_rate": "escalation rate", "avg_rounds": "average rounds"}
_MIX = (("mix_continue", "CONTINUE"), ("mix_steer", "STEER"), ("mix_decide", "DECIDE"),
        ("mix_escalate", "ESCALATE"))
DASH = "—"
AGENTS_TITLE = "Agents: accuracy of each member's own first-round answer"
_AGENTS_NOTE = ("CAL: accuracy on the cell's calibration cases; TEST: the member's round-1 label under D-CEM, "
                "before any mediator note, a failed call counted wrong; mean ± std over the cells; CAL-best: "
                "the cells in which it was the calibration-best agent, Single's agent; sided with: of the TEST "
                "cases whose members' labels disagree at D-CEM's outcome round, those D-CEM decided with this "
                "member's label")
Ours = dict[tuple[str, str, str], tuple[float, float, int]]


def _std(std: float) -> str:
    text = f"{std:.2f}"
    return text[1:] if text.startswith("0.") else text


def _ours_cell(value: tuple[float, float, int] | None) -> str:
    if value is None or math.isnan(value[0]):
        return DASH
    mean, std, n = value
    return f"{mean:.2f}" if n <= 1 else f"{mean:.2f} ± {_std(std)}"


def _paper_text(pair: tuple[float, float] | None) -> str:
    return DASH if pair is None else f"{pair[0]:.2f} ± {_std(pair[1])}"


def _ours(frame: pd.DataFrame) -> Ours:
    """(scenario, method, metric) -> (mean, std over seeds with ddof 0, seeds)."""
    out: Ours = {}
    for (scenario, method, metric), values in frame.groupby(["scenario", "method", "metric"])["value"]:
        v = values.dropna()
        out[(str(scenario), str(method), str(metric))] = (
            (float(v.mean()), float(v.std(ddof=0)), len(v)) if len(v) else (math.nan, math.nan, 0))
    return out


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def _side_by_side(ours: Ours, paper: Mapping[str, Any], dataset: str, table: str,
                  rows: list[tuple[str, str, str]], first: str) -> str:
    """Rows (label, metric, method), columns "S ours | S paper" per scenario."""
    header = [first] + [f"{s} {side}" for s in SCENARIOS for side in ("ours", "paper")]
    body = [[label] + [cell for s in SCENARIOS for cell in (
        _ours_cell(ours.get((s, method, metric))),
        _paper_text(paper_cell(paper, dataset, table, metric, method, s)))]
        for label, metric, method in rows]
    return _table(header, body)


def _table7(ours: Ours, paper: Mapping[str, Any], dataset: str) -> str:
    rows = []
    for metric in ("escalation_rate", "avg_rounds"):
        name = _METRIC_NAMES[metric]
        rows.append([f"{name}, ours"] + [_ours_cell(ours.get((s, "dcem", metric))) for s in SCENARIOS])
        rows.append([f"{name}, paper"] + [_paper_text(paper_cell(paper, dataset, "table7", metric, "dcem", s))
                                          for s in SCENARIOS])
    return _table([""] + list(SCENARIOS), rows)


def _ours_table(ours: Ours, metric: str, methods: tuple[str, ...]) -> str:
    """Rows methods, columns the scenarios: ours only (a metric the paper does not report)."""
    return _table(["method", *SCENARIOS], [[METHOD_NAMES[m]] + [_ours_cell(ours.get((s, m, metric))) for s in SCENARIOS]
                                           for m in methods])


def _per_scenario(ours: Ours, method: str, metric: str) -> str:
    return " / ".join(_ours_cell(ours.get((s, method, metric))) for s in SCENARIOS)


def _summary_lines(ours: Ours) -> list[str]:
    scen = " / ".join(SCENARIOS)
    acc = "; ".join(f"{label} {_per_scenario(ours, m, 'accuracy')}" for m, label in METHOD_NAMES.items())
    mix = "; ".join(f"{label} {_per_scenario(ours, 'dcem', metric)}" for metric, label in _MIX)
    return [f"Accuracy, ours ({scen}): {acc}.", "",
            f"D-CEM action mix over the rounds played, ours ({scen}): {mix}."]


def _mean_std_n(values: pd.Series) -> tuple[float, float, int]:
    v = pd.to_numeric(values, errors="coerce").dropna()
    return (float(v.mean()), float(v.std(ddof=0)), len(v)) if len(v) else (math.nan, math.nan, 0)


def _distinct(values: pd.Series) -> str:
    seen = dict.fromkeys(str(v) for v in values if isinstance(v, str) and v)
    return " / ".join(seen) if seen else DASH


def _agents_table(rows: pd.DataFrame) -> list[str]:
    """One row per panel position: rows are :func:`~dcem_clinical.report.agents.agent_rows`
    of one dataset (one per cell and position)."""
    body = [[position_letter(int(agent)), _distinct(group["name"]), _distinct(group["model"]),
             _ours_cell(_mean_std_n(group["cal_accuracy"])), _ours_cell(_mean_std_n(group["test_accuracy"])),
             f"{int(group['best'].astype(bool).sum())} of {len(group)}", _sided(group)]
            for agent, group in rows.groupby("agent", sort=True)]
    return [f"{AGENTS_TITLE} ({_AGENTS_NOTE}):", "",
            _table(["agent", "name", "model", "CAL accuracy", "TEST accuracy", "CAL-best", "sided with"], body), ""]


def _sided(group: pd.DataFrame) -> str:
    """'k of n' split cases over the member's cells; a dash when the panel never split."""
    cases = int(group["split_cases"].sum()) if "split_cases" in group else 0
    return DASH if cases == 0 else f"{int(group['split_sided'].sum())} of {cases}"


def _heading(dataset: str, frame: pd.DataFrame, manifest: Mapping[str, Any], paper: Mapping[str, Any]) -> str:
    name = paper.get("datasets", {}).get(dataset, {}).get("name", dataset)
    seeds = sorted({int(s) for s in frame["seed"]})
    seed_text = f"seed {seeds[0]}" if len(seeds) == 1 else f"seeds {', '.join(map(str, seeds))}"
    specs = [r.get("spec", {}) for r in manifest.get("runs", []) if r.get("spec", {}).get("dataset") == dataset]
    sizes = {(s.get("n_cal"), s.get("n_test")) for s in specs}
    size_text = ""
    if len(sizes) == 1 and None not in next(iter(sizes)):
        n_cal, n_test = next(iter(sizes))
        size_text = f", CAL/TEST {n_cal}/{n_test} per cell"
    agents = {" + ".join(s.get("agents", [])) for s in specs}
    agent_text = f", agents {' / '.join(sorted(agents))}" if agents else ""
    return (f"#### {name} (`{dataset}`): ours ({seed_text}{size_text}{agent_text}) against the paper "
            f"(mean ± std over {paper.get('seeds', '?')} seeds)")


def _dataset_block(dataset: str, frame: pd.DataFrame, manifest: Mapping[str, Any],
                   paper: Mapping[str, Any], agents: pd.DataFrame | None, cost: float) -> list[str]:
    ours = _ours(with_charged_risk(frame, cost))
    charged = text_names(cost)[CHARGED]
    names = {**_METRIC_NAMES, CHARGED: charged}
    t6 = [(METHOD_NAMES[m], "", m) for m in ("single", "free", "pool", "dcem")]
    t1 = [(f"{names[metric]}, {METHOD_NAMES[m]}", metric, m)
          for metric in ("system_risk", CHARGED, "harmful_consensus") for m in ("dcem", "dcem_noesc")]
    return [_heading(dataset, frame, manifest, paper), "",
            "Table 6, system risk R_L^sys (escalation free: an escalated case counts 0; lower is better):", "",
            _side_by_side(ours, paper, dataset, "table6", [(a, "system_risk", c) for a, _, c in t6], "method"), "",
            f"Beside it, the {charged} (each escalated case counts {cost:g}; ours only, the paper reports none):",
            "", _ours_table(ours, CHARGED, ("single", "free", "pool", "dcem")), "",
            "Table 6, harmful consensus H.C. (lower is better):", "",
            _side_by_side(ours, paper, dataset, "table6", [(a, "harmful_consensus", c) for a, _, c in t6],
                          "method"), "",
            "Table 7, D-CEM escalation rate and average rounds:", "",
            _table7(ours, paper, dataset), "",
            f"Table 1, D-CEM with and without STOP_AND_ESCALATE (the {charged}: ours only):", "",
            _side_by_side(ours, paper, dataset, "table1", t1, ""), "",
            *_summary_lines(ours), "",
            *([] if agents is None or not (agents["dataset"] == dataset).any()
              else _agents_table(agents[agents["dataset"] == dataset]))]


def _provenance(manifest: Mapping[str, Any]) -> list[str]:
    """The command that made the runs and the model files with their sha256."""
    command = str(manifest.get("command", "")).strip()
    lines = ([f"Command: `{command}`"] if "\n" not in command
             else ["Commands:", "", "```", command, "```"])
    rows = []
    for m in manifest.get("models", []):
        size = m.get("size_bytes")
        rows.append([str(m.get("key")), str(m.get("file") or DASH), DASH if size is None else f"{int(size):,}",
                     (m.get("sha256") or DASH)[:12], str(m.get("note") or "")])
    if rows:
        lines += ["", _table(["model", "file", "bytes", "sha256", "note"], rows)]
    return lines + [""]


def render_clinical_markdown(metrics: pd.DataFrame, manifest: Mapping[str, Any], *,
                             paper: Mapping[str, Any] | None = None,
                             agents: pd.DataFrame | None = None, escalation_cost: float = DEFAULT_COST) -> str:
    """Markdown of Tables 6, 7 and 1 per dataset, ours against the paper's.

    metrics : rows (scenario, seed, method, metric, value) plus ``dataset`` (or
    ``run_id``, mapped to the dataset through the manifest's run specs); manifest : a run
    export's manifest (command, models, runs); paper : default :func:`load_paper_tables`;
    agents : :func:`dcem_clinical.report.agents.agent_rows` of the export, printed as
    each dataset's agents table after its summary lines (None: no agents table);
    escalation_cost : what the charged risk counts an escalated case at.
    """
    paper = load_paper_tables() if paper is None else paper
    if "dataset" not in metrics:
        datasets = {r["run_id"]: str(r.get("spec", {}).get("dataset", "?")) for r in manifest.get("runs", [])}
        metrics = metrics.assign(dataset=metrics["run_id"].map(datasets))
    lines = _provenance(manifest)
    for dataset, frame in metrics.groupby("dataset", sort=True):
        lines += _dataset_block(str(dataset), frame, manifest, paper, agents, escalation_cost)
    return "\n".join(lines).rstrip() + "\n"
