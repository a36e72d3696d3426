"""What the dashboard's Group evaluation page shows, computed from a scored evaluation (no Streamlit here).

A *scored* evaluation is the dict of :func:`sag.evaluation.scores.score_evaluation`, or an
export of it (:mod:`sag.evaluation.export`, where NaN is written as null and each part's
answers are kept under ``"answers"``).  This module turns it into display tables (rates
as ``"value % (low-high)"`` with their 95 % interval), tidy frames for the charts (ROC
points, robustness and consistency bars, accuracy by group size and backbone), the items
behind a number, and the labels of the page's source selector.  Every reader tolerates a
missing metric (a suite that did not run it) and a null value.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import pandas as pd

from common.errors import InputError, ProjectError
from common.intervals import wilson_interval
from sag.group.config import GroupConfig
from sag.evaluation.tables import BENCH_COLUMNS, DOMINANT_COLUMNS, dominant_cells, render_report, unfinished_note
from sag.runs.versus import option_chance

__all__ = ["benchmark_chance", "refusal_reading", "BLEU_COLUMN", "NO_EVAL_HINT", "SETTINGS", "CONDITIONS",
           "check_scored", "pct", "accuracy_frame", "metric_frames",
           "roc_points", "robustness_points", "consistency_points", "size_backbone_points", "parts_of",
           "items_behind", "source_choices", "summary_line", "seed_report"]

NO_EVAL_HINT = ("No group evaluation is stored yet, and no evaluation file is shipped. Make a small one from a "
                "terminal: `python -m sag eval --suite core --groups single,vote-6,sag-6 --items 10`.")
SETTINGS = (("base", "Base"), ("temp", "Temp"), ("top_p", "Top-p"), ("cand", "Cand"))
CONDITIONS = (("clean", "clean"), ("ling", "linguistic noise"), ("adv", "distractor"))
_BENCH_LABELS = dict(BENCH_COLUMNS)
BLEU_COLUMN = "BLEU-4 (0-100)"


def _groups(scored: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(str(g), v) for g, v in scored.get("groups", {}).items() if isinstance(v, dict)]


def check_scored(scored: object, where: str = "evaluation") -> dict[str, Any]:
    """``scored`` if it has the shape the page reads (a dict of groups, each a dict); else InputError."""
    groups = scored.get("groups") if isinstance(scored, dict) else None
    if not isinstance(groups, dict) or not all(isinstance(v, dict) for v in groups.values()):
        raise InputError("evaluation", f"{where} does not hold scored groups")
    if not groups:
        raise InputError("evaluation", f"{where} holds no group yet")
    return scored  # type: ignore[return-value]


def _finite(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


def pct(rate: Mapping[str, Any] | None, interval: bool = True) -> str:
    """A Rate dict as ``"50.0 % (9-91)"`` (``"-"`` when it has no item or no value)."""
    if not isinstance(rate, Mapping) or not rate.get("n") or _finite(rate.get("value")) is None:
        return "-"
    text = f"{100 * float(rate['value']):.1f} %"
    low, high = _finite(rate.get("low")), _finite(rate.get("high"))
    if interval and low is not None and high is not None:
        text += f" ({100 * low:.0f}-{100 * high:.0f})"
    return text


def _num(value: object, fmt: str = "{:.2f}") -> str:
    number = _finite(value)
    return "-" if number is None else fmt.format(number)


def _bench_order(names: Iterable[str]) -> list[str]:
    known = [b for b, _ in BENCH_COLUMNS]
    found = set(names)
    return [b for b in known if b in found] + sorted(found - set(known))


def accuracy_frame(scored: Mapping[str, Any]) -> pd.DataFrame:
    """One row per group: accuracy on each benchmark (percent, 95 % interval), the gap
    between its best and worst benchmark (points), and whether every part is answered."""
    groups = _groups(scored)
    benches = _bench_order(b for _, v in groups for b in v.get("accuracy", {}))
    if not benches:  # no accuracy part in this evaluation: no table (the page says so)
        return pd.DataFrame(columns=["group", "Gap (points)", "finished"])
    rows = []
    for g, v in groups:
        acc = v.get("accuracy", {})
        gap = _finite(v.get("gap"))
        rows.append([g] + [pct(acc.get(b)) for b in benches]
                    + ["-" if gap is None else f"{100 * gap:.1f}", "yes" if v.get("complete") else "not yet"])
    columns = ["group"] + [_BENCH_LABELS.get(b, b) for b in benches] + ["Gap (points)", "finished"]
    return pd.DataFrame(rows, columns=columns)


def _relevance(groups: Sequence[tuple[str, dict[str, Any]]]) -> pd.DataFrame:
    rows = [[g, pct(r.get("accuracy")), pct(r.get("supported")), pct(r.get("grounded")), _num(r.get("bleu4"))]
            for g, v in groups if isinstance(r := v.get("relevance"), dict)]
    return pd.DataFrame(rows, columns=["group", "label accuracy", "supported", "grounded", BLEU_COLUMN])


def _fairness(groups: Sequence[tuple[str, dict[str, Any]]]) -> pd.DataFrame:
    rows = []
    for g, v in groups:
        f = v.get("fairness")
        if isinstance(f, dict):
            gender, race = f.get("gender") or {}, f.get("race") or {}
            average = _finite(f.get("average"))
            rows.append([g, pct(gender), pct(race), "-" if average is None else f"{100 * average:.1f} %",
                         *_dominant(f.get("dominant")),
                         ", ".join(gender.get("flipped") or []) or "-", ", ".join(race.get("flipped") or []) or "-"])
    return pd.DataFrame(rows, columns=["group", "gender CDR", "race CDR", "average CDR", *DOMINANT_COLUMNS,
                                       "flipped by gender", "flipped by race"])


def _dominant(value: Any) -> list[str]:
    """The most frequent answer and its flag (a malformed entry reads as none)."""
    ok = isinstance(value, dict) and isinstance(value.get("n"), int) and _finite(value.get("share")) is not None
    return dominant_cells(value if ok else None)


def refusal_reading(safety: Mapping[str, Any]) -> str:
    """What a group's refusal rates mean together: a high harmful-refusal rate says nothing
    when benign requests are refused nearly as often."""
    hrr, over = (_finite((safety.get(k) or {}).get("value")) for k in ("hrr", "over_refusal"))
    if hrr is None or over is None:
        return "-"
    if over >= 0.5:
        return (f"refuses {100 * over:.0f} % of benign requests too: its {100 * hrr:.0f} % of harmful ones "
                "refused does not tell harmful from benign")
    if hrr < 0.05 and over < 0.05:
        return "refuses almost nothing, harmful or benign"
    if hrr - over < 0.2:
        return "refuses harmful and benign requests at similar rates: no separation"
    return f"refuses harmful requests {100 * (hrr - over):.0f} points more often than benign ones"


def _safety(groups: Sequence[tuple[str, dict[str, Any]]], screen: Any) -> pd.DataFrame:
    rows = [[g, pct(s.get("hrr")), pct(s.get("over_refusal")), refusal_reading(s), pct(s.get("hrr_refuse_only")),
             pct(s.get("over_refusal_refuse_only")), _num((s.get("roc") or {}).get("auc")), *_dominant(s.get("dominant"))]
            for g, v in groups if isinstance(s := v.get("safety"), dict) and s]
    if rows and isinstance(screen, dict):
        rows.append([str(screen.get("name", "learned screen")), pct(screen.get("hrr")),
                     pct(screen.get("over_refusal")), refusal_reading(screen), "-", "-",
                     _num((screen.get("roc") or {}).get("auc")), "-", "-"])
    return pd.DataFrame(rows, columns=["group", "harmful refused (HRR)", "benign refused (over-refusal)", "reading",
                                       "HRR, REFUSE only", "over-refusal, REFUSE only", "ROC AUC", *DOMINANT_COLUMNS])


def _robustness(groups: Sequence[tuple[str, dict[str, Any]]]) -> pd.DataFrame:
    rows = [[g, bench] + [pct(r.get(c)) for c, _ in CONDITIONS] + [pct(r.get("followed_distractor"))]
            for g, v in groups for bench, r in (v.get("robustness") or {}).items() if isinstance(r, dict)]
    return pd.DataFrame(rows, columns=["group", "benchmark"] + [label for _, label in CONDITIONS]
                        + ["chose the distractor's option"])


def _consistency(groups: Sequence[tuple[str, dict[str, Any]]]) -> pd.DataFrame:
    rows = []
    for g, v in groups:
        for bench, c in (v.get("consistency") or {}).items():
            if not isinstance(c, dict):
                continue
            cr = c.get("cr") or {}
            cr_text = f"{_num(cr.get('value'))} (k={cr.get('k', 0)}, {cr.get('items', 0)} items)" if cr else "-"
            rows.append([g, bench] + [_num((c.get(s) or {}).get("std")) for s, _ in SETTINGS] + [cr_text]
                        + _dominant(c.get("dominant")))
    return pd.DataFrame(rows, columns=["group", "benchmark"] + [f"std {label} (points)" for _, label in SETTINGS]
                        + ["consensus rate (CR)", *DOMINANT_COLUMNS])


def _deployment(groups: Sequence[tuple[str, dict[str, Any]]]) -> pd.DataFrame:
    rows = []
    for g, v in groups:
        d = v.get("deployment")
        if isinstance(d, dict) and d:
            flops = _finite(d.get("flops_per_item"))
            cached = d.get("cached_items")
            rows.append([g, d.get("items", 0), str(cached) if isinstance(cached, int) else "-",
                         _num(d.get("seconds_per_item"), "{:.2f} s"), _num(d.get("tokens_per_item"), "{:.0f}"),
                         _num(d.get("processed_tokens_per_item"), "{:.0f}"),
                         "-" if flops is None else f"{flops / 1e12:.3f}", _num(d.get("peak_rss_mb"), "{:.0f} MB"),
                         _num(d.get("weights_mb"), "{:.0f} MB"),
                         _num(d.get("peak_rss_one_copy_per_agent_mb"), "{:.0f} MB")])
    return pd.DataFrame(rows, columns=["group", "items", "items with turns from the call log", "seconds/item",
                                       "tokens/item", "tokens processed/item", "TFLOPs/item", "peak memory", "weights",
                                       "memory, one weights copy per agent"])


def metric_frames(scored: Mapping[str, Any]) -> dict[str, pd.DataFrame]:
    """The display table of relevance, fairness, safety (with the learned screen's row when
    present), robustness, consistency and deployment; a metric no group has is an empty table."""
    groups = _groups(scored)
    return {"relevance": _relevance(groups), "fairness": _fairness(groups),
            "safety": _safety(groups, scored.get("screen")), "robustness": _robustness(groups),
            "consistency": _consistency(groups), "deployment": _deployment(groups)}


def _roc_rows(name: str, roc: Any) -> list[list[Any]]:
    if not isinstance(roc, dict):
        return []
    auc = _finite(roc.get("auc"))
    return [[name, float(x), float(y), auc] for x, y in zip(roc.get("fpr") or [], roc.get("tpr") or [])]


def roc_points(scored: Mapping[str, Any]) -> pd.DataFrame:
    """ROC curve points of every group's refusal score (group, fpr, tpr, auc), then the
    learned screen's when the evaluation has one."""
    rows = [r for g, v in _groups(scored) for r in _roc_rows(g, (v.get("safety") or {}).get("roc"))]
    screen = scored.get("screen")
    if rows and isinstance(screen, dict):
        rows += _roc_rows(str(screen.get("name", "learned screen")), screen.get("roc"))
    return pd.DataFrame(rows, columns=["group", "fpr", "tpr", "auc"])


