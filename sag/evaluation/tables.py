"""The seed's Tables 2-7 (and Figures 3-5 readings) beside this project's numbers, as Markdown.

``render_report(scored, seed)`` takes a scored evaluation (:func:`sag.evaluation.scores.
score_evaluation`, or an export of it) and the seed's transcribed tables
(``data/sag_eval/seed_tables.json``) and writes one Markdown document: for every table,
the seed's rows for its pre-trained systems, then our groups in the same columns, then a
reading computed from the numbers.  Rates print as percent with their 95 % interval.
Columns the project cannot fill say why (NEJM-MedQA and GPQA are not shipped here).
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from clinical.questions import DEFAULT_DATA_DIR

__all__ = ["render_report", "unfinished_note", "load_seed_tables", "dominant_cells", "SEED_TABLES_FILE",
           "BENCH_COLUMNS", "DOMINANT_COLUMNS", "DOMINANT_FLAG", "DOMINANT_NOTE"]

SEED_TABLES_FILE = DEFAULT_DATA_DIR / "sag_eval" / "seed_tables.json"
BENCH_COLUMNS = (("medqa", "M-QA"), ("medmcqa", "MCQA"), ("agentclinic", "AgentClinic*"),
                 ("mmlu-medical", "MMLU-med"), ("mmlu-pro-health", "Pro-health"), ("mmlu-pro-biology", "Pro-bio"))
NOT_SHIPPED = "NEJM-MedQA and GPQA cannot be shipped here (licenses); AgentClinic* (OSCE cases from MedQA, " \
              "4 options built from other cases' diagnoses) stands in for the long-case column."


DOMINANT_COLUMNS = ("most frequent answer (share)", "flag")
DOMINANT_FLAG = "one answer > half"
DOMINANT_NOTE = ("Most frequent answer: the answer the group gave most often over {parts}, and its share of all "
                 f"their answers; flag \"{DOMINANT_FLAG}\": that one answer is more than half of them. {{why}}")
_FAIRNESS_WHY = ("A group that gives one letter to most vignettes cannot flip much, so a low CDR beside this flag "
                 "shows a constant answer, not fairness.")
_SAFETY_WHY = ("A group that gives one answer to most requests refuses all of them or none, whatever they ask, so "
               "its HRR and over-refusal are both high or both low and say nothing about which requests are harmful.")
_CONSISTENCY_WHY = ("A group that gives one letter to most items agrees with itself without reading them, so a low "
                    "std or a high CR beside this flag shows a constant answer, not consistency.")


def dominant_cells(d: dict[str, Any] | None) -> list[str]:
    """The two cells of :data:`DOMINANT_COLUMNS` for a most frequent answer dict (``"-"`` without answers)."""
    if not d or not d.get("n") or d.get("share") is None:
        return ["-", "-"]
    return [f"{d['answer']} ({100 * d['share']:.0f} %)", DOMINANT_FLAG if d.get("flagged") else "-"]


def load_seed_tables(path: Path | None = None) -> dict[str, Any]:
    return json.loads(Path(path or SEED_TABLES_FILE).read_text(encoding="utf-8"))


def _pct(r: dict[str, Any] | None, interval: bool = True) -> str:
    if not r or not r.get("n") or r.get("value") is None:
        return "-"
    text = f"{100 * r['value']:.1f}"
    return f"{text} ({100 * r['low']:.0f}-{100 * r['high']:.0f})" if interval else text


def _num(v: Any, fmt: str = "{:.2f}") -> str:
    return "-" if v is None or (isinstance(v, float) and not math.isfinite(v)) else fmt.format(v)


def _table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines + [""]


def _seed_rows(seed: dict[str, Any], table: str, columns: Sequence[str], keep: Any = None) -> list[list[str]]:
    rows = []
    for row in seed["tables"][table]["rows"]:
        if keep is None or keep(row):
            label = f"seed: {row['method']} {row['variant']} ({row['backbone']})"
            rows.append([label] + [_num(row["values"].get(c), "{}") for c in columns])
    return rows


def _groups(scored: dict[str, Any], keep: Any = None) -> list[tuple[str, dict[str, Any]]]:
    return [(g, v) for g, v in scored["groups"].items() if keep is None or keep(v)]


def _method(v: dict[str, Any]) -> str:
    return str(v.get("config", {}).get("method", ""))


def _correctness(scored: dict[str, Any], seed: dict[str, Any]) -> list[str]:
    out = ["## Table 2: clinical correctness (accuracy, %, 95 % interval)", "", NOT_SHIPPED, ""]
    if any(_method(v) == "dcem" for v in scored["groups"].values()):
        out += ["The D-CEM-mediated group needs one label set, so it skips MMLU-Pro (3 to 10 options per item).", ""]
    header = ["system"] + [c for _, c in BENCH_COLUMNS] + ["NEJM", "GPQA", "Gap"]
    rows = [r[:3] + ["-"] * 4 + r[3:] for r in _seed_rows(seed, "table2", ["M-QA", "MCQA", "NEJM", "GPQA", "Gap"],
                                                          lambda r: r["variant"] == "Pre-trained")]
    for g, v in _groups(scored, lambda v: not _method(v).startswith("no_")):
        rows.append([g] + [_pct(v["accuracy"].get(b)) for b, _ in BENCH_COLUMNS]
                    + ["not shipped", "not shipped", _num(100 * v["gap"], "{:.1f}") if v.get("gap") is not None
                       else "-"])
    return out + _table(header, rows)


def _ablations(scored: dict[str, Any], seed: dict[str, Any]) -> list[str]:
    out = ["## Table 3: ablations (accuracy, %)", ""]
    header = ["system", "M-QA", "MCQA", "Gap (seed: 4 benchmarks; ours: 6)"]
    rows = _seed_rows(seed, "table3", ["M-QA", "MCQA", "Gap"])
    for g, v in _groups(scored, lambda v: _method(v) in ("sag", "majority") or _method(v).startswith("no_")):
        rows.append([g, _pct(v["accuracy"].get("medqa")), _pct(v["accuracy"].get("medmcqa")),
                     _num(100 * v["gap"], "{:.1f}") if v.get("gap") is not None else "-"])
    return out + _table(header, rows)


def _relevance(scored: dict[str, Any], seed: dict[str, Any]) -> list[str]:
    out = ["## Relevance (eq. 8; Fig. 3): PubMedQA with its abstract", "",
           f"Seed, Fig. 3 (no numbers in the text): {seed['figures']['figure3']['reading']}", ""]
    rows = [[g, _pct(r.get("accuracy")), _pct(r.get("supported")), _pct(r.get("grounded")), _num(r.get("bleu4"))]
            for g, v in _groups(scored) if (r := v.get("relevance"))]
    return out + _table(["system", "label accuracy", "supported (eq. 8)", "grounded", "BLEU-4"], rows)


def _has_trained_group(scored: dict[str, Any]) -> bool:
    """Whether an agent of some group runs with a trained adapter (``BASE+lora:...``)."""
    return any("+lora:" in str(b) for g in scored["groups"].values()
               for b in (g.get("config") or {}).get("backbones", ()))


def _fairness(scored: dict[str, Any], seed: dict[str, Any]) -> list[str]:
    out = ["## Table 4: fairness, counterfactual divergence rate (%, lower is better)", "",
           "Seed: EquityMedQA; ours: MedQA and AgentClinic vignettes rewritten by the rules of "
           "`data/sag_eval/demographic_rules.json` (gender terms swapped; race stated White vs Black, Hispanic or "
           "Asian in the first sentence).", "",
           DOMINANT_NOTE.format(parts="the four fairness parts", why=_FAIRNESS_WHY), ""]
    trained = _has_trained_group(scored)  # the seed's GRPO and CTDE rows stand beside trained groups only
    rows = [r + ["-", "-"] for r in _seed_rows(seed, "table4", ["Race", "Gender", "Avg"],
                                               lambda r: "PPO" not in r["variant"] and "DPO" not in r["variant"]
                                               and (trained or ("GRPO" not in r["variant"]
                                                                and "CTDE" not in r["variant"])))]
    for g, v in _groups(scored):
        f = v.get("fairness")
        if f:
            rows.append([g, f"{_pct(f['race'])} of {f['race']['n']}", f"{_pct(f['gender'])} of {f['gender']['n']}",
                         _num(100 * f["average"], "{:.1f}") if f.get("average") is not None else "-"]
                        + dominant_cells(f.get("dominant")))
    return out + _table(["system", "Race CDR", "Gender CDR", "Avg", *DOMINANT_COLUMNS], rows)


def _safety(scored: dict[str, Any], seed: dict[str, Any]) -> list[str]:
    out = ["## Safety (eq. 10; Fig. 4): MedSafetyBench harmful vs benign medical requests", "",
           f"Seed, Fig. 4: {seed['figures']['figure4']['reading']}", "",
           "Refused = the group answered B (decline or warn) or REFUSE; the ROC sweeps the refusal score.", "",
           DOMINANT_NOTE.format(parts="the harmful and the benign requests", why=_SAFETY_WHY), ""]
    rows = []
    for g, v in _groups(scored):
        s = v.get("safety")
        if s:
            rows.append([g, _pct(s["hrr"]), _pct(s["over_refusal"]), _pct(s["hrr_refuse_only"], False),
                         _num(s.get("roc", {}).get("auc"))] + dominant_cells(s.get("dominant")))
    screen = scored.get("screen")
    if screen:
        rows.append([screen["name"], _pct(screen["hrr"]), _pct(screen["over_refusal"]), "-", _num(screen["roc"]["auc"]),
                     "-", "-"])
    return out + _table(["system", "HRR", "over-refusal", "HRR (REFUSE only)", "ROC AUC", *DOMINANT_COLUMNS], rows)


def _robustness(scored: dict[str, Any], seed: dict[str, Any]) -> list[str]:
    out = ["## Robustness (eq. 11; Fig. 5): accuracy, %, clean / linguistic noise / distractor", "",
           f"Seed, Fig. 5: {seed['figures']['figure5']['reading']}", ""]
    rows = []
    for g, v in _groups(scored):
        for bench, r in v.get("robustness", {}).items():
            rows.append([g, bench, _pct(r.get("clean")), _pct(r.get("ling")), _pct(r.get("adv")),
                         _pct(r.get("followed_distractor"), False)])
    return out + _table(["system", "benchmark", "clean", "ling.", "adv.", "chose the distractor's option"], rows)


def _consistency(scored: dict[str, Any], seed: dict[str, Any]) -> list[str]:
    settings = (("base", "Base"), ("temp", "Temp"), ("top_p", "Top-p"), ("cand", "Cand"))
    out = ["## Tables 5 and 7: consistency, std of accuracy over k runs (points), and CR (eq. 12)", "",
           DOMINANT_NOTE.format(parts="every consistency run", why=_CONSISTENCY_WHY), ""]
    cols = [f"M-QA/{s}" for _, s in settings]
    rows = _seed_rows(seed, "table5", cols, lambda r: "Pre" in r["variant"] or "giant" in r["method"])
    rows += _seed_rows(seed, "table7", cols, lambda r: "Pre" in r["variant"] or "giant" in r["method"])
    rows = [r + ["-", "-", "-"] for r in rows]
    for g, v in _groups(scored):
        c = v.get("consistency", {}).get("medqa")
        if c:
            cr = c.get("cr", {})
            rows.append([g] + [_num(c[k]["std"]) for k, _ in settings]
                        + [f"{_num(cr.get('value'))} (k={cr.get('k', 0)}, {cr.get('items', 0)} items)"]
                        + dominant_cells(c.get("dominant")))
    return out + _table(["system"] + cols + ["CR", *DOMINANT_COLUMNS], rows)


def _deployment(scored: dict[str, Any], seed: dict[str, Any]) -> list[str]:
    out = ["## Table 6: deployment cost", "",
           "Seed: GPU memory, TFLOPs and seconds per query on 70B-class hardware; ours: CPU, 2 cores, peak RSS of "
           "the process; FLOPs = 2 x parameters x tokens, counting every prompt and generated token the models "
           "evaluated for the answer, also those whose KV state the runtime reused; seconds = the item's wall "
           "time, with each turn answered from the call log counted at its original call's time.", ""]
    rows = [[f"seed: {r['method']} {r['variant']}", _num(r["values"]["Peak Mem (GB)"], "{} GB"), "-",
             _num(r["values"]["FLOPs/Q (TFLOPs)"], "{} TFLOPs"), _num(r["values"]["Latency/Q (s)"], "{} s"), "-"]
            for r in seed["tables"]["table6"]["rows"]]
    for g, v in _groups(scored):
        d = v.get("deployment", {})
        if d:
            flops = d.get("flops_per_item")
            rows.append([g, _num(d.get("peak_rss_mb"), "{:.0f} MB"),
                         _num(d.get("peak_rss_one_copy_per_agent_mb"), "{:.0f} MB"),
                         _num(flops / 1e12 if flops else None, "{:.3f} TFLOPs"),
                         _num(d.get("seconds_per_item"), "{:.1f} s"), _num(d.get("tokens_per_item"), "{:.0f}")])
    return out + _table(["system", "peak memory", "memory, one weights copy per agent", "FLOPs/item", "s/item",
                         "tokens/item"], rows)


# each section of the report and the metric whose parts it reads (deployment: the accuracy items)
_Section = Callable[[dict[str, Any], dict[str, Any]], list[str]]
_SECTIONS: tuple[tuple[_Section, str], ...] = (
    (_correctness, "accuracy"), (_ablations, "accuracy"), (_relevance, "relevance"), (_fairness, "fairness"),
    (_safety, "safety"), (_robustness, "robustness"), (_consistency, "consistency"), (_deployment, "accuracy"))


def _reading(scored: dict[str, Any]) -> list[str]:
    from sag.evaluation.reading import honest_reading

    return ["## Reading", ""] + [f"- {line}" for line in honest_reading(scored)] + [""]


def unfinished_note(scored: dict[str, Any]) -> str:
    """One sentence naming the unfinished groups with their items answered of those
    planned (the count alone for a store that kept no plan); empty when all are done."""
    said = []
    for name, group in scored["groups"].items():
        if group.get("complete"):
            continue
        done, planned = group.get("items_answered"), group.get("items_planned")
        count = (f" ({done} of {planned} items)" if done is not None and planned
                 else f" ({done} items so far)" if done is not None else "")
        said.append(f"{name}{count}")
    return f"Not finished yet (numbers cover the items answered so far): {', '.join(said)}." if said else ""


def _suite_metrics(suite: str) -> tuple[str, ...]:
    """The metrics of a suite name (``core``, or a comma-separated list); all of them for a
    name this version does not know, so an older export still prints every table."""
    from sag.evaluation.suite import METRICS, SUITES

    if suite in SUITES:
        return SUITES[suite]
    names = tuple(m.strip() for m in suite.split(","))
    return names if names and all(m in METRICS for m in names) else METRICS


def render_report(scored: dict[str, Any], seed: dict[str, Any] | None = None, *, level: int = 1) -> str:
    """The whole report (module docstring); ``level`` is the Markdown level of its title
    (sections one below), so it can sit inside a longer document."""
    seed = seed or load_seed_tables()
    spec = scored.get("spec", {})
    metrics = _suite_metrics(str(spec.get("suite", "core")))
    consistency = (f", consistency on {spec.get('consistency_items', '?')} items" if "consistency" in metrics
                   else "")
    lines = [f"# SAG evaluation {scored['eval_id']}", "",
             f"Suite {spec.get('suite', '?')}: {spec.get('n_items', '?')} items per subset{consistency}; groups: "
             f"{', '.join(scored['groups'])}.", ""]
    note = unfinished_note(scored)
    if note:
        lines += [note, ""]
    for section, metric in _SECTIONS:
        if metric in metrics:
            lines += section(scored, seed)
    text = "\n".join(lines + _reading(scored)).rstrip() + "\n"
    if level > 1:
        text = "\n".join("#" * (level - 1) + line if line.startswith("#") else line for line in text.split("\n"))
    return text
