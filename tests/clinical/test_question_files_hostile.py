"""Hostile question files: every one refused with the file, the line and the problem, never a traceback.

Deep nesting, integers of thousands of digits, lone surrogate escapes, Latin-1 bytes, a key
given twice, long or control-character ids, unreadable paths.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from clinical.questions import QuestionItem, is_file, load_jsonl_items, parse_json_item, parse_jsonl_items
from common.errors import InputError

OK = json.dumps({"id": "q1", "question": "What is it?", "options": {"A": "one", "B": "two"}, "answer": "B"})


def _line(**changes: object) -> str:
    row: dict[str, object] = {"id": "q2", "question": "Q?", "options": ["a", "b"], "answer": "A"}
    row.update(changes)
    return json.dumps(row)


def _refused(tmp_path: Path, second_line: str, *needles: str) -> str:
    path = tmp_path / "items.jsonl"
    path.write_bytes((OK + "\n" + second_line + "\n").encode("utf-8", "surrogatepass"))
    with pytest.raises(InputError) as err:
        load_jsonl_items(path)
    message = str(err.value)
    assert err.value.field == "path" and f"{path}, line 2: " in message, message
    for needle in needles:
        assert needle in message, message
    return message


def test_nesting_a_thousand_deep_is_refused_not_a_recursion_error(tmp_path: Path) -> None:
    _refused(tmp_path, _line(context="x").replace('"x"', "[" * 1000 + "]" * 1000), "nested too deeply")
    _refused(tmp_path, '{"id": "q2", "extra": ' + "[" * 100 + "]" * 100 + "}", "nested too deeply")


def test_an_id_of_five_thousand_digits_is_refused_not_a_value_error(tmp_path: Path) -> None:
    _refused(tmp_path, _line(id=0).replace('"id": 0', '"id": ' + "7" * 5000), "too large")
    _refused(tmp_path, _line(id=10**18), "id: a whole-number id has at most 18 digits")
    assert load_jsonl_items(_write(tmp_path, [OK, _line(id=10**18 - 1)]))[1].item_id == "999999999999999999"


def _write(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "good.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_ids_are_short_printable_text(tmp_path: Path) -> None:
    _refused(tmp_path, _line(id="x" * 201), "id: is 201 characters long; at most 200")
    _refused(tmp_path, _line(id="a\u001b[2Jb"), "id: holds the control character '\\x1b'")
    _refused(tmp_path, _line(id="a\u202eb"), "control character '\\u202e'")
    assert load_jsonl_items(_write(tmp_path, [OK, _line(id=" x" * 100)]))[1].item_id == ("x " * 100).strip()


@pytest.mark.parametrize("field", ["question", "options", "answer", "context", "id", "ignored"])
def test_a_lone_surrogate_is_refused_with_its_line(tmp_path: Path, field: str) -> None:
    value: object = ["a\ud800", "b"] if field == "options" else "Q\udfff?"
    line = _line(**{field: value})  # json.dumps writes the escape, as a hostile file would
    assert "\\ud800" in line or "\\udfff" in line
    _refused(tmp_path, line, "lone surrogate")


def test_a_raw_surrogate_byte_sequence_is_not_utf8(tmp_path: Path) -> None:
    message = _refused(tmp_path, _line(question="Q\ud800?").replace("\\ud800", "\ud800"), "not UTF-8")
    assert "byte 0xed" in message


def test_latin1_bytes_name_the_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "latin1.jsonl"
    path.write_bytes((OK + "\n").encode() + _line(question="caf\u00e9?").replace("\\u00e9", "\u00e9").encode("latin-1"))
    with pytest.raises(InputError) as err:
        load_jsonl_items(path)
    assert f"{path}, line 2: not UTF-8 text (byte 0xe9 at column 30)" in str(err.value)


def test_a_key_given_twice_is_refused_not_silently_the_last(tmp_path: Path) -> None:
    _refused(tmp_path, _line()[:-1] + ', "answer": "B"}', "key 'answer' is given twice")
    _refused(tmp_path, _line(options={"A": "x", "B": "y"}).replace('"B": "y"', '"B": "y", "A": "z"'),
             "key 'A' is given twice")


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_non_finite_numbers_are_refused_even_where_ignored(tmp_path: Path, token: str) -> None:
    _refused(tmp_path, _line()[:-1] + f', "weight": {token}}}', token)


def test_unreadable_paths_are_clean_errors(tmp_path: Path) -> None:
    for path in (tmp_path / ("x" * 300 + ".jsonl"), tmp_path / "a\0b.jsonl", tmp_path):
        assert not is_file(path)
        with pytest.raises(InputError, match="file not found"):
            load_jsonl_items(path)


def test_the_stored_text_is_kept_as_given() -> None:
    item = parse_jsonl_items(_line(question=" \u001b[2JWhat?\ttab ", options=["x\u0007", "y"]))[0]
    assert item.question == "\u001b[2JWhat?\ttab" and item.options[0] == ("A", "x\u0007")


def test_one_json_item_may_span_lines_and_names_the_line_of_an_error() -> None:
    item = parse_json_item('{"id": "q",\n "question": "Q?",\n "options": ["a", "b"], "answer": "B"}')
    assert item.item_id == "q" and item.answer == "B" and item.benchmark == "asked"
    with pytest.raises(InputError, match=r"question: JSON item: not valid JSON: .* \(line 2, column 2\)"):
        parse_json_item('{"id": "q",\n ]')
    with pytest.raises(InputError, match="question: JSON item: is nested too deeply"):
        parse_json_item('{"id": ' + "[" * 5000 + "]" * 5000 + "}")


def test_question_item_refuses_unencodable_text_built_in_code() -> None:
    with pytest.raises(InputError) as err:
        QuestionItem("x", "Q\udcff?", (("A", "a"), ("B", "b")), "A", "custom")
    assert err.value.field == "question" and "lone surrogate" in str(err.value)
