"""The view group's references: naive Bayes fit on TRAIN, on the whole case and on each
view, answers the 200 TEST cases; the shipped references file holds exactly these."""
from __future__ import annotations

import json
from pathlib import Path

from clinical.datasets import load_dataset
from clinical.group_folds import group_folds
from dcem_clinical.views_references import DIAGNOSTICIAN, LETTERS, diagnostician_name, nb_answers

ROOT = Path(__file__).resolve().parents[2]
SHIPPED = ROOT / "data" / "results" / "sag_views_references.json"


def test_naive_bayes_on_a_view_knows_less_than_on_the_whole_case() -> None:
    test_ids = list(group_folds().test)
    truth = {c.source_id: LETTERS[c.label] for c in load_dataset("ddxplus8").cases}
    whole, view = nb_answers(), nb_answers("pain-character")
    assert set(whole) == set(view) == set(test_ids) and len(test_ids) == 200
    assert set(whole.values()) <= set(LETTERS) and set(view.values()) <= set(LETTERS)
    right = {name: sum(a[i] == truth[i] for i in test_ids) for name, a in (("whole", whole), ("view", view))}
    assert right["view"] < right["whole"]  # one view drops evidence the whole case has
    assert right["view"] > 200 / 8  # and still holds more than chance


def test_the_shipped_references_hold_naive_bayes_on_each_view() -> None:
    shipped = json.loads(SHIPPED.read_text(encoding="utf-8"))
    assert shipped["naive Bayes on the whole case (fit on TRAIN)"] == nb_answers()
    for view in ("pain-location", "history", "pain-character"):
        assert shipped[f"naive Bayes reading {view} only (fit on TRAIN)"] == nb_answers(view)
        assert f"{diagnostician_name(DIAGNOSTICIAN)} reading {view} only" in shipped
    assert diagnostician_name(DIAGNOSTICIAN) == "the diagnostician (ddxplus8-grpo-balanced)"
    assert f"{diagnostician_name(DIAGNOSTICIAN)} on the whole case" in shipped