def _percent_row(rate: Any) -> list[float | None] | None:
    if not isinstance(rate, dict) or not rate.get("n") or _finite(rate.get("value")) is None:
        return None
    return [100 * float(rate[k]) if _finite(rate.get(k)) is not None else None for k in ("value", "low", "high")]


def robustness_points(scored: Mapping[str, Any]) -> pd.DataFrame:
    """Long frame (group, benchmark, condition, accuracy, low, high), in percent; conditions
    are clean, linguistic noise and distractor."""
    rows = []
    for g, v in _groups(scored):
        for bench, r in (v.get("robustness") or {}).items():
            for key, label in CONDITIONS:
                values = _percent_row((r or {}).get(key))
                if values is not None:
                    rows.append([g, bench, label] + values)
    return pd.DataFrame(rows, columns=["group", "benchmark", "condition", "accuracy", "low", "high"])


def consistency_points(scored: Mapping[str, Any]) -> pd.DataFrame:
    """Long frame (group, benchmark, setting, std): std of accuracy over repeated runs, in points."""
    rows = [[g, bench, label, std] for g, v in _groups(scored) for bench, c in (v.get("consistency") or {}).items()
            for key, label in SETTINGS if (std := _finite(((c or {}).get(key) or {}).get("std"))) is not None]
    return pd.DataFrame(rows, columns=["group", "benchmark", "setting", "std"])


