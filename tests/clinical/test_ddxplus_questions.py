"""Benchmark ``ddxplus8``: the DDXPlus-8 cases as eight-option diagnosis questions, with the
cases' ids and their TRAIN / HELD-OUT split."""
from __future__ import annotations

import shutil
from collections import Counter
from functools import lru_cache
from pathlib import Path

import pandas as pd
import pytest

from clinical.datasets import load_dataset
from clinical.ddxplus import DEFAULT_CSV, LABELS, Case, load_ddxplus8
from clinical.ddxplus_questions import FINAL_QUESTION, OPTION_NAMES, OPTIONS, RELATIVE_CSV, diagnosis_of_letter
from clinical.questions import BENCHMARKS, QuestionItem, load_benchmark
from clinical.training_split import heldout_items, train_id_set, train_items, training_split
from common.errors import InputError

LEAK_STEMS = ("anaphyla", "embolism", "nstemi", "stemi", "myocard", "upper respiratory", "pharyngit",
              "reflux", "bronchitis")


@lru_cache(maxsize=None)
def items() -> tuple[QuestionItem, ...]:
    return load_benchmark("ddxplus8")


@lru_cache(maxsize=None)
def cases() -> tuple[Case, ...]:
    return tuple(load_ddxplus8())


def test_every_case_is_one_eight_option_question_with_the_case_id() -> None:
    got, want = items(), cases()
    assert "ddxplus8" in BENCHMARKS
    assert len(got) == len(want) == 825
    assert [it.item_id for it in got] == [c.case_id for c in want]
    assert [it.item_id for it in got] == [c.source_id for c in load_dataset("ddxplus8").cases]
    for item in got:
        assert item.benchmark == "ddxplus8" and item.options == OPTIONS and len(item.options) == 8
    assert [text for _, text in OPTIONS] == [OPTION_NAMES[name] for name in LABELS]
    assert len(set(OPTION_NAMES.values())) == 8 and "_" not in "".join(OPTION_NAMES.values())


def test_the_answer_is_the_cases_diagnosis_and_spreads_over_a_to_h() -> None:
    for item, case in zip(items(), cases()):
        assert item.answer_index == case.label and diagnosis_of_letter(item.answer) == case.label_name
    answers = Counter(it.answer for it in items())
    assert set(answers) == set("ABCDEFGH")
    assert answers == Counter("ABCDEFGH"[c.label] for c in cases())


def test_the_question_is_the_vignette_then_the_question_and_names_no_diagnosis() -> None:
    for item, case in zip(items(), cases()):
        assert item.question == f"{case.text}\n\n{FINAL_QUESTION}" and item.context == ""
        assert not any(stem in item.question.lower() for stem in LEAK_STEMS), item.item_id
        assert item.meta == (("source", case.source),) and case.source
    assert Counter(it.meta_value("source") for it in items()) == Counter(c.source for c in cases())


def test_train_and_heldout_are_the_split_as_questions() -> None:
    train, held = train_items("ddxplus8"), heldout_items("ddxplus8")
    split = training_split("ddxplus8")
    assert (len(train), len(held)) == (495, 330)
    assert tuple(it.item_id for it in train) == split.train_ids
    assert tuple(it.item_id for it in held) == split.heldout_ids
    assert not {it.item_id for it in train} & {it.item_id for it in held}
    assert {it.item_id for it in train} == train_id_set("ddxplus8")
    by_id = {it.item_id: it for it in items()}
    assert all(isinstance(it, QuestionItem) and it == by_id[it.item_id] for it in train + held)


def test_data_dir_is_read_and_a_missing_file_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "ddxplus"
    folder.mkdir()
    pd.read_csv(DEFAULT_CSV, dtype=str, keep_default_na=False).head(12).to_csv(tmp_path / RELATIVE_CSV, index=False)
    shutil.copy(DEFAULT_CSV.parent / "release_evidences.json", folder)
    few = load_benchmark("ddxplus8", data_dir=tmp_path)
    assert few == items()[:12]
    (tmp_path / RELATIVE_CSV).unlink()
    with pytest.raises(InputError, match="does not exist"):
        load_benchmark("ddxplus8", data_dir=tmp_path)
