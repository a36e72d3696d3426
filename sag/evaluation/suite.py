"""What an evaluation suite runs: its parts, each a set of items under one decoding setting.

A *part* is one SAG run: items (the shipped subsets, perturbed or not) answered by a group
whose config may be changed for the part (the consistency settings change temperature,
top-p and seed).  Parts of the ``core`` suite with ``n`` items (``--items n``):

==================  ========================================================================
accuracy/<b>        the first ``n`` evaluation ids of each benchmark of
                    :data:`~sag.evaluation.subsets.ACCURACY_BENCHMARKS`
relevance/pubmedqa  the first ``n`` PubMedQA ids, the abstract shown as context
fairness/...        the first ``n`` vignettes: ``original``, ``gender`` (terms swapped),
                    ``race-a`` (race stated White) and ``race-b`` (Black, Hispanic or Asian
                    by turns); pairs are (original, gender) and (race-a, race-b)
safety/harmful      the first ``n`` harmful and ``n`` benign requests
safety/benign
robustness/<b>/ling MedQA and MMLU-Pro health: typos on about 5 % of words, then the
robustness/<b>/adv  rule-based rewording; or one inserted sentence pointing to a wrong option
                    (clean = the accuracy part of the same benchmark)
consistency/<b>/... MedQA, the first ``consistency_items`` ids: ``base`` (temperature 0.7,
                    seeds 0..k_cr-1), ``temp`` (1.0), ``top_p`` (0.7, p = 0.9), ``cand``
                    (0.7, options shuffled per run), seeds 0..k_runs-1
==================  ========================================================================

Perturbed items keep the id of their source with a ``~tag`` suffix; every perturbation is
seeded from :data:`~sag.evaluation.subsets.SEED` and the item id, so a rerun builds the
same text.  A suite name may also be a comma-separated list of metrics.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from clinical.questions import QuestionItem
from common.errors import ConfigError
from common.fields import Field, Spec, Whole
from sag.evaluation.subsets import ACCURACY_BENCHMARKS, SEED, Subsets, items_by_id

__all__ = ["METRICS", "SuiteSpec", "Part", "build_parts", "CONSISTENCY_SETTINGS", "RACES_B", "item_rng"]

METRICS = ("accuracy", "relevance", "fairness", "safety", "robustness", "consistency")
SUITES = {"core": METRICS}
RACES_B = ("Black", "Hispanic", "Asian")
# setting -> (temperature, top_p, options shuffled)
CONSISTENCY_SETTINGS: dict[str, tuple[float, float, bool]] = {
    "base": (0.7, 1.0, False), "temp": (1.0, 1.0, False), "top_p": (0.7, 0.9, False), "cand": (0.7, 1.0, True)}


def item_rng(item_id: str, tag: str) -> np.random.Generator:
    """The generator of one item's perturbation ``tag`` (independent of everything else)."""
    digest = hashlib.sha256(f"{item_id}|{tag}".encode()).digest()
    return np.random.default_rng([SEED, int.from_bytes(digest[:8], "big")])


_COUNT = Whole(1, 100)
_SUITE = Spec({"n_items": Field((_COUNT,), label="items"), "k_runs": _COUNT, "k_cr": _COUNT,
               "consistency_items": Field((_COUNT,), optional=True)})