def _size_and_backbone(config: Mapping[str, Any]) -> tuple[int, str]:
    """Agents that answer (one for ``single``, none of an ablated role) and the backbone
    ("mixed" when the agents use more than one model)."""
    try:
        cfg = GroupConfig.from_mapping(config)
    except (ProjectError, TypeError, ValueError):
        counts = config.get("counts") or []
        backbones = set(config.get("backbones") or ["?"])
        size = 1 if config.get("method") == "single" else int(sum(int(c) for c in counts))
        return size, backbones.pop() if len(backbones) == 1 else "mixed"
    models = cfg.models()
    return cfg.size, models[0] if len(models) == 1 else "mixed"


def size_backbone_points(scored: Mapping[str, Any]) -> pd.DataFrame:
    """One row per group with an answered benchmark: agents, backbone, and its accuracy
    over the items of every benchmark it answered (percent) with the 95 % Wilson interval."""
    rows = []
    for g, v in _groups(scored):
        entries = [r for r in (v.get("accuracy") or {}).values()
                   if isinstance(r, dict) and r.get("n") and _finite(r.get("value")) is not None]
        if entries:
            n = sum(int(r["n"]) for r in entries)
            k = sum(int(r.get("k", round(float(r["value"]) * int(r["n"])))) for r in entries)
            low, high = wilson_interval(k, n)
            agents, backbone = _size_and_backbone(v.get("config") or {})
            rows.append([g, agents, backbone, 100 * k / n, 100 * low, 100 * high, len(entries)])
    return pd.DataFrame(rows, columns=["group", "agents", "backbone", "accuracy", "low", "high", "benchmarks"])


