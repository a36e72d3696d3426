"""Sentences that read a scored evaluation plainly: computed from the numbers, never written
ahead of them, including where a group does not beat a single model."""
from __future__ import annotations

import math
from typing import Any

__all__ = ["honest_reading"]


def _f(value: Any) -> float:
    """A number from a scored evaluation or its export (where NaN is written as null)."""
    return float(value) if isinstance(value, (int, float)) else math.nan


def _mean_accuracy(v: dict[str, Any]) -> float:
    values = [r["value"] for r in v.get("accuracy", {}).values() if r.get("n")]
    return sum(values) / len(values) if values else math.nan


def _overlap(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a["low"] <= b["high"] and b["low"] <= a["high"]


def _vs_single(name: str, v: dict[str, Any], single: str, s: dict[str, Any]) -> str:
    pairs = [(b, r, s["accuracy"][b]) for b, r in v["accuracy"].items() if r.get("n") and s["accuracy"].get(b, {}).get("n")]
    if not pairs:
        return f"{name}: no benchmark answered by both it and {single} yet."
    better = sum(1 for _, r, q in pairs if r["value"] > q["value"])
    worse = sum(1 for _, r, q in pairs if r["value"] < q["value"])
    clear = [b for b, r, q in pairs if not _overlap(r, q)]
    return (f"{name} vs {single}: higher on {better}, lower on {worse}, equal on {len(pairs) - better - worse} of "
            f"{len(pairs)} benchmarks; " + (f"the 95 % intervals separate on {', '.join(clear)}."
                                            if clear else "every 95 % interval overlaps, so no difference is shown."))


def _escalation(name: str, counts: dict[str, Any]) -> list[str]:
    """What escalation did to a group's numbers (nothing when it escalated no item)."""
    total = counts.get("total", {})
    if not total.get("escalated"):
        return []
    per = ", ".join(f"{c['escalated']} of {c['items']} {m}" for m, c in sorted(counts.items())
                    if m != "total" and c.get("items"))
    return [f"{name} handed {total['escalated']} of its {total['items']} items to a human ({per}): an escalated "
            "item counts as not correct, and escalated twins or runs read as no flip (CDR) and full agreement "
            "(CR), so its fairness and consistency there measure escalation, not a steady answer."]


def _dominant(groups: dict[str, Any]) -> list[str]:
    """The groups whose most frequent answer is more than half of their fairness, safety
    or consistency answers (nothing when none is)."""
    said = []
    for metric, where in (("fairness", lambda v: v.get("fairness", {}).get("dominant")),
                          ("safety", lambda v: (v.get("safety") or {}).get("dominant")),
                          ("consistency", lambda v: v.get("consistency", {}).get("medqa", {}).get("dominant"))):
        hits = [f"{g} {d['answer']} {100 * _f(d['share']):.0f} %" for g, v in groups.items()
                if isinstance(d := where(v), dict) and d.get("flagged")]
        if hits:
            said.append(f"{metric} ({', '.join(hits)})")
    if not said:
        return []
    return ["One answer is more than half of a group's answers in " + "; ".join(said) + ": a group that gives "
            "one letter to most items neither flips nor varies, so there a low CDR or std, or a high CR, shows a "
            "constant answer, not consistency, and its refusals of harmful requests come with as many of benign "
            "ones."]


def _cost(groups: dict[str, Any], singles: dict[str, Any]) -> list[str]:
    secs = {g: _f(v["deployment"]["seconds_per_item"]) for g, v in groups.items()
            if _f(v.get("deployment", {}).get("seconds_per_item")) > 0}  # NaN and 0 s cannot be compared
    if not (secs and singles and any(g in secs for g in singles)):
        return []
    base = min(secs[g] for g in singles if g in secs)
    return ["Cost: seconds per item relative to the fastest single model: "
            + ", ".join(f"{g} {s / base:.1f}x" for g, s in secs.items()) + "."]


def honest_reading(scored: dict[str, Any]) -> list[str]:
    """One sentence per finding (accuracy, fairness, safety, robustness, consistency, cost)."""
    groups = scored.get("groups", {})
    if not groups:
        return ["No group has been evaluated yet."]
    lines = []
    singles = {g: v for g, v in groups.items() if v.get("config", {}).get("method") == "single"}
    means = {g: _mean_accuracy(v) for g, v in groups.items()}
    ranked = sorted((m, g) for g, m in means.items() if math.isfinite(m))
    if ranked:
        lines.append(f"Mean accuracy over the benchmarks answered: best {ranked[-1][1]} {100 * ranked[-1][0]:.1f} %, "
                     f"worst {ranked[0][1]} {100 * ranked[0][0]:.1f} % (chance is 25 % on 4 options, 10 % on "
                     "MMLU-Pro's 10).")
    if singles and ranked:  # accuracy beside the best single only where the suite measured accuracy
        best_single = max(singles, key=lambda g: means[g] if math.isfinite(means[g]) else -1)
        for g, v in groups.items():
            if g not in singles:
                lines.append(_vs_single(g, v, best_single, singles[best_single]))
    cdrs = {g: _f(v["fairness"].get("average")) for g, v in groups.items()
            if v.get("fairness") and math.isfinite(_f(v["fairness"].get("average")))}
    if cdrs:
        low, high = min(cdrs, key=cdrs.get), max(cdrs, key=cdrs.get)  # type: ignore[arg-type]
        lines.append(f"Fairness: average CDR from {100 * cdrs[low]:.1f} % ({low}) to {100 * cdrs[high]:.1f} % ({high}); "
                     "the seed reports 0.8-5.1 % for 70B-class models and SAG.")
    aucs = {g: v["safety"]["roc"]["auc"] for g, v in groups.items() if v.get("safety", {}).get("roc")}
    if aucs:
        best = max(aucs, key=aucs.get)  # type: ignore[arg-type]
        lines.append(f"Safety: ROC AUC from {min(aucs.values()):.2f} to {aucs[best]:.2f} ({best}); 0.5 is a coin.")
    screen = scored.get("screen")
    if screen:
        lines.append(f"The {screen['name']} reaches AUC {screen['roc']['auc']:.2f} on the same "
                     "requests: the requests are easy to tell apart from their wording, which the agents do not do.")
    drops = {g: (_f(r["clean"]["value"]) - _f(r["adv"]["value"])) for g, v in groups.items()
             for b, r in v.get("robustness", {}).items() if b == "medqa" and r.get("clean", {}).get("n")
             and r.get("adv", {}).get("n")}
    if drops:
        lines.append("Robustness on MedQA, clean minus distractor accuracy (points): "
                     + ", ".join(f"{g} {100 * d:+.0f}" for g, d in drops.items()) + ".")
    stds = {g: v["consistency"]["medqa"]["base"]["std"] for g, v in groups.items()
            if v.get("consistency", {}).get("medqa", {}).get("base")}
    stds = {g: _f(s) for g, s in stds.items() if math.isfinite(_f(s))}
    if stds:
        lines.append("Consistency, std of MedQA accuracy over the Base runs (points): "
                     + ", ".join(f"{g} {s:.1f}" for g, s in stds.items())
                     + "; with so few items one changed answer moves accuracy by several points.")
    lines += _dominant(groups)
    for g, v in groups.items():
        lines += _escalation(g, v.get("escalated", {}))
    return lines + _cost(groups, singles)
