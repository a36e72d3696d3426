"""A researcher's case file (JSONL or CSV) read into a dataset: labels, loss, views and
splits as the file and the options give them, and every malformed file refused with one
message naming the line."""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import clinical.case_file as case_file
from clinical.case_file import CaseFileOptions, parse_case_file, read_case_file
from clinical.datasets import load_dataset, use_dataset
from common.errors import InputError
from common.loss import three_level_loss

EXAMPLE = Path(__file__).resolve().parents[2] / "data" / "examples" / "abdominal_pain_cases.jsonl"
HIGH = ("Appendicitis", "Ectopic_pregnancy")


def _jsonl(rows: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


def _rows(n: int = 6, **extra: Any) -> list[dict[str, Any]]:
    return [{"id": f"c{i}", "text": f"case {i} text", "label": "Flu" if i % 2 else "Cold", **extra} for i in range(n)]


def _csv(rows: list[dict[str, Any]]) -> bytes:
    out = io.StringIO()
    columns = sorted({k for r in rows for k in r})
    writer = csv.DictWriter(out, columns)
    writer.writeheader()
    for r in rows:
        writer.writerow({k: json.dumps(v) if isinstance(v, dict) else v for k, v in r.items()})
    return out.getvalue().encode()


def _refused(data: bytes, name: str = "cases.jsonl", options: CaseFileOptions = CaseFileOptions()) -> str:
    with pytest.raises(InputError) as info:
        parse_case_file(data, name, options)
    return str(info.value)


def test_the_example_file_reads_as_five_classes_with_two_views_and_the_three_level_loss() -> None:
    ds = read_case_file(EXAMPLE, CaseFileOptions(high_risk=HIGH, l_high=5.0))
    assert ds.name == "file:abdominal_pain_cases.jsonl" and len(ds.cases) == 275
    assert ds.labels == ("Appendicitis", "Biliary_colic", "Ectopic_pregnancy", "Gastroenteritis", "Renal_colic")
    assert ds.high_risk == (0, 2) and ds.views == ("exam", "history")
    assert np.array_equal(ds.loss, three_level_loss(5, (0, 2), 5.0))
    assert [sum(c.label == k for c in ds.cases) for k in range(5)] == [50, 55, 30, 80, 60]
    assert all(c.view("history") and c.view("exam") and c.text.startswith(c.view("history")) for c in ds.cases)
    assert ds.default_sizes == (80, 160) and not ds.fixed_split and ds.train_ids == frozenset()
    assert len(ds.sha256) == 64


def test_csv_with_the_same_columns_reads_as_the_same_dataset() -> None:
    rows = [json.loads(line) for line in EXAMPLE.read_text(encoding="utf-8").splitlines()[:40]]
    a = parse_case_file(_jsonl(rows), "a.jsonl")
    b = parse_case_file(_csv(rows), "a.csv")
    assert a.labels == b.labels and a.cases == b.cases and a.views == b.views


def test_labels_order_and_a_class_that_must_occur() -> None:
    ds = parse_case_file(_jsonl(_rows()), "x.jsonl", CaseFileOptions(labels=("Flu", "Cold")))
    assert ds.labels == ("Flu", "Cold") and ds.cases[0].label == 1  # c0 is a Cold
    said = _refused(_jsonl(_rows()), options=CaseFileOptions(labels=("Flu", "Cold", "Croup")))
    assert "class 'Croup' has 0 cases; the drawn CAL/TEST split needs at least 2" in said


def test_the_split_the_file_gives_is_used_for_every_seed_in_its_own_order() -> None:
    rows = _rows(12)
    for i, r in enumerate(rows):
        r["split"] = ("cal", "test", "train")[i % 3] if i > 1 else "cal"
    rows[2]["split"], rows[3]["split"] = "test", "test"
    ds = parse_case_file(_jsonl(rows), "x.jsonl")
    cal, test, notes = ds.split(0)
    assert {c.source_id for c in cal} == {r["id"] for r in rows if r["split"] == "cal"}
    assert {c.source_id for c in test} == {r["id"] for r in rows if r["split"] == "test"}
    assert ds.train_ids == {r["id"] for r in rows if r["split"] == "train"} and ds.default_sizes == (len(cal), len(test))
    assert {c.source_id for c in ds.split(1)[0]} == {c.source_id for c in cal} and "the file's own" in notes[0]


def test_a_drawn_split_is_class_stratified_and_small_files_take_a_third_for_cal() -> None:
    ds = parse_case_file(_jsonl(_rows(30)), "x.jsonl")
    assert ds.default_sizes == (10, 20)
    cal, test, _ = ds.split(3)
    assert len(cal) == 10 and len(test) == 20 and {c.label for c in cal} == {0, 1}


def test_a_loss_file_gives_the_whole_matrix_in_the_labels_order(tmp_path: Path) -> None:
    path = tmp_path / "loss.json"
    path.write_text(json.dumps({"labels": ["Flu", "Cold"], "loss": [[0, 2], [7, 0]]}))
    ds = parse_case_file(_jsonl(_rows()), "x.jsonl", CaseFileOptions(loss_file=str(path), high_risk=("Flu",)))
    assert ds.labels == ("Cold", "Flu") and ds.loss.tolist() == [[0, 7], [2, 0]] and ds.high_risk == (1,)
    path.write_text(json.dumps([[0, 1], [3, 0]]))
    assert parse_case_file(_jsonl(_rows()), "x.jsonl", CaseFileOptions(loss_file=str(path))).loss.tolist() == [[0, 1], [3, 0]]


@pytest.mark.parametrize("content, words", [
    ({"labels": ["Flu", "Cold"], "loss": [[0, 1, 1], [1, 0, 1], [1, 1, 0]]}, "expected a 2 x 2 matrix"),
    ({"labels": ["Flu", "Croup"], "loss": [[0, 1], [1, 0]]}, "labels must list the case file's classes (Cold, Flu)"),
    ([[0, -1], [1, 0]], "entry [0][1] is -1; losses must be from 0 to 1000"),
    ([[1, 1], [1, 0]], "a right answer must cost 0"),
    ([[0, 1e6], [1, 0]], "entry [0][1] is 1e+06; losses must be from 0 to 1000"),
    ([[0, "a"], [1, 0]], "loss must be a list of rows of numbers"),
    ("not a matrix", "loss must be a list of rows of numbers"),
    ([[0, 1], [1]], "rows differ in length"),
    ({"labels": ["Flu", "Cold"], "loss": [[0, 1], [1, 0, 2]]}, "rows differ in length"),
])
def test_a_bad_loss_file_is_refused(tmp_path: Path, content: Any, words: str) -> None:
    path = tmp_path / "loss.json"
    path.write_text(json.dumps(content))
    assert words in _refused(_jsonl(_rows()), options=CaseFileOptions(loss_file=str(path)))


def _with(i: int, **change: Any) -> bytes:
    rows = _rows()
    rows[i] = {k: v for k, v in {**rows[i], **change}.items() if v is not ...}
    return _jsonl(rows)


@pytest.mark.parametrize("data, words", [
    (b'{"id": "a", "text": "t", "label": "x"}\n{"id": "b", "text": "caf\xe9", "label": "y"}\n',
     "is not UTF-8: line 2, byte 25 (0xe9)"),
    (_jsonl(_rows())[:-20] + b"\n", "line 6 is not JSON"),
    (b'["c1", "text", "Flu"]\n', "line 1 is a JSON list, not an object"),
    (_with(2, id=...), "line 3: id is missing"),
    (_with(1, text="  "), "line 2: text is empty"),
    (_with(4, label=None), "line 5: label is missing"),
    (_with(0, label=["Flu"]), "line 1: label is a list"),
    (_with(3, id="c1"), "line 4: id 'c1' is already on line 2"),
    (_jsonl([{**r, "label": "Flu"} for r in _rows()]), "a single class (Flu)"),
    (_jsonl(_rows(3)), "class 'Flu' has 1 case; the drawn CAL/TEST split needs at least 2"),
    (_with(0, split="validation"), "line 1: split must be one of cal, test, train"),
    (_with(0, split="cal"), "split is given on 1 cases and missing on 5 (line 2 first)"),
    (_with(0, views=["history"]), "line 1: views must be an object"),
    (_with(0, views={"all": "x"}), "view name 'all' must be"),
    (_with(0, views={"history": ""}), "view 'history' has no text"),
    (b"", "holds no case"),
    (b"\n\n", "holds no case"),
])
def test_malformed_files_are_refused_naming_the_line(data: bytes, words: str) -> None:
    assert words in _refused(data)


@pytest.mark.parametrize("data, words", [
    (b"id,text,label,colour\n", "line 1: unknown column 'colour'"),
    (b"id,text,label\nc1,t,Flu\nc2,t\n", "line 3 has 2 fields, the header 3"),
    (b'id,text,label,views\nc1,t,Flu,{nope\n', "line 2: views is not a JSON object"),
    (b'id,text,label\nc1,"t,Flu\n', "line 2 has 2 fields, the header 3"),  # an unclosed quote swallows the rest
])
def test_malformed_csv_is_refused_naming_the_line(data: bytes, words: str) -> None:
    assert words in _refused(data, "cases.csv")


def test_options_out_of_the_file_are_refused() -> None:
    assert "label 'Flu' is not in --labels (Cold, Croup)" in _refused(
        _jsonl(_rows()), options=CaseFileOptions(labels=("Cold", "Croup")))
    assert "'Sepsis' is not a class of cases.jsonl (Cold, Flu)" in _refused(
        _jsonl(_rows()), options=CaseFileOptions(high_risk=("Sepsis",)))
    with pytest.raises(InputError, match="Flu listed twice"):
        CaseFileOptions(labels=("Flu", "Cold", "Flu"))
    with pytest.raises(InputError, match="l_high: must be a number from 0 to 1000"):
        CaseFileOptions(l_high=float("inf"))


def test_the_size_caps_are_stated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(case_file, "MAX_CASES", 4)
    assert "more than 4 cases (the limit)" in _refused(_jsonl(_rows()))
    monkeypatch.setattr(case_file, "MAX_TEXT", 5)
    assert "line 1: text has 11 characters, over the 5 limit" in _refused(_jsonl(_rows(4)))
    monkeypatch.setattr(case_file, "MAX_BYTES", 10)
    assert "bytes, over the 10 limit" in _refused(_jsonl(_rows(4)))


def test_a_file_in_use_is_found_by_name_and_a_file_not_read_is_a_clear_error() -> None:
    ds = use_dataset(parse_case_file(_jsonl(_rows()), "mine.jsonl"))
    assert load_dataset("file:mine.jsonl") is ds
    with pytest.raises(InputError, match="the case file other.jsonl is not loaded"):
        load_dataset("file:other.jsonl")
