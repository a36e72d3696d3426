"""The question ``python -m sag ask`` is given: a JSONL file, one JSON item, or plain text.

A path is tried only when the argument could name a file (one line, no NUL, each part
at most 255 bytes): a long one-line question is read as text, and any error of the file
system while looking for the file means "not a file".

Plain text is the question followed by one option per line, each starting with its letter
(``A. ...``, ``B) ...`` or ``C: ...``).  Items typed in this way have no known answer: the
debate runs the same, and nothing is scored.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

from clinical.questions import QuestionItem, is_file, load_jsonl_items, parse_json_item
from common.errors import InputError

__all__ = ["AskedQuestion", "read_question"]

_OPTION = re.compile(r"^\s*([A-Z])\s*[.):]\s*(.+?)\s*$")
_NAME_MAX, _PATH_MAX = 255, 4096  # bytes of one part of a path, of a whole path (Linux, macOS)


class AskedQuestion:
    """The item to debate and whether its answer is known (to score it)."""

    def __init__(self, item: QuestionItem, answer_known: bool) -> None:
        self.item, self.answer_known = item, answer_known


def _from_text(text: str) -> QuestionItem:
    question, options = [], []
    for line in text.splitlines():
        match = _OPTION.match(line)
        if match and (options or question):
            options.append((match.group(1), match.group(2)))
        elif options and line.strip():
            raise InputError("question", f"text after the options: {line.strip()[:60]!r}; put the question first "
                                         "and one option per line after it")
        elif line.strip():
            question.append(line.strip())
    letters = [letter for letter, _ in options]
    if not question or len(options) < 2:
        raise InputError("question", "give the question, then at least two options on their own lines, "
                                     "e.g. 'A. ...' and 'B. ...'")
    if letters != [chr(ord("A") + i) for i in range(len(letters))]:
        raise InputError("question", f"options must be lettered A, B, C, ... in order, got {', '.join(letters)}")
    return QuestionItem("asked", " ".join(question), tuple(options), "A", "asked")


def _as_path(text: str) -> Path | None:
    """``text`` as a path if it could name a file, else None."""
    if not text or "\n" in text or "\r" in text or "\0" in text:
        return None
    try:
        raw = os.fsencode(text)
    except UnicodeEncodeError:  # a lone surrogate no file name can hold
        return None
    if len(raw) >= _PATH_MAX or any(len(part) > _NAME_MAX for part in raw.split(b"/")):
        return None
    return Path(text)


def read_question(source: str, *, item_id: str | None = None) -> AskedQuestion:
    """A JSONL file (its first item, or ``item_id``), a JSON object, or plain text."""
    stripped = source.strip()
    path = _as_path(stripped)
    if path is not None and (path.suffix.lower() in (".jsonl", ".json") or is_file(path)):
        items = load_jsonl_items(path)
        return AskedQuestion(_pick(items, item_id, str(path)), True)
    if stripped.startswith("{"):
        return AskedQuestion(parse_json_item(stripped, benchmark="asked"), True)
    return AskedQuestion(_from_text(source), False)


def _pick(items: tuple[QuestionItem, ...], item_id: str | None, where: str) -> QuestionItem:
    if not items:
        raise InputError("question", f"{where} holds no question")
    if item_id is None:
        return items[0]
    for item in items:
        if item.item_id == item_id:
            return item
    raise InputError("item", f"no item {item_id!r} in {where}")