@dataclass(frozen=True)
class SuiteSpec:
    """Which metrics, on how many items.

    consistency_items : items of each consistency run (default ``max(2, n_items // 2)``):
        consistency repeats every item k_runs x 3 + k_cr times, the suite's main cost.
    """

    suite: str = "core"
    n_items: int = 10
    consistency_items: int | None = None
    robustness_benchmarks: tuple[str, ...] = ("medqa", "mmlu-pro-health")
    consistency_benchmarks: tuple[str, ...] = ("medqa",)
    k_runs: int = 5
    k_cr: int = 10

    def __post_init__(self) -> None:
        _SUITE.apply(self)
        if self.k_cr < self.k_runs:
            raise ConfigError("k_cr", f"must be at least k_runs ({self.k_runs})")
        self.metrics()

    def metrics(self) -> tuple[str, ...]:
        if self.suite in SUITES:
            return SUITES[self.suite]
        names = tuple(m.strip() for m in self.suite.split(",") if m.strip())
        unknown = [m for m in names if m not in METRICS]
        if not names or unknown:
            raise ConfigError("suite", f"unknown suite or metric {', '.join(unknown) or repr(self.suite)}; use "
                                       f"{', '.join(SUITES)} or a comma-separated list of {', '.join(METRICS)}")
        return tuple(m for m in METRICS if m in names)

    @property
    def n_consistency(self) -> int:
        return self.consistency_items if self.consistency_items is not None else max(2, self.n_items // 2)

    @property
    def eval_id(self) -> str:
        """Names the suite run: the same spec on the same store is the same evaluation."""
        extra = f"-c{self.n_consistency}" if "consistency" in self.metrics() else ""
        return f"{self.suite.replace(',', '+')}-n{self.n_items}{extra}"

    def run_id(self) -> str:
        """The evaluation's id (:attr:`eval_id`): each group's part is a run of its own inside it."""
        return self.eval_id

    def to_dict(self) -> dict[str, Any]:
        return {"suite": self.suite, "n_items": self.n_items, "consistency_items": self.n_consistency,
                "robustness_benchmarks": list(self.robustness_benchmarks),
                "consistency_benchmarks": list(self.consistency_benchmarks), "k_runs": self.k_runs, "k_cr": self.k_cr}


@dataclass(frozen=True)
class Part:
    """One run of the suite: ``key`` like ``robustness/medqa/adv``; ``changes`` to the group
    config; ``calibration_source`` names the subset the D-CEM method calibrates on."""

    key: str
    metric: str
    items: tuple[QuestionItem, ...]
    calibration_source: str
    changes: tuple[tuple[str, Any], ...] = ()
    pointed: tuple[tuple[str, str], ...] = field(default=())  # adv: item id -> letter the distractor names

    def digest(self) -> str:
        blob = json.dumps([self.key, [[it.item_id, it.question, it.options, it.answer] for it in self.items],
                           list(self.changes)], sort_keys=True)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:10]


def _with(item: QuestionItem, tag: str, question: str | None = None,
          options: tuple[tuple[str, str], ...] | None = None, answer: str | None = None) -> QuestionItem:
    from sag.evaluation.perturb import perturbed_id

    return QuestionItem(perturbed_id(item.item_id, tag), item.question if question is None else question,
                        item.options if options is None else options, item.answer if answer is None else answer,
                        item.benchmark, item.context, item.meta + (("source_id", item.item_id), ("perturbation", tag)))


def _accuracy(subsets: Subsets, spec: SuiteSpec) -> list[Part]:
    out = []
    for name in ACCURACY_BENCHMARKS:
        by_id = items_by_id(name)
        out.append(Part(f"accuracy/{name}", "accuracy", tuple(by_id[i] for i in subsets.eval_ids(name)[:spec.n_items]),
                        name))
    return out


def _relevance(subsets: Subsets, spec: SuiteSpec) -> list[Part]:
    by_id = items_by_id("pubmedqa")
    return [Part("relevance/pubmedqa", "relevance",
                 tuple(by_id[i] for i in subsets.eval_ids("pubmedqa")[:spec.n_items]), "pubmedqa")]


def _vignette(item_id: str) -> QuestionItem:
    return items_by_id("agentclinic" if item_id.startswith("agentclinic-") else "medqa")[item_id]


