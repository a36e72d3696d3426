"""AgentClinic-MedQA (extended) cases as four-option diagnosis questions."""
from __future__ import annotations

import json
import re
import shutil
from functools import lru_cache
from pathlib import Path

import pytest

from clinical.agentclinic import FINAL_QUESTION, MAX_CHARS, RELATIVE_PATH
from clinical.questions import DEFAULT_DATA_DIR, QuestionItem, load_benchmark
from common.errors import InputError

SOURCE = DEFAULT_DATA_DIR / RELATIVE_PATH


@lru_cache(maxsize=None)
def items() -> tuple[QuestionItem, ...]:
    return load_benchmark("agentclinic")


@lru_cache(maxsize=None)
def cases() -> tuple[dict[str, object], ...]:
    lines = SOURCE.read_text(encoding="utf-8").split("\n")
    return tuple(json.loads(line)["OSCE_Examination"] for line in lines if line.strip())


def first_sentence(text: str) -> str:
    return text.split(". ", 1)[0]


def test_all_cases_load_with_unique_ids_in_line_order() -> None:
    loaded = items()
    assert len(loaded) == 214
    assert [item.item_id for item in loaded] == [f"agentclinic-{i:03d}" for i in range(214)]
    assert all(item.benchmark == "agentclinic" for item in loaded)
    assert all(item.meta == (("source", "agentclinic-medqa-extended"),) for item in loaded)


def test_four_distinct_options_and_the_answer_is_the_diagnosis() -> None:
    for item, case in zip(items(), cases()):
        texts = [text for _, text in item.options]
        assert item.letters == ("A", "B", "C", "D")
        assert len({text.lower() for text in texts}) == 4
        assert item.option_text(item.answer) == case["Correct_Diagnosis"].strip()
        wrong = [text for letter, text in item.options if letter != item.answer]
        assert all(text != case["Correct_Diagnosis"] for text in wrong)


def test_answer_letters_are_spread() -> None:
    counts = {letter: sum(item.answer == letter for item in items()) for letter in "ABCD"}
    assert min(counts.values()) >= 30, counts


def test_vignette_opens_with_the_demographics_and_ends_with_the_question() -> None:
    for item, case in zip(items(), cases()):
        demo = case["Patient_Actor"]["Demographics"]
        first = first_sentence(item.question)
        assert first.startswith(("A ", "An ")), first
        assert demo.lower() in first.lower()
        if re.match(r"\d+-(year|month|week|day)-old", demo):
            assert demo in first  # the age-sex phrase is kept verbatim
        assert item.question.endswith(FINAL_QUESTION)
        assert len(item.question) <= MAX_CHARS


def test_first_case_reads_as_documented() -> None:
    question = items()[0].question
    assert question.startswith("A 35-year-old female presents with double vision. The patient reports")
    assert "Vital signs: Temperature: 36.6°C (97.9°F); Blood pressure: 125/80 mmHg" in question
    assert "Electromyography findings: Decreased muscle response" in question
    assert "Objective" not in question


def test_article_follows_the_sound_of_the_age() -> None:
    by_demo = {case["Patient_Actor"]["Demographics"]: item for item, case in zip(items(), cases())}
    assert by_demo["8-year-old girl"].question.startswith("An 8-year-old girl presents with")
    assert by_demo["81-year-old male"].question.startswith("An 81-year-old male presents with")
    assert by_demo["11-year-old girl"].question.startswith("An 11-year-old girl")


def test_two_loads_are_identical() -> None:
    again = load_benchmark("agentclinic")
    assert again == items()


def copy_with(tmp_path: Path, line_no: int, edit) -> Path:
    folder = tmp_path / "data"
    (folder / "clinical_cases").mkdir(parents=True)
    lines = SOURCE.read_text(encoding="utf-8").split("\n")
    row = json.loads(lines[line_no - 1])
    edit(row)
    lines[line_no - 1] = json.dumps(row)
    (folder / RELATIVE_PATH).write_text("\n".join(lines), encoding="utf-8")
    return folder


def drop_diagnosis(row: dict) -> None:
    del row["OSCE_Examination"]["Correct_Diagnosis"]


def drop_demographics(row: dict) -> None:
    del row["OSCE_Examination"]["Patient_Actor"]["Demographics"]


def list_results(row: dict) -> None:
    row["OSCE_Examination"]["Test_Results"] = ["not an object"]


@pytest.mark.parametrize("edit, field", [(drop_diagnosis, "Correct_Diagnosis: missing"),
                                         (drop_demographics, "Demographics: missing"),
                                         (list_results, "Test_Results: must be an object")])
def test_a_broken_case_names_its_line(tmp_path: Path, edit, field: str) -> None:
    folder = copy_with(tmp_path, 5, edit)
    with pytest.raises(InputError) as info:
        load_benchmark("agentclinic", data_dir=folder)
    assert info.value.field == "data_dir"
    assert f"{RELATIVE_PATH} line 5: {field}" in str(info.value)


def test_invalid_json_line_is_an_error(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    (folder / "clinical_cases").mkdir(parents=True)
    shutil.copy(SOURCE, folder / RELATIVE_PATH)
    with (folder / RELATIVE_PATH).open("a", encoding="utf-8") as out:
        out.write("\n{not json")
    with pytest.raises(InputError, match="line 215: not valid JSON"):
        load_benchmark("agentclinic", data_dir=folder)
