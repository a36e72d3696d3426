"""Reading the project's shipped data files, with errors that name the file.

Every problem raises :class:`~common.errors.InputError` on the field ``data_dir`` (the
folder the file was looked up in), with the file's path relative to it.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from common.errors import InputError
from common.fields import Instance, Rule, check, fixed

__all__ = ["FIELD", "data_file", "read_json", "read_jsonl", "expect"]

FIELD = "data_dir"


def expect(what: str, value: Any, *rules: Rule, field: str = FIELD) -> Any:
    """``value`` if it passes ``rules`` (:mod:`common.fields`), else InputError(``field``, ``what``)."""
    return check(field, value, *rules, msg=fixed(what), error=InputError)


def data_file(data_dir: Path, relative: str) -> Path:
    """``data_dir / relative``; InputError when it is not a file."""
    path = data_dir / relative
    if not path.is_file():
        raise InputError(FIELD, f"{relative} not found in {data_dir}")
    return path


def read_json(data_dir: Path, relative: str) -> object:
    """The parsed JSON of a shipped file; InputError naming the file and line when invalid."""
    try:
        return json.loads(data_file(data_dir, relative).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(FIELD, f"{relative}: not valid JSON: {exc.msg} (line {exc.lineno})") from None


def read_jsonl(data_dir: Path, relative: str) -> list[tuple[str, dict[str, object], int]]:
    """``(where, row, line number)`` for every non-blank line of a shipped JSONL file, ``where`` naming
    the file and line; InputError for a line that is not a JSON object."""
    rows: list[tuple[str, dict[str, object], int]] = []
    text = data_file(data_dir, relative).read_text(encoding="utf-8")
    for line_no, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        where = f"{relative} line {line_no}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(FIELD, f"{where}: not valid JSON: {exc.msg}") from None
        expect(f"{where}: expected a JSON object", row, Instance(dict))
        rows.append((where, row, line_no))
    return rows
