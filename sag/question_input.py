"""The question ``python -m sag ask`` is given: a JSONL file, one JSON item, or plain text.

Plain text is the question followed by one option per line, each starting with its letter
(``A. ...``, ``B) ...`` or ``C: ...``).  Items typed in this way have no known answer: the
debate runs the same, and nothing is scored.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from clinical.questions import QuestionItem, load_jsonl_items, parse_jsonl_items
from common.errors import InputError

__all__ = ["AskedQuestion", "read_question"]

_OPTION = re.compile(r"^\s*([A-Z])\s*[.):]\s*(.+?)\s*$")


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


def read_question(source: str, *, item_id: str | None = None) -> AskedQuestion:
    """A JSONL file (its first item, or ``item_id``), a JSON object, or plain text."""
    stripped = source.strip()
    path = Path(stripped) if len(stripped) < 4096 and "\n" not in stripped else None
    if path is not None and path.suffix.lower() in (".jsonl", ".json") or (path is not None and path.is_file()):
        items = load_jsonl_items(path)  # type: ignore[arg-type]
        return AskedQuestion(_pick(items, item_id, str(path)), True)
    if stripped.startswith("{"):
        try:
            json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise InputError("question", f"not valid JSON: {exc.msg} at column {exc.colno}") from None
        return AskedQuestion(parse_jsonl_items(stripped, benchmark="asked")[0], True)
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
