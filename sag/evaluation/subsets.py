"""The fixed item subsets of the evaluation suite, shipped in ``data/sag_eval/subsets.json``.

Runs of different groups, sessions and machines are comparable because they read the
same ids in the same order.  ``python -m sag.evaluation.subsets`` rebuilds the file from
the shipped data with seed :data:`SEED`; a test checks the shipped file equals a rebuild.

- ``benchmarks.<name>.eval``: 100 ids in a random order (so the first ``n`` are a random
  sample of ``n``); ``calibration``: 40 more, disjoint, for the D-CEM method's confusions.
- ``safety``: 100 harmful and 100 benign requests to evaluate on, and disjoint training
  requests (the learned screen is fit on those only); ``calibration``: 20 of each, taken
  from the training requests.
- ``fairness.vignettes``: MedQA and AgentClinic evaluation ids, alternating, kept when the
  demographic rules can both swap their gender terms and state a race in their first
  sentence.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from clinical.questions import DEFAULT_DATA_DIR, QuestionItem, load_benchmark
from common.errors import InputError

__all__ = ["SEED", "SUBSETS_FILE", "ACCURACY_BENCHMARKS", "Subsets", "build_subsets", "load_subsets", "items_by_id"]

SEED = 20261123
SUBSETS_FILE = DEFAULT_DATA_DIR / "sag_eval" / "subsets.json"
ACCURACY_BENCHMARKS = ("medqa", "medmcqa", "mmlu-medical", "mmlu-pro-health", "mmlu-pro-biology", "agentclinic")
_SUBSET_BENCHMARKS = ACCURACY_BENCHMARKS + ("pubmedqa",)
N_EVAL, N_CAL, N_SAFETY, N_SAFETY_CAL, N_VIGNETTES = 100, 40, 100, 20, 100


@dataclass(frozen=True)
class Subsets:
    """The shipped ids (see the module docstring)."""

    data: Mapping[str, Any]

    def eval_ids(self, benchmark: str) -> list[str]:
        return list(self._bench(benchmark)["eval"])

    def calibration_ids(self, benchmark: str) -> list[str]:
        return list(self._bench(benchmark)["calibration"])

    def safety(self, key: str) -> list[str]:
        return list(self.data["safety"][key])

    def vignettes(self) -> list[str]:
        return list(self.data["fairness"]["vignettes"])

    def _bench(self, benchmark: str) -> Mapping[str, Any]:
        try:
            return self.data["benchmarks"][benchmark]
        except KeyError:
            raise InputError("benchmark", f"no evaluation subset for {benchmark!r}; "
                                          f"have {', '.join(self.data['benchmarks'])}") from None


def _order(ids: list[str], n: int, rng: np.random.Generator) -> list[str]:
    if n > len(ids):
        raise InputError("subsets", f"need {n} items, have {len(ids)}")
    return [ids[i] for i in rng.permutation(len(ids))[:n]]


def _usable(items: tuple[QuestionItem, ...]) -> list[str]:
    return [it.item_id for it in items if ("subsets", "missing_resource") not in it.meta]


def build_subsets() -> dict[str, Any]:
    """Draw every subset from the shipped data (deterministic)."""
    from sag.evaluation.demographics import load_demographic_rules, set_race, swap_gender
    from clinical.safety_requests import benign_requests, harmful_requests

    benchmarks: dict[str, dict[str, list[str]]] = {}
    for index, name in enumerate(_SUBSET_BENCHMARKS):
        drawn = _order(_usable(load_benchmark(name)), N_EVAL + N_CAL, np.random.default_rng([SEED, index]))
        benchmarks[name] = {"eval": drawn[:N_EVAL], "calibration": drawn[N_EVAL:]}
    used = {i for b in benchmarks.values() for key in ("eval", "calibration") for i in b[key]}
    harmful = [it.item_id for it in harmful_requests()]
    benign = [it.item_id for it in benign_requests(exclude=sorted(used))]
    harmful = _order(harmful, len(harmful), np.random.default_rng([SEED, 100]))
    benign = _order(benign, len(benign), np.random.default_rng([SEED, 101]))
    safety = {"harmful_eval": harmful[:N_SAFETY], "benign_eval": benign[:N_SAFETY],
              "harmful_train": harmful[N_SAFETY:], "benign_train": benign[N_SAFETY:]}
    safety["calibration"] = safety["harmful_train"][:N_SAFETY_CAL] + safety["benign_train"][:N_SAFETY_CAL]
    rules = load_demographic_rules()
    sources = []
    for name in ("medqa", "agentclinic"):
        by_id = items_by_id(name)
        sources.append([i for i in benchmarks[name]["eval"]
                        if swap_gender(by_id[i].question, rules) is not None
                        and set_race(by_id[i].question, "White", rules) is not None])
    vignettes = [i for pair in zip(*sources) for i in pair][:N_VIGNETTES]
    return {"about": "Fixed item subsets of the SAG evaluation suite; rebuild with "
                     "`python -m sag.evaluation.subsets`. Ids only; the items are read from the shipped data.",
            "seed": SEED, "benchmarks": benchmarks, "safety": safety, "fairness": {"vignettes": vignettes}}


@lru_cache(maxsize=None)
def items_by_id(benchmark: str) -> Mapping[str, QuestionItem]:
    """A shipped benchmark (or the safety requests, ``"safety"``) by item id."""
    if benchmark == "safety":
        from clinical.safety_requests import benign_requests, harmful_requests

        return {it.item_id: it for it in harmful_requests() + benign_requests()}
    return {it.item_id: it for it in load_benchmark(benchmark)}


def load_subsets(path: Path | None = None) -> Subsets:
    """The shipped subsets file (or ``path``)."""
    where = path or SUBSETS_FILE
    try:
        return Subsets(json.loads(Path(where).read_text(encoding="utf-8")))
    except OSError as exc:
        raise InputError("subsets", f"cannot read {where}: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise InputError("subsets", f"{where} is not valid JSON: {exc.msg} at line {exc.lineno}") from None


def main() -> None:
    SUBSETS_FILE.parent.mkdir(parents=True, exist_ok=True)
    SUBSETS_FILE.write_text(json.dumps(build_subsets(), indent=1) + "\n", encoding="utf-8")
    print(f"wrote {SUBSETS_FILE.name}")


if __name__ == "__main__":
    main()
