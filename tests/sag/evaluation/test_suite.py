"""The suite's parts and its shipped subsets."""
from __future__ import annotations

import json

import pytest

from common.errors import ConfigError
from sag.evaluation.subsets import SUBSETS_FILE, build_subsets, items_by_id, load_subsets
from sag.evaluation.suite import SuiteSpec, build_parts


def test_shipped_subsets_are_what_the_builder_draws() -> None:
    assert json.loads(SUBSETS_FILE.read_text(encoding="utf-8")) == build_subsets()


def test_subsets_are_disjoint_where_they_must_be() -> None:
    subsets = load_subsets()
    for name in ("medqa", "medmcqa", "pubmedqa", "agentclinic"):
        assert not set(subsets.eval_ids(name)) & set(subsets.calibration_ids(name))
    assert not set(subsets.safety("harmful_eval")) & set(subsets.safety("harmful_train"))
    assert not set(subsets.safety("benign_eval")) & set(subsets.safety("benign_train"))
    assert set(subsets.safety("calibration")) <= set(subsets.safety("harmful_train") + subsets.safety("benign_train"))
    benign = {i.removeprefix("benign-") for i in subsets.safety("benign_eval")}
    assert not benign & set(subsets.eval_ids("mmlu-medical") + subsets.eval_ids("medmcqa"))


def test_core_parts_on_three_items() -> None:
    spec = SuiteSpec("core", n_items=3, consistency_items=2)
    parts = {p.key: p for p in build_parts(spec, load_subsets())}
    assert len([k for k in parts if k.startswith("accuracy/")]) == 6
    assert len([k for k in parts if k.startswith("consistency/")]) == 10 + 5 * 3
    assert all(len(p.items) == 3 for k, p in parts.items() if not k.startswith("consistency/"))
    assert all(len(p.items) == 2 for k, p in parts.items() if k.startswith("consistency/"))
    assert dict(parts["consistency/medqa/top_p/4"].changes) == {"temperature": 0.7, "top_p": 0.9, "seed": 4}
    assert dict(parts["consistency/medqa/temp/0"].changes)["temperature"] == 1.0
    original, gender = parts["fairness/original"].items[0], parts["fairness/gender"].items[0]
    assert gender.item_id == f"{original.item_id}~gender" and gender.question != original.question
    assert gender.options == original.options and gender.answer == original.answer
    assert "White" in parts["fairness/race-a"].items[0].question
    assert "Black" in parts["fairness/race-b"].items[0].question
    assert "Hispanic" in parts["fairness/race-b"].items[1].question
    clean, adv = parts["accuracy/medqa"].items[0], parts["robustness/medqa/adv"].items[0]
    pointed = dict(parts["robustness/medqa/adv"].pointed)[adv.item_id]
    assert pointed != clean.answer and clean.option_text(pointed) in adv.question
    ling = parts["robustness/medqa/ling"].items[0]
    assert ling.question != clean.question and ling.options == clean.options
    shuffled = parts["consistency/medqa/cand/1"].items[0]
    source = items_by_id("medqa")[shuffled.item_id.split("~")[0]]
    assert shuffled.option_text(shuffled.answer) == source.option_text(source.answer)
    harmful = parts["safety/harmful"].items
    assert all(it.answer == "B" for it in harmful) and all(it.answer == "A" for it in parts["safety/benign"].items)


def test_parts_are_rebuilt_identically() -> None:
    spec = SuiteSpec("robustness,consistency", n_items=2)
    first = [p.digest() for p in build_parts(spec, load_subsets())]
    assert first == [p.digest() for p in build_parts(spec, load_subsets())]
    keys = [p.key for p in build_parts(spec, load_subsets())]
    assert "accuracy/medqa" in keys and "accuracy/medmcqa" not in keys  # the clean condition comes along


@pytest.mark.parametrize("kwargs, field", [({"n_items": 0}, "items"), ({"n_items": 101}, "items"),
                                           ({"suite": "accuracy,speed"}, "suite"), ({"k_cr": 3}, "k_cr"),
                                           ({"consistency_items": True}, "consistency_items")])
def test_bad_specs_are_refused(kwargs: dict, field: str) -> None:
    with pytest.raises(ConfigError, match=field):
        SuiteSpec(**kwargs)


def test_eval_id_names_the_suite_and_sizes() -> None:
    assert SuiteSpec("core", n_items=10).eval_id == "core-n10-c5"
    assert SuiteSpec("safety,fairness", n_items=4).eval_id == "safety+fairness-n4"
