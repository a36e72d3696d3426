"""Question benchmarks (counts from each data/*/SOURCE.md), the user JSONL loader and sampling."""
from __future__ import annotations

import json
from collections import Counter
from functools import lru_cache
from pathlib import Path

import numpy as np
import pytest

from clinical.question_sources import READERS
from clinical.questions import (
    BENCHMARKS,
    QuestionItem,
    load_benchmark,
    load_jsonl_items,
    parse_jsonl_items,
    sample_items,
)
from common.errors import InputError

ROOT = Path(__file__).resolve().parents[2]

# Rows measured in each SOURCE.md; MedMCQA drops its 80 missing_resource ids (2,816 - 80).
COUNTS = {"medqa": 1273, "medmcqa": 2736, "mmlu-medical": 1089, "mmlu-pro-health": 818,
          "mmlu-pro-biology": 717, "pubmedqa": 500,
          "agentclinic": 214, "ddxplus8": 825}


@lru_cache(maxsize=None)
def bench(name: str) -> tuple[QuestionItem, ...]:
    return load_benchmark(name)


def test_registry_names() -> None:
    assert BENCHMARKS == ("medqa", "medmcqa", "mmlu-medical", "mmlu-pro-health", "mmlu-pro-biology",
                          "pubmedqa", "agentclinic", "ddxplus8")
    assert tuple(READERS) == BENCHMARKS


@pytest.mark.parametrize("name", sorted(COUNTS))
def test_benchmark_counts_answers_and_ids(name: str) -> None:
    items = bench(name)
    assert len(items) == COUNTS[name]
    assert len({item.item_id for item in items}) == len(items)
    for item in items:
        assert item.benchmark == name
        assert item.answer in item.letters
        assert item.option_text(item.answer) == item.options[item.answer_index][1]
        assert item.question and all(text for _, text in item.options)


def test_medqa_answers_and_steps_match_source() -> None:
    items = bench("medqa")
    assert Counter(item.answer for item in items) == {"A": 353, "B": 309, "C": 346, "D": 265}
    assert Counter(item.meta_value("step") for item in items) == {"step1": 679, "step2&3": 593,
                                                                   "stfep2&3": 1}
    assert items[0].item_id == "medqa-0000" and items[-1].item_id == "medqa-1272"


def test_medmcqa_drops_missing_resource_ids() -> None:
    subsets = json.loads((ROOT / "data" / "medmcqa" / "subsets.json").read_text(encoding="utf-8"))
    missing = set(subsets["missing_resource"])
    ids = {item.item_id for item in bench("medmcqa")}
    assert len(missing) == 80
    assert not ids & missing
    assert len(ids) + len(missing) == 2816
    hard_kept = set(subsets["hard"]) - missing
    assert {i.item_id for i in bench("medmcqa") if i.meta_value("subsets") == "hard"} == hard_kept


def test_mmlu_medical_subjects_and_answers() -> None:
    items = bench("mmlu-medical")
    assert Counter(item.meta_value("subject") for item in items) == {
        "professional_medicine": 272, "clinical_knowledge": 265, "college_medicine": 173,
        "college_biology": 144, "anatomy": 135, "medical_genetics": 100}
    assert Counter(item.answer for item in items) == {"A": 235, "B": 254, "C": 248, "D": 352}
    assert sum("missing_resource" in item.meta_value("subsets") for item in items) == 2


def test_mmlu_pro_health_sources_and_option_counts() -> None:
    items = bench("mmlu-pro-health")
    by_src = Counter(item.meta_value("src").removeprefix("ori_mmlu-") for item in items)
    assert by_src == {"professional_medicine": 254, "nutrition": 179, "human_aging": 86, "anatomy": 79,
                      "clinical_knowledge": 72, "medical_genetics": 54, "college_medicine": 48,
                      "virology": 46}
    assert sum(len(item.options) == 10 for item in items) == 597
    assert min(len(item.options) for item in items) == 3


def test_mmlu_pro_biology_list_options_get_letters() -> None:
    items = bench("mmlu-pro-biology")
    assert Counter(len(item.options) for item in items) == {10: 617, 9: 33, 8: 13, 7: 5, 6: 6, 5: 2,
                                                           4: 40, 3: 1}
    assert Counter(item.meta_value("src") for item in items) == {
        "stemez-Biology": 351, "stemez-Genetics": 147, "ori_mmlu-high_school_biology": 140,
        "ori_mmlu-college_biology": 79}
    first = items[0]
    assert first.item_id == "2804" and first.answer == "B"
    assert first.letters == tuple("ABCDEFGH")
    assert first.option_text("B") == "longitudinal section of a shoot tip"


