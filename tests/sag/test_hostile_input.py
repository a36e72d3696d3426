"""Hostile input to ``python -m sag ask | run``: long one-line questions, hostile group files,
terminal escapes in item and model text.  Run in-process with scripted models."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from sag.store.tables import SagStore

from .cli_fakes import one_error_line, run_cli, scripted_models
from .fakes import Policy

LONG = "Which drug is first line for this patient " + "with a long history " * 15 + "?"  # 300+ chars, no slash
ITEM = {"id": "q1", "question": "Burning chest pain?", "options": {"A": "Reflux", "B": "Embolism"}, "answer": "A"}


def test_a_long_one_line_question_is_read_as_text_not_a_file_name(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    scripted_models(monkeypatch)
    assert len(LONG) > 255 and "/" not in LONG
    message = one_error_line(*run_cli(["ask", LONG, "--group", "single", "--db", str(tmp_path / "s.duckdb")]))
    assert "at least two options" in message  # read as text: a one-line question has no options
    code, out, err = run_cli(["ask", LONG + "\nA. x\nB. y", "--group", "single", "--db", str(tmp_path / "s.duckdb")])
    assert code == 0 and err == "" and f"Question: {LONG}" in out


@pytest.mark.parametrize("argument", [LONG + ".jsonl", "x" * 300, "a\0b.jsonl"])
def test_a_long_benchmark_name_is_a_clean_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               argument: str) -> None:
    scripted_models(monkeypatch)
    message = one_error_line(*run_cli(["run", "--benchmark", argument, "--group", "single", "-q",
                                       "--db", str(tmp_path / "s.duckdb")]))
    assert "unknown benchmark" in message or "file not found" in message
    with SagStore(tmp_path / "s.duckdb") as store:
        assert store.runs().empty


def test_a_usage_error_quoting_control_characters_is_one_escaped_line(tmp_path: Path) -> None:
    message = one_error_line(*run_cli(["ask", "Q?\nA. x\nB. y", "-x\u001b[2J\ny"]))
    assert message == "python -m sag: error: unrecognized arguments: -x\\x1b[2J\\ny\n"


def _group(tmp_path: Path, text: str | bytes) -> str:
    path = tmp_path / "group.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return str(path)


GOOD_GROUP = {"name": "mine", "method": "single", "counts": [1, 0, 0, 0], "t_max": 1}


@pytest.mark.parametrize("text, needle", [
    ('{"name": "caf\xe9", "method": "single"}'.encode("latin-1"), "line 1: not UTF-8 text (byte 0xe9 at column 14)"),
    (json.dumps({**GOOD_GROUP, "method": "dcem", "loss": [[0, "x"], [1, 0]]}), "loss: row 1, column 2: 'x' is not"),
    (json.dumps({**GOOD_GROUP, "method": "dcem", "loss": [[0, "1"], [1, 0]]}), "'1' is not a number"),
    (json.dumps({**GOOD_GROUP, "method": "dcem", "loss": [[0, True], [1, 0]]}), "True is not a number"),
    (json.dumps({**GOOD_GROUP, "method": "dcem", "loss": "ab"}), "loss: must be a list"),
    (json.dumps({**GOOD_GROUP, "method": "dcem", "loss": [[0, 1], [1]]}), "must be a square matrix"),
    (json.dumps({**GOOD_GROUP, "loss": [[0, 1], [1, 0]]}).replace("1]", "NaN]", 1), "NaN is not a number"),
    (json.dumps({**GOOD_GROUP, "loss": [[0, 1], [1, 0]]}).replace("1]", "Infinity]", 1), "Infinity is not"),
    (json.dumps({**GOOD_GROUP, "loss": [[0, 1], [1, 0]]}).replace("1]", "1e400]", 1), "1e400 is out of range"),
    (json.dumps({**GOOD_GROUP, "loss": [[0, 1], [1, 0]]}).replace("1]", "1e13]", 1), "from 0 to 1e+12"),
    (json.dumps({**GOOD_GROUP, "loss": [[0, 1], [1, 0]]}).replace("1]", "-1]", 1), "from 0 to 1e+12"),
    (json.dumps({**GOOD_GROUP, "t_max": 7}).replace("7", "7" * 5000), "too large"),
    (json.dumps({**GOOD_GROUP, "t_max": 1e400}).replace("Infinity", "1e400"), "out of range"),
    (json.dumps({**GOOD_GROUP, "temperature": 0}).replace(": 0}", ": NaN}"), "NaN is not a number"),
    (json.dumps({**GOOD_GROUP, "refuse_threshold": 0.5}).replace("0.5", "Infinity"), "Infinity is not"),
    ('{"name": ' + "[" * 1000 + "]" * 1000 + "}", "nested too deeply"),
    (json.dumps({**GOOD_GROUP, "backbones": "abcd"}), "backbones: must be a list"),
    (json.dumps({**GOOD_GROUP, "counts": {"a": 1, "b": 0, "c": 0, "d": 0}}), "counts: must be a list"),
    (json.dumps({**GOOD_GROUP, "name": "a\u001b[2J"}), "name: must be printable text"),
    (json.dumps({**GOOD_GROUP, "name": "a\ud800"}), "lone surrogate"),
    (json.dumps(GOOD_GROUP)[:-1] + ', "t_max": 2}', "key 't_max' is given twice"),
])
def test_hostile_group_files_are_refused_in_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     text: str | bytes, needle: str) -> None:
    runner = scripted_models(monkeypatch)
    group = _group(tmp_path, text)
    message = one_error_line(*run_cli(["ask", json.dumps(ITEM), "--group", group,
                                       "--db", str(tmp_path / "s.duckdb")]))
    assert message.startswith(f"error: group: {group}"), message
    assert needle in message, message
    assert runner.requests == []


def test_a_good_group_file_still_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runner = scripted_models(monkeypatch)
    group = _group(tmp_path, json.dumps({**GOOD_GROUP, "loss": [[0, 2.5], [1, 0]]}))
    code, out, err = run_cli(["ask", json.dumps(ITEM), "--group", group, "--db", str(tmp_path / "s.duckdb")])
    assert code == 0 and err == "" and "Group answer: A" in out and len(runner.requests) == 1


HOSTILE = "\u001b[2J\u001b]0;owned\u0007\rX\u202eY\u0085\u2028\u007f"


def _says(text: str) -> Policy:
    def policy(agent: str, prompt: str, request: object) -> tuple[str, str]:
        return "A", text
    return policy


def test_ask_prints_item_and_model_text_with_control_characters_escaped(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    scripted_models(monkeypatch, _says("Because" + HOSTILE))
    item = {**ITEM, "question": "Q" + HOSTILE + "\nsecond\tline", "options": ["x" + HOSTILE, "y\nz"]}
    path = tmp_path / "items.jsonl"
    path.write_text(json.dumps(item) + "\n", encoding="utf-8")
    code, out, err = run_cli(["ask", str(path), "--group", "single", "--db", str(tmp_path / "s.duckdb")])
    assert code == 0 and err == ""
    escaped = "\\x1b[2J\\x1b]0;owned\\x07\\rX\\u202eY\\x85\\u2028\\x7f"
    assert f"Question: Q{escaped}\nsecond\tline\n" in out  # a question keeps its line breaks and tabs
    assert f"  A. x{escaped}\n  B. y\\nz\n" in out  # an option is one line
    assert "rationale: Because\\x1b[2J\\x1b]0;owned\\x07 X\\u202eY \\x7f\n" in out  # white space collapsed
    raw = {c for c in HOSTILE if not c.isprintable()}
    assert not raw & set(out), sorted(raw & set(out))


def test_run_stores_item_text_unchanged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    scripted_models(monkeypatch, _says("Because" + HOSTILE))
    item = {**ITEM, "question": "Q" + HOSTILE}
    path = tmp_path / "items.jsonl"
    path.write_text(json.dumps(item) + "\n", encoding="utf-8")
    code, out, err = run_cli(["run", "--benchmark", str(path), "--group", "single", "--items", "1", "-q",
                              "--db", str(tmp_path / "s.duckdb")])
    assert code == 0, err
    with SagStore(tmp_path / "s.duckdb") as store:
        run_id = store.runs()["run_id"].iloc[0]
        assert store.items(run_id)["question"].tolist() == ["Q" + HOSTILE]
        assert store.messages(run_id, "q1")["rationale"].tolist() == ["Because" + HOSTILE]
