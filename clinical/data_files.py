"""Reading the project's shipped data files, with errors that name the file.

Every problem raises :class:`~common.errors.InputError` on the field ``data_dir`` (the
folder the file was looked up in), with the file's path relative to it.
"""
from __future__ import annotations

import json
from pathlib import Path

from common.errors import InputError

__all__ = ["FIELD", "data_file", "read_json"]

FIELD = "data_dir"


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
