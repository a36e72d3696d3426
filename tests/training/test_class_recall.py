"""Recall per class beside accuracy (issue 51, item 15): a class a model never gets is named
in words, whatever its accuracy; the shipped DDXPlus-8 diagnostician is right on 94.5 % of
its held-out cases and on none of the 9 Myocarditis ones."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from training.class_recall import heldout_class_recall, letter_names, never_right, recall_table, split_dataset
from training.shipped import read_shipped


def test_recall_counts_each_class_its_right_answers_and_how_often_it_was_answered() -> None:
    table = recall_table(["A", "A", "B", "B", "C"], ["A", "B", "B", "B", "A"], names={"A": "Alpha"})
    assert table["Class"].tolist() == ["Alpha", "B", "C"]
    assert table["Items"].tolist() == [2, 2, 1] and table["Right"].tolist() == [1, 2, 0]
    assert table["Recall"].tolist() == [0.5, 1.0, 0.0]
    assert table["Answered"].tolist() == [2, 3, 0]
    with_absent = recall_table(["A"], ["A"], classes=["A", "Z"])
    assert with_absent["Items"].tolist() == [1, 0] and math.isnan(with_absent["Recall"].iloc[1])


def test_a_class_of_recall_zero_gets_a_sentence_and_no_other_does() -> None:
    table = recall_table(["A", "B", "C", "C"], ["A", "A", "A", "D"], classes=["A", "B", "C", "D"])
    assert never_right(table) == [
        "Never diagnoses B: 0 of its 1 held-out cases right; it never answers B.",
        "Never diagnoses C: 0 of its 2 held-out cases right; it never answers C."]  # D has no items: no flag
    table = recall_table(["A", "B"], ["B", "A"])
    assert never_right(table, diagnoses=False) == [
        "Never right when the answer is A: 0 of 1 held-out items; it answers A 1 time, always wrongly.",
        "Never right when the answer is B: 0 of 1 held-out items; it answers B 1 time, always wrongly."]
    assert never_right(recall_table(["A"], ["A"])) == []


def test_a_split_names_its_benchmark_and_ddxplus_letters_name_diagnoses() -> None:
    assert split_dataset("heldout", "ddxplus8:train:11ab63ed3ed2") == "ddxplus8"
    assert split_dataset("heldout:medqa", "medqa+medmcqa+pubmedqa+ddxplus8:train") == "medqa"
    assert split_dataset("cal:R1", "ddxplus8:debate:round1") == "ddxplus8"  # a view group's member, not a benchmark
    assert split_dataset("debate-fold", "ddxplus8:members:R2@history") == "ddxplus8"
    names = letter_names("ddxplus8")
    assert names is not None and names["A"] == "Anaphylaxis" and names["D"] == "Myocarditis" and len(names) == 8
    assert letter_names("medqa") is None


def test_the_shipped_diagnostician_never_diagnoses_myocarditis() -> None:
    """The issue's reproducer: 94.5 % accuracy, and recall 0 on Myocarditis."""
    shipped = read_shipped("ddxplus8-grpo")
    table, flags = heldout_class_recall(shipped.answers, shipped.run["data_name"])
    after = table.set_index("Class")
    assert (after["Right after"].sum(), after["Items"].sum()) == (189, 200)  # the 94.5 % accuracy
    assert after.loc["Myocarditis", "Items"] == 9 and after.loc["Myocarditis", "Recall after"] == 0.0
    assert flags == ["heldout: Never diagnoses Myocarditis: 0 of its 9 held-out cases right; "
                     "it never answers Myocarditis."]
    assert after.loc["Anaphylaxis", "Recall before"] == 1.0  # before training it answered A (Anaphylaxis) to all


def test_an_empty_record_has_no_table() -> None:
    table, flags = heldout_class_recall(pd.DataFrame(columns=["split", "step", "item_id", "answer", "truth"]), "x")
    assert table.empty and flags == []


@pytest.mark.parametrize("split, letters", [("heldout:medqa", "BCD"), ("heldout:pubmedqa", "BC")])
def test_the_single_sag_agent_is_flagged_on_every_letter_but_a(split: str, letters: str) -> None:
    shipped = read_shipped("sag-single-grpo")
    _, flags = heldout_class_recall(shipped.answers, shipped.run["data_name"])
    mine = [f for f in flags if f.startswith(f"{split}: ")]
    assert [f.split("answer is ")[1][0] for f in mine] == list(letters)


def test_the_training_report_gives_recall_per_class_and_flags_a_class_never_right() -> None:
    """``python -m training report`` (and so REPRODUCTION.md) shows recall per class beside
    accuracy, and a class with recall 0 in bold words."""
    from training.report import export_markdown

    text = export_markdown(read_shipped("ddxplus8-grpo"))
    line = next(x for x in text.splitlines() if x.startswith("Recall per class after training on heldout"))
    assert "Myocarditis 0.00 (9)" in line and "Anaphylaxis 1.00 (30)" in line and line.count("(") == 9  # "(items)" and one per class
    assert "**heldout: Never diagnoses Myocarditis: 0 of its 9 held-out cases right" in text