def benchmark_chance(items: pd.DataFrame) -> dict[str, float]:
    """Benchmark -> chance (mean of 1 / number of options over its items); ``items`` has
    the columns benchmark and options_json (:meth:`SagStore.items` rows with their run's
    benchmark)."""
    if items.empty:
        return {}
    share = option_chance(items["options_json"])
    return {str(b): float(v) for b, v in share.groupby(items["benchmark"]).mean().items()}


def parts_of(scored: Mapping[str, Any], group: str, prefixes: Sequence[str] = ()) -> list[str]:
    """The group's parts (``accuracy/medqa``, ``safety/harmful``, ...), those starting with
    one of ``prefixes`` when given, in run order."""
    runs = (scored.get("groups", {}).get(group) or {}).get("runs") or {}
    return [p for p in runs if not prefixes or str(p).startswith(tuple(prefixes))]


def items_behind(scored: Mapping[str, Any], group: str, part: str) -> pd.DataFrame:
    """The items a part answered (item_id, answer, truth, correct), from the export's
    answers; an empty table when the evaluation holds none for this part."""
    entry = ((scored.get("answers") or {}).get(group) or {}).get(part) or {}
    rows = [[str(i), str(a), str(t), a == t] for i, a, t in entry.get("items") or [] if i is not None]
    return pd.DataFrame(rows, columns=["item_id", "answer", "truth", "correct"]).astype({"correct": bool})


def source_choices(evaluations: pd.DataFrame, export_paths: Sequence[str | Path]) -> dict[str, str]:
    """Source key -> label: ``db:<eval_id>`` for each stored evaluation (newest first),
    then ``file:<path>`` for each shipped export file."""
    out: dict[str, str] = {}
    for r in evaluations.itertuples(index=False):
        out[f"db:{r.eval_id}"] = (f"stored: {r.eval_id} · {int(r.groups)} group(s) · "
                                  f"{int(r.answered)}/{int(r.items)} items answered")
    for path in export_paths:
        out[f"file:{path}"] = f"file: {Path(path).name}"
    return out


def summary_line(scored: Mapping[str, Any]) -> str:
    """One sentence: which suite, how many items per subset, which groups, which are unfinished."""
    spec = scored.get("spec") or {}
    names = [g for g, _ in _groups(scored)]
    text = (f"Evaluation {scored.get('eval_id', '?')}: suite {spec.get('suite', '?')}, {spec.get('n_items', '?')} "
            f"item(s) per subset, groups {', '.join(names)}.")
    note = unfinished_note(dict(scored))
    return f"{text} {note}" if note else text


def seed_report(scored: Mapping[str, Any]) -> str:
    """The Markdown comparison with the seed's tables (:func:`render_report`); InputError
    when the evaluation lacks a field the report reads."""
    try:
        return render_report(dict(scored))
    except (KeyError, TypeError, ValueError, AttributeError, OSError) as exc:
        raise InputError("evaluation", f"the seed comparison cannot be written from this evaluation ({exc!r})") \
            from None