def _fairness(subsets: Subsets, spec: SuiteSpec) -> list[Part]:
    from sag.evaluation.demographics import load_demographic_rules, set_race, swap_gender

    rules = load_demographic_rules()
    originals = [_vignette(i) for i in subsets.vignettes()[:spec.n_items]]
    variants: dict[str, list[QuestionItem]] = {"gender": [], "race-a": [], "race-b": []}
    for n, item in enumerate(originals):
        other = RACES_B[n % len(RACES_B)]
        texts = {"gender": swap_gender(item.question, rules), "race-a": set_race(item.question, "White", rules),
                 "race-b": set_race(item.question, other, rules)}
        for tag, text in texts.items():
            if text is None:
                raise ConfigError("fairness", f"vignette {item.item_id} no longer yields a {tag} variant; "
                                              "rebuild data/sag_eval/subsets.json")
            label = f"race-{other.lower()}" if tag == "race-b" else ("race-white" if tag == "race-a" else tag)
            variants[tag].append(_with(item, label, question=text))
    parts = [Part("fairness/original", "fairness", tuple(originals), "medqa")]
    parts += [Part(f"fairness/{tag}", "fairness", tuple(items), "medqa") for tag, items in variants.items()]
    return parts


def _safety(subsets: Subsets, spec: SuiteSpec) -> list[Part]:
    by_id = items_by_id("safety")
    return [Part(f"safety/{kind}", "safety", tuple(by_id[i] for i in subsets.safety(f"{kind}_eval")[:spec.n_items]),
                 "safety") for kind in ("harmful", "benign")]


def _robustness(subsets: Subsets, spec: SuiteSpec) -> list[Part]:
    from sag.evaluation.perturb import add_typos, insert_distractor, load_reword_rules, reword

    rules, out = load_reword_rules(), []
    for name in spec.robustness_benchmarks:
        by_id = items_by_id(name)
        clean = [by_id[i] for i in subsets.eval_ids(name)[:spec.n_items]]
        ling = tuple(_with(it, "ling", question=reword(add_typos(it.question, item_rng(it.item_id, "typos")), rules))
                     for it in clean)
        adv, pointed = [], []
        for it in clean:
            changed, letter = insert_distractor(it, item_rng(it.item_id, "distractor"))
            adv.append(_with(it, "adv", question=changed.question))
            pointed.append((adv[-1].item_id, letter))
        out.append(Part(f"robustness/{name}/ling", "robustness", ling, name))
        out.append(Part(f"robustness/{name}/adv", "robustness", tuple(adv), name, pointed=tuple(pointed)))
    return out


def _consistency(subsets: Subsets, spec: SuiteSpec) -> list[Part]:
    from sag.evaluation.perturb import shuffle_options

    out = []
    for name in spec.consistency_benchmarks:
        by_id = items_by_id(name)
        items = [by_id[i] for i in subsets.eval_ids(name)[:spec.n_consistency]]
        for setting, (temperature, top_p, shuffled) in CONSISTENCY_SETTINGS.items():
            for seed in range(spec.k_cr if setting == "base" else spec.k_runs):
                run_items = tuple(items)
                if shuffled:
                    run_items = tuple(_with(it, f"shuffle{seed}", options=s.options, answer=s.answer)
                                      for it in items
                                      for s in [shuffle_options(it, item_rng(it.item_id, f"shuffle{seed}"))])
                out.append(Part(f"consistency/{name}/{setting}/{seed}", "consistency", run_items, name,
                                changes=(("temperature", temperature), ("top_p", top_p), ("seed", seed))))
    return out


_BUILDERS = {"accuracy": _accuracy, "relevance": _relevance, "fairness": _fairness, "safety": _safety,
             "robustness": _robustness, "consistency": _consistency}


def build_parts(spec: SuiteSpec, subsets: Subsets) -> tuple[Part, ...]:
    """Every part of the suite, in the order they run (cheap, shared parts first)."""
    metrics = spec.metrics()
    if "robustness" in metrics:
        missing = [b for b in spec.robustness_benchmarks if b not in ACCURACY_BENCHMARKS]
        if missing:
            raise ConfigError("robustness", f"robustness benchmarks must be accuracy benchmarks: {missing}")
    parts = [p for m in metrics for p in _BUILDERS[m](subsets, spec)]
    if "robustness" in metrics and "accuracy" not in metrics:  # the clean condition
        parts = [p for p in _accuracy(subsets, spec) if p.calibration_source in spec.robustness_benchmarks] + parts
    return tuple(parts)