def test_pubmedqa_labels_context_and_ids() -> None:
    items = bench("pubmedqa")
    assert Counter(item.option_text(item.answer) for item in items) == {"yes": 276, "no": 169, "maybe": 55}
    truth = json.loads((ROOT / "data" / "pubmedqa" / "test_ground_truth.json").read_text(encoding="utf-8"))
    assert [item.item_id for item in items] == list(truth)
    assert all(item.options == (("A", "yes"), ("B", "no"), ("C", "maybe")) for item in items)
    record = json.loads((ROOT / "data" / "pubmedqa" / "ori_pqal.json").read_text(encoding="utf-8"))[
        items[0].item_id]
    assert items[0].question == record["QUESTION"]
    assert items[0].context.split("\n")[0] == f"{record['LABELS'][0]}: {record['CONTEXTS'][0]}"
    assert record["LONG_ANSWER"] not in items[0].context


def test_data_folders_have_source_with_reader_line() -> None:
    for folder in ("medmcqa", "mmlu_medical", "mmlu_pro_health", "mmlu_pro_biology", "pubmedqa"):
        first = (ROOT / "data" / folder / "SOURCE.md").read_text(encoding="utf-8").splitlines()[0]
        assert "clinical.questions" in first, folder


def test_unknown_benchmark_names_known_ones() -> None:
    with pytest.raises(InputError) as err:
        load_benchmark("medqa5")
    assert err.value.field == "benchmark"
    assert "mmlu-pro-biology" in str(err.value) and "pubmedqa" in str(err.value)


def test_benchmark_missing_file_and_duplicate_ids(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="mmlu_pro_biology/test.jsonl not found") as err:
        load_benchmark("mmlu-pro-biology", data_dir=tmp_path)
    assert err.value.field == "data_dir"
    folder = tmp_path / "mmlu_pro_biology"
    folder.mkdir()
    row = {"question_id": 1, "question": "Q?", "options": ["x", "y"], "answer": "A", "answer_index": 0}
    (folder / "test.jsonl").write_text(json.dumps(row) + "\n" + json.dumps(row) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"test.jsonl line 2: id: duplicate id '1'"):
        load_benchmark("mmlu-pro-biology", data_dir=tmp_path)
    (folder / "test.jsonl").write_text(json.dumps({**row, "answer_index": 1}) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="does not match answer_index 1"):
        load_benchmark("mmlu-pro-biology", data_dir=tmp_path)


GOOD = [
    {"id": "q1", "question": " What is it? ", "options": {"A": "one", "B": " two "}, "answer": "B"},
    {"id": 7, "question": "Which?", "options": ["x", "y", "z"], "answer": "C", "context": "Read me."},
]


