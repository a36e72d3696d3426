"""Strict validation of an evaluation export (:mod:`sag.evaluation.export`) as it is loaded.

An export is read by the report (:func:`sag.evaluation.tables.render_report`) and the Group
evaluation page, which trust its shape: :func:`check_export` refuses, with one
:class:`~common.errors.InputError` naming the offending field by its JSON path (for
example ``groups.sag-6.accuracy.medqa.low``), any file that :func:`~sag.evaluation.export.
build_export` could not have written:

- every field of the known schema present with its type, and no unknown field;
- counts whole numbers, not negative, successes at most the items;
- rates equal to successes / items, their 95 % interval the Wilson interval of the counts
  (finite bounds in order), all null only when there is no item;
- benchmark, metric and setting names known, and consistent between the tables: the
  group names of ``groups`` and ``answers``, each group's ``config.name``, the runs each
  metric names, the suite's benchmarks, the clean robustness rate and the accuracy rate,
  accuracy and its item answers, the gap and the average CDR and their rates, the
  escalation total and its metrics, the std of consistency and its accuracies, the most
  frequent answer's share and flag and its counts.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from common.errors import ProjectError
from sag.group.config import GroupConfig
from sag.evaluation.json_shape import MAX_COUNT, Path, ShapeCheck, kind
from sag.evaluation.metrics import DOMINANT_SHARE, run_std
from sag.evaluation.subsets import ACCURACY_BENCHMARKS
from sag.evaluation.suite import CONSISTENCY_SETTINGS, METRICS, SuiteSpec
from sag.runs.report import wilson_interval

__all__ = ["check_export", "TOLERANCE", "MAX_COUNT", "MAX_MEASURE"]

TOLERANCE = 1e-9  # derived numbers written by the export agree with their source to this
MAX_MEASURE = 1e24  # seconds, tokens, FLOPs, megabytes per item: beyond any measurement
_RATE = ("k", "n", "value", "low", "high")
_SAFETY_RATES = ("hrr", "over_refusal", "hrr_refuse_only", "over_refusal_refuse_only")
_DEPLOYMENT_COUNTS = ("items", "timed_items", "cached_items")
_DEPLOYMENT = _DEPLOYMENT_COUNTS + ("seconds_per_item", "tokens_per_item", "processed_tokens_per_item",
                                   "flops_per_item")
_GROUP = ("config", "runs", "complete", "items_answered", "items_planned", "accuracy", "gap", "robustness",
          "consistency", "deployment", "escalated")
_COST = ("peak_rss_mb", "weights_mb", "weights_per_agent_mb", "peak_rss_one_copy_per_agent_mb")


class _Check(ShapeCheck):
    """The checks of one evaluation export, named ``name`` in every message."""

    def __init__(self, name: str) -> None:
        super().__init__(name, "export", "an evaluation export")

    # ------------------------------------------------------------ pieces

    def rate(self, value: Any, path: Path, extra: Sequence[str] = ()) -> dict[str, Any]:
        """A Rate dict (:class:`sag.evaluation.metrics.Rate`) and the ``extra`` fields."""
        r = self.obj(value, path, _RATE + tuple(extra))
        n = self.integer(r["n"], path + ("n",))
        k = self.integer(r["k"], path + ("k",), 0, n)
        if n == 0:
            for key in ("value", "low", "high"):
                self.agree(r[key] is None, path + (key,), f"must be null when n is 0, got {kind(r[key])}")
        else:
            low, high = wilson_interval(k, n)
            for key, want in (("value", k / n), ("low", low), ("high", high)):
                got = self.number(r[key], path + (key,))
                self.agree(abs(got - want) <= TOLERANCE, path + (key,),
                           f"is {got!r}, but {k} of {n} gives {want!r}")
        if "asked" in extra:
            self.integer(r["asked"], path + ("asked",), n)
        if "run_id" in extra:
            self.text(r["run_id"], path + ("run_id",))
        if "flipped" in extra:
            self.texts(r["flipped"], path + ("flipped",), unique=True)
            self.agree(len(r["flipped"]) == k, path + ("flipped",), f"must list the {k} flipped items")
        return r

    def roc(self, value: Any, path: Path) -> None:
        r = self.obj(value, path, ("fpr", "tpr", "thresholds", "auc"))
        size = None
        for key in ("fpr", "tpr", "thresholds"):
            points = r[key]
            if not isinstance(points, list) or not points:
                self.fail(path + (key,), f"must be a non-empty list, got {kind(points)}")
            self.agree(size is None or len(points) == size, path + (key,), "must have one entry per point")
            size = len(points)
            for i, p in enumerate(points):
                if key == "thresholds":
                    self.number(p, path + (key, i), -MAX_MEASURE, MAX_MEASURE, null=True)
                else:
                    self.number(p, path + (key, i))
            if key != "thresholds":
                self.agree(all(a <= b for a, b in zip(points, points[1:])), path + (key,),
                           "must not decrease")
        self.number(r["auc"], path + ("auc",))

    def dominant(self, value: Any, path: Path) -> None:
        """A most frequent answer (:class:`sag.evaluation.metrics.Dominant`)."""
        d = self.obj(value, path, ("answer", "k", "n", "share", "flagged"))
        n = self.integer(d["n"], path + ("n",))
        k = self.integer(d["k"], path + ("k",), min(n, 1), n)
        if n:
            self.text(d["answer"], path + ("answer",), cell=True)
            share = self.number(d["share"], path + ("share",))
            self.agree(abs(share - k / n) <= TOLERANCE, path + ("share",),
                       f"is {share!r}, but {k} of {n} gives {k / n!r}")
        else:
            self.agree(d["answer"] is None and d["share"] is None, path,
                       "must have a null answer and share when n is 0")
        want = bool(n) and k / n > DOMINANT_SHARE
        self.agree(d["flagged"] is want, path + ("flagged",),
                   f"must be {str(want).lower()}: the share is {'above' if want else 'at most'} {DOMINANT_SHARE:g}")

    def run_of(self, rate: Mapping[str, Any], runs: Mapping[str, str], part: str, path: Path) -> None:
        self.agree(runs.get(part) == rate["run_id"], path + ("run_id",), f"must be the run of {part} in runs")


def check_export(data: Any, name: str) -> dict[str, Any]:
    """``data`` if it is an evaluation export (module docstring); else InputError naming
    the file ``name`` and the field."""
    c = _Check(name)
    top = c.obj(data, (), ("format", "command", "eval_id", "spec", "groups", "answers"), ("screen",))
    c.text(top["command"], ("command",), empty=True)
    c.text(top["eval_id"], ("eval_id",), cell=True)
    spec = _spec(c, top["spec"])
    c.agree(top["eval_id"] == spec.eval_id, ("eval_id",), f"must be {spec.eval_id!r}, the id of its spec")
    groups = c.mapping(top["groups"], ("groups",))
    c.agree(bool(groups), ("groups",), "holds no group")
    for group, values in groups.items():
        _group(c, group, values, spec)
    answers = c.mapping(top["answers"], ("answers",))
    c.agree(set(answers) == set(groups), ("answers",),
            "must hold the answers of the same groups as groups")
    for group, parts in answers.items():
        _answers(c, group, parts, groups[group])
    if "screen" in top:
        screen = c.obj(top["screen"], ("screen",), ("name", "train", "hrr", "over_refusal", "roc"))
        c.text(screen["name"], ("screen", "name"), cell=True)
        c.integer(screen["train"], ("screen", "train"))
        for key in ("hrr", "over_refusal"):
            c.rate(screen[key], ("screen", key))
        c.roc(screen["roc"], ("screen", "roc"))
    return data  # type: ignore[no-any-return]


def _spec(c: _Check, value: Any) -> SuiteSpec:
    path: Path = ("spec",)
    s = c.obj(value, path, ("suite", "n_items", "consistency_items", "robustness_benchmarks",
                            "consistency_benchmarks", "k_runs", "k_cr"))
    c.text(s["suite"], path + ("suite",), cell=True)
    for key in ("n_items", "consistency_items", "k_runs", "k_cr"):
        c.integer(s[key], path + (key,), 1, 100)
    for key in ("robustness_benchmarks", "consistency_benchmarks"):
        for i, bench in enumerate(c.texts(s[key], path + (key,), unique=True)):
            c.agree(bench in ACCURACY_BENCHMARKS, path + (key, i), f"is not a benchmark of the suite: {bench!r}")
    try:
        spec = SuiteSpec(s["suite"], n_items=s["n_items"], consistency_items=s["consistency_items"],
                         robustness_benchmarks=tuple(s["robustness_benchmarks"]),
                         consistency_benchmarks=tuple(s["consistency_benchmarks"]), k_runs=s["k_runs"], k_cr=s["k_cr"])
    except ProjectError as exc:
        c.fail(path, f"is not a suite: {exc}")
    c.agree(spec.to_dict() == s, path + ("consistency_items",), f"must be {spec.n_consistency} for this suite")
    return spec


def _group(c: _Check, group: str, value: Any, spec: SuiteSpec) -> None:
    path: Path = ("groups", group)
    c.text(group, path, cell=True)
    g = c.obj(value, path, _GROUP, ("relevance", "fairness", "safety"))
    _config(c, g["config"], path + ("config",), group)
    runs = c.mapping(g["runs"], path + ("runs",))
    for part, run_id in runs.items():
        c.agree(part.split("/", 1)[0] in METRICS, path + ("runs", part), "is not a part of the suite")
        c.text(run_id, path + ("runs", part))
    c.agree(isinstance(g["complete"], bool), path + ("complete",), f"must be true or false, got {kind(g['complete'])}")
    answered = c.integer(g["items_answered"], path + ("items_answered",))
    if g["items_planned"] is not None:
        c.integer(g["items_planned"], path + ("items_planned",), answered)
    accuracy = c.mapping(g["accuracy"], path + ("accuracy",), ACCURACY_BENCHMARKS)
    for bench, r in accuracy.items():
        c.rate(r, path + ("accuracy", bench), ("run_id", "asked"))
        c.run_of(r, runs, f"accuracy/{bench}", path + ("accuracy", bench))
    values = [r["value"] for r in accuracy.values() if r["n"]]
    gap = c.number(g["gap"], path + ("gap",), null=True)
    want = max(values) - min(values) if len(values) >= 2 else None
    c.agree(gap == want if want is None or gap is None else abs(gap - want) <= TOLERANCE, path + ("gap",),
            f"must be {want!r}, the best minus the worst accuracy")
    if "relevance" in g:
        _relevance(c, g["relevance"], path + ("relevance",), runs)
    if "fairness" in g:
        _fairness(c, g["fairness"], path + ("fairness",))
    if "safety" in g:
        s = c.obj(g["safety"], path + ("safety",), () if not g["safety"] else _SAFETY_RATES, ("roc", "dominant"))
        for key in _SAFETY_RATES if s else ():
            c.rate(s[key], path + ("safety", key))
        if "roc" in s:
            c.roc(s["roc"], path + ("safety", "roc"))
        if "dominant" in s:
            c.dominant(s["dominant"], path + ("safety", "dominant"))
    _robustness(c, g["robustness"], path + ("robustness",), spec, accuracy, runs)
    _consistency(c, g["consistency"], path + ("consistency",), spec)
    _deployment(c, g["deployment"], path + ("deployment",))
    _escalated(c, g["escalated"], path + ("escalated",))


def _config(c: _Check, value: Any, path: Path, group: str) -> None:
    if not isinstance(value, dict):
        c.fail(path, f"must be an object, got {kind(value)}")
    try:
        cfg = GroupConfig.from_mapping(value)
    except (ProjectError, TypeError, ValueError) as exc:
        c.fail(path, f"is not a group config: {exc}")
    c.agree(cfg.name == group, path + ("name",), f"must be {group!r}, the group's name")


def _relevance(c: _Check, value: Any, path: Path, runs: Mapping[str, str]) -> None:
    r = c.obj(value, path, ("accuracy", "supported", "grounded", "bleu4", "run_id"))
    c.rate(r["accuracy"], path + ("accuracy",), ("run_id",))
    c.run_of(r["accuracy"], runs, "relevance/pubmedqa", path + ("accuracy",))
    c.run_of(r, runs, "relevance/pubmedqa", path)
    for key in ("supported", "grounded"):
        c.rate(r[key], path + (key,))
        c.agree(r[key]["n"] == r["accuracy"]["n"], path + (key, "n"), "must count the items of accuracy")
    c.number(r["bleu4"], path + ("bleu4",), 0.0, 100.0, null=True)


def _fairness(c: _Check, value: Any, path: Path) -> None:
    f = c.obj(value, path, ("gender", "race", "average", "dominant"))
    c.dominant(f["dominant"], path + ("dominant",))
    rates = [c.rate(f[key], path + (key,), ("flipped",)) for key in ("gender", "race")]
    values = [r["value"] for r in rates if r["n"]]
    average = c.number(f["average"], path + ("average",), null=True)
    want = sum(values) / len(values) if values else None
    c.agree(average == want if want is None or average is None else abs(average - want) <= TOLERANCE,
            path + ("average",), f"must be {want!r}, the mean of the gender and race rates")


def _robustness(c: _Check, value: Any, path: Path, spec: SuiteSpec, accuracy: Mapping[str, Any],
                runs: Mapping[str, str]) -> None:
    for bench, conditions in c.mapping(value, path, spec.robustness_benchmarks).items():
        r = c.obj(conditions, path + (bench,), (), ("clean", "ling", "adv", "followed_distractor"))
        for cond in ("clean", "ling", "adv"):
            if cond in r:
                c.rate(r[cond], path + (bench, cond), ("run_id", "asked"))
                part = f"accuracy/{bench}" if cond == "clean" else f"robustness/{bench}/{cond}"
                c.run_of(r[cond], runs, part, path + (bench, cond))
        if "clean" in r and bench in accuracy:
            c.agree(r["clean"] == accuracy[bench], path + (bench, "clean"), f"must equal accuracy.{bench}")
        if "followed_distractor" in r:
            c.rate(r["followed_distractor"], path + (bench, "followed_distractor"))


def _consistency(c: _Check, value: Any, path: Path, spec: SuiteSpec) -> None:
    for bench, settings in c.mapping(value, path, spec.consistency_benchmarks).items():
        s = c.obj(settings, path + (bench,), tuple(CONSISTENCY_SETTINGS) + ("dominant",), ("cr",))
        c.dominant(s["dominant"], path + (bench, "dominant"))
        for setting in CONSISTENCY_SETTINGS:
            where = path + (bench, setting)
            one = c.obj(s[setting], where, ("accuracies", "std", "runs"))
            runs = c.integer(one["runs"], where + ("runs",))
            accs = one["accuracies"]
            if not isinstance(accs, list):
                c.fail(where + ("accuracies",), f"must be a list, got {kind(accs)}")
            c.agree(len(accs) <= runs, where + ("accuracies",), f"must hold at most {runs} runs")
            for i, acc in enumerate(accs):
                c.number(acc, where + ("accuracies", i), 0.0, 100.0)
            std = c.number(one["std"], where + ("std",), 0.0, 100.0, null=True)
            want = run_std(accs) if len(accs) >= 2 else None
            c.agree(std == want if want is None or std is None else abs(std - want) <= 1e-6, where + ("std",),
                    f"must be {want!r}, the std of the accuracies")
        if "cr" in s:
            cr = c.obj(s["cr"], path + (bench, "cr"), ("k", "items", "value"))
            c.integer(cr["k"], path + (bench, "cr", "k"))
            items = c.integer(cr["items"], path + (bench, "cr", "items"))
            c.number(cr["value"], path + (bench, "cr", "value"), null=items == 0)


def _deployment(c: _Check, value: Any, path: Path) -> None:
    d = c.obj(value, path, _DEPLOYMENT if value else (), _COST)
    if not d:
        return
    items = c.integer(d["items"], path + ("items",))
    for key in _DEPLOYMENT_COUNTS[1:]:
        c.integer(d[key], path + (key,), 0, items)
    for key in _DEPLOYMENT[len(_DEPLOYMENT_COUNTS):] + tuple(k for k in _COST if k in d):
        c.number(d[key], path + (key,), 0.0, MAX_MEASURE, null=True)


def _escalated(c: _Check, value: Any, path: Path) -> None:
    counts = c.mapping(value, path, METRICS + ("total",))
    sums = [0, 0]
    for metric, count in counts.items():
        e = c.obj(count, path + (metric,), ("items", "escalated"))
        items = c.integer(e["items"], path + (metric, "items"))
        c.integer(e["escalated"], path + (metric, "escalated"), 0, items)
        if metric != "total":
            sums = [sums[0] + items, sums[1] + e["escalated"]]
    if counts:
        total = counts.get("total")
        c.agree(total == {"items": sums[0], "escalated": sums[1]}, path + ("total",),
                f"must count the metrics' {sums[0]} items and {sums[1]} escalated")


def _answers(c: _Check, group: str, value: Any, scored: Mapping[str, Any]) -> None:
    path: Path = ("answers", group)
    runs = scored["runs"]
    parts = c.mapping(value, path, list(runs))
    c.agree(set(parts) == set(runs), path, "must hold every part of the group's runs")
    for part, answers in parts.items():
        a = c.obj(answers, path + (part,), ("run_id", "items"))
        c.agree(a["run_id"] == runs[part], path + (part, "run_id"), f"must be the run of {part} in runs")
        items = a["items"]
        if not isinstance(items, list):
            c.fail(path + (part, "items"), f"must be a list, got {kind(items)}")
        if not all(type(item) is list and len(item) == 3 and type(item[0]) is str and item[0].strip()
                   and type(item[1]) is str and type(item[2]) is str and item[2].strip() for item in items):
            for i, item in enumerate(items):  # the slow path names the first bad item
                if not isinstance(item, list) or len(item) != 3:
                    c.fail(path + (part, "items", i), f"must be [item id, answer, truth], got {kind(item)}")
                for j, text in enumerate(item):
                    c.text(text, path + (part, "items", i, j), empty=j == 1)
        bench = part.split("/", 1)[1] if part.startswith("accuracy/") else None
        if bench in scored["accuracy"]:
            rate = scored["accuracy"][bench]
            right = sum(1 for _, answer, truth in items if answer == truth)
            c.agree((rate["n"], rate["k"]) == (len(items), right), ("groups", group, "accuracy", bench),
                    f"must count the {len(items)} answers of {path[0]}.{group}.{part} ({right} right)")