def _write(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "questions.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_jsonl_good_file(tmp_path: Path) -> None:
    path = _write(tmp_path, [json.dumps(GOOD[0]), "", json.dumps(GOOD[1])])
    items = load_jsonl_items(path, benchmark="mine")
    assert [item.item_id for item in items] == ["q1", "7"]
    assert items[0].question == "What is it?" and items[0].options == (("A", "one"), ("B", "two"))
    assert items[0].answer_index == 1 and items[0].benchmark == "mine" and items[0].context == ""
    assert items[1].letters == ("A", "B", "C") and items[1].option_text("C") == "z"
    assert items[1].context == "Read me."


def test_jsonl_accepts_byte_order_mark(tmp_path: Path) -> None:
    path = tmp_path / "bom.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(GOOD[0]).encode("utf-8"))
    assert load_jsonl_items(path)[0].benchmark == "custom"


def _row(**changes: object) -> str:
    row: dict[str, object] = {"id": "q9", "question": "Q?", "options": {"A": "a", "B": "b", "C": "c", "D": "d"},
                              "answer": "A"}
    row.update(changes)
    return json.dumps({k: v for k, v in row.items() if v is not ...})


OK = json.dumps(GOOD[0])

BAD = [
    ([OK, "{not json"], "line 2: not valid JSON: "),
    ([OK, "[1, 2]"], "line 2: expected a JSON object, got a list"),
    ([OK, '"text"'], "line 2: expected a JSON object, got a string"),
    ([_row(question=5)], "line 1: question: must be a string, got a number"),
    ([_row(question=...)], "line 1: question: missing"),
    ([OK, _row(question="   ")], "line 2: question: is empty"),
    ([OK, OK.replace("q1", "q2"), _row(options={"A": "only"})],
     "line 3: options: need at least two options, got 1"),
    ([_row(options={})], "line 1: options: need at least two options, got 0"),
    ([_row(options={"A": "a", "C": "c"})], "line 1: options: keys must be single capital letters in order from A"),
    ([_row(options={"a": "x", "b": "y"}, answer="a")], "line 1: options: keys must be single capital letters"),
    ([_row(options={"B": "x", "A": "y"})], "line 1: options: keys must be single capital letters"),
    ([_row(options={"AA": "x", "AB": "y"})], "line 1: options: keys must be single capital letters"),
    ([_row(options={"A": "x", "B": " "})], "line 1: options: option B is empty"),
    ([_row(options={"A": "x", "B": 3})], "line 1: options: option B must be a string, got a number"),
    ([_row(options="A) x B) y")], "line 1: options: must be an object of letter -> text, got a string"),
    ([_row(options=...)], "line 1: options: missing"),
    ([OK, "", _row(answer="E")], "line 3: answer: 'E' is not among the options A-D"),
    ([_row(answer=0)], "line 1: answer: must be an option letter, got a number"),
    ([_row(answer=...)], "line 1: answer: missing"),
    ([OK, _row(id="q1")], "line 2: id: duplicate id 'q1' (first at line 1)"),
    ([_row(id=...)], "line 1: id: missing"),
    ([_row(id=True)], "line 1: id: must be a string or a whole number, got true/false"),
    ([_row(id="")], "line 1: id: is empty"),
    ([_row(context=["a"])], "line 1: context: must be a string, got a list"),
    ([], "the file has no questions"),
    (["", "   "], "the file has no questions"),
]


@pytest.mark.parametrize(("lines", "expected"), BAD, ids=[expected[:40] for _, expected in BAD])
def test_jsonl_rejects_bad_input(tmp_path: Path, lines: list[str], expected: str) -> None:
    path = _write(tmp_path, lines)
    with pytest.raises(InputError) as err:
        load_jsonl_items(path)
    assert err.value.field == "path"
    assert str(err.value).startswith(f"path: {path}, " + expected), str(err.value)


def test_jsonl_missing_file_and_bad_bytes(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="file not found"):
        load_jsonl_items(tmp_path / "nope.jsonl")
    path = tmp_path / "latin1.jsonl"
    path.write_bytes(json.dumps(GOOD[0]).replace("one", "caf\u00e9", 1).encode("latin-1"))
    with pytest.raises(InputError, match="not UTF-8"):
        load_jsonl_items(path)
    with pytest.raises(InputError) as err:
        parse_jsonl_items(OK, benchmark="  ")
    assert err.value.field == "benchmark"


def test_question_item_checks_and_option_text() -> None:
    item = QuestionItem("x", "Q?", (("A", "a"), ("B", "b")), "B", "custom", meta=(("src", "s"),))
    assert item.meta_value("src") == "s" and item.meta_value("other", "-") == "-"
    with pytest.raises(InputError, match="'C' is not among the options A-B"):
        item.option_text("C")
    with pytest.raises(InputError) as err:
        QuestionItem("x", "Q?", (("A", "a"), ("B", "b")), "C", "custom")
    assert err.value.field == "answer"
    with pytest.raises(InputError) as err:
        QuestionItem("x", "Q?", (("B", "a"), ("C", "b")), "B", "custom")
    assert err.value.field == "options"


def test_sample_items_reproducible_and_ordered() -> None:
    items = bench("mmlu-medical")
    first = sample_items(items, 50, np.random.default_rng(3))
    again = sample_items(items, 50, np.random.default_rng(3))
    other = sample_items(items, 50, np.random.default_rng(4))
    assert first == again
    assert [i.item_id for i in first] != [i.item_id for i in other]
    assert len({i.item_id for i in first}) == 50
    position = {item.item_id: k for k, item in enumerate(items)}
    order = [position[i.item_id] for i in first]
    assert order == sorted(order)


def test_sample_items_limits() -> None:
    items = bench("pubmedqa")[:5]
    assert sample_items(items, 9, np.random.default_rng(0)) == items
    assert len(sample_items(items, 1, np.random.default_rng(0))) == 1
    for bad in (0, -1, True, 2.0):
        with pytest.raises(InputError) as err:
            sample_items(items, bad, np.random.default_rng(0))  # type: ignore[arg-type]
        assert err.value.field == "n"
    with pytest.raises(InputError) as err:
        sample_items(items, 2, 0)  # type: ignore[arg-type]
    assert err.value.field == "rng"
