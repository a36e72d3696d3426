"""Multiple-choice question benchmarks and user question files, as :class:`QuestionItem`.

``load_benchmark(name)`` reads one shipped benchmark (:data:`BENCHMARKS`) from the
project's ``data/`` folder (see :mod:`clinical.question_sources` for each file, id and
the rows left out: MedMCQA drops its 80 ``missing_resource`` questions, which need an
image); ``load_jsonl_items(path)`` reads a user's JSONL file, one question per line::

    {"id": "q1", "question": "...", "options": {"A": "...", "B": "..."}, "answer": "B"}

``id`` is a non-empty string of at most 200 printable characters (no control
characters) or a whole number of at most 18 digits (kept as its decimal text, ``7`` ->
``"7"``); ``options`` is an object whose keys are
single capital letters in order from A (at least two, at most 26) with non-empty texts,
or a list of texts that get the letters A, B, ... in order; ``answer`` is one of the
letters; an optional ``context`` string is kept (other keys are ignored).  Blank lines
are skipped.  The file must be UTF-8 and each line strict JSON (:mod:`common.strict_json`:
finite numbers only, nesting at most 64 levels deep, no key given twice in one object,
no lone surrogate escape such as ``"\\ud800"``: every text must be writable as UTF-8).
Any problem raises :class:`~common.errors.InputError` on field ``path`` whose message
names the file, the line number and the field, e.g.
``questions.jsonl, line 3: answer: 'E' is not among the options A-D``; nothing partial is
returned.  Question, option and answer texts are stripped of surrounding whitespace;
anything else in them (line breaks, control characters) is kept as it is.
``parse_json_item(text)`` reads one such item given as a JSON object (on any number of
lines), with errors on field ``question``.

``sample_items(items, n, rng)`` draws ``n`` items without replacement and returns them
in their original order, so a seed gives the same subset and the same order.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from clinical.question_sources import READERS, SourceRow, read_pubmedqa_train
from common import strict_json
from common.errors import InputError
from common.fields import Instance, Text, Whole, check

__all__ = ["QuestionItem", "BENCHMARKS", "DEFAULT_DATA_DIR", "load_benchmark", "load_pubmedqa_train", "load_jsonl_items",
           "parse_jsonl_items", "parse_json_item", "is_file", "sample_items"]

BENCHMARKS: tuple[str, ...] = tuple(READERS)
DEFAULT_DATA_DIR = Path(__file__).resolve().parents[1] / "data"
_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
_MAX_ID_CHARS = 200
_MAX_ID_NUMBER = 10**18  # whole-number ids have at most 18 digits


@dataclass(frozen=True)
class QuestionItem:
    """One multiple-choice question.

    ``options`` are ``(letter, text)`` pairs in letter order A, B, C, ...; ``answer`` is
    one of those letters; ``context`` is reading material shown with the question
    (PubMedQA's abstract, empty elsewhere); ``meta`` holds ``(name, value)`` pairs such as
    the MMLU subject or the MMLU-Pro source.
    """

    item_id: str
    question: str
    options: tuple[tuple[str, str], ...]
    answer: str
    benchmark: str
    context: str = ""
    meta: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        letters = tuple(letter for letter, _ in self.options)
        if len(letters) < 2 or letters != tuple(_LETTERS[: len(letters)]):
            raise InputError("options", f"item {self.item_id!r}: need two or more options lettered "
                                        "A, B, C, ... in order")
        if self.answer not in letters:
            raise InputError("answer", f"item {self.item_id!r}: {self.answer!r} is not among the "
                                       f"options {_span(letters)}")
        texts = (("id", self.item_id), ("question", self.question), ("context", self.context),
                 ("benchmark", self.benchmark), *((f"option {k}", t) for k, t in self.options),
                 *((f"meta {k}", v) for k, v in self.meta))
        for name, text in texts:
            _check_encodable(name, text)

    @property
    def letters(self) -> tuple[str, ...]:
        """The option letters, ``("A", "B", ...)``."""
        return tuple(letter for letter, _ in self.options)

    @property
    def answer_index(self) -> int:
        """0-based position of the correct option."""
        return self.letters.index(self.answer)

    def option_text(self, letter: str) -> str:
        """Text of option ``letter``."""
        for key, text in self.options:
            if key == letter:
                return text
        raise InputError("letter", f"{letter!r} is not among the options {_span(self.letters)} "
                                   f"of item {self.item_id!r}")

    def meta_value(self, name: str, default: str = "") -> str:
        """The ``meta`` value called ``name`` (``default`` if absent)."""
        return dict(self.meta).get(name, default)


def _span(letters: Sequence[str]) -> str:
    return f"{letters[0]}-{letters[-1]}" if letters else "(none)"


def _check_encodable(name: str, text: object) -> None:
    """Refuse text that cannot be written as UTF-8 (a lone surrogate: from a ``\\ud800``
    escape or undecodable bytes of a command-line argument)."""
    try:
        str(text).encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = ascii(str(text)[exc.start])
        raise InputError(name, f"holds {bad}, a lone surrogate that is not a character; give UTF-8 text") from None


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return "a string"


class _RowError(Exception):
    """A problem with one field of one row; turned into an InputError by the caller."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")


_STRING = Instance(str, msg=lambda v: f"must be a string, got {_json_type(v)}")


def _item_id(value: object) -> str:
    if isinstance(value, int) and not isinstance(value, bool):
        if not -_MAX_ID_NUMBER < value < _MAX_ID_NUMBER:
            raise _RowError("id", f"a whole-number id has at most 18 digits, got {len(str(abs(value)))}; "
                                  "give a longer id as a string")
        return str(value)
    if value is None:
        raise _RowError("id", "missing")
    check("id", value, Instance(str, msg=lambda v: f"must be a string or a whole number, got {_json_type(v)}"),
          error=_RowError)
    if not value.strip():
        raise _RowError("id", "is empty")
    text = value.strip()
    if len(text) > _MAX_ID_CHARS:
        raise _RowError("id", f"is {len(text)} characters long; at most {_MAX_ID_CHARS}")
    if not text.isprintable():
        bad = next(c for c in text if not c.isprintable())
        raise _RowError("id", f"holds the control character {ascii(bad)}; give printable text")
    return text


def _text(field: str, value: object, *, allow_empty: bool = False) -> str:
    if value is None and not allow_empty:
        raise _RowError(field, "missing")
    check(field, value, _STRING, error=_RowError)
    if not value.strip() and not allow_empty:
        raise _RowError(field, "is empty")
    return value.strip()


def _options(value: object) -> tuple[tuple[str, str], ...]:
    if isinstance(value, list):
        pairs = list(zip(_LETTERS, value)) if len(value) <= len(_LETTERS) else []
    elif isinstance(value, dict):
        pairs = list(value.items())
        keys = [key for key, _ in pairs]
        if keys != list(_LETTERS[: len(keys)]):
            shown = ", ".join(repr(k) for k in keys)
            raise _RowError("options", f"keys must be single capital letters in order from A, got {shown}")
    elif value is None:
        raise _RowError("options", "missing")
    else:
        raise _RowError("options", f"must be an object of letter -> text, got {_json_type(value)}")
    if len(value) > len(_LETTERS):
        raise _RowError("options", f"at most {len(_LETTERS)} options, got {len(value)}")
    if len(pairs) < 2:
        raise _RowError("options", f"need at least two options, got {len(pairs)}")
    out: list[tuple[str, str]] = []
    for letter, text in pairs:
        check(f"option {letter}", text, _STRING, error=lambda f, m: _RowError("options", f"{f} {m}"))
        if not text.strip():
            raise _RowError("options", f"option {letter} is empty")
        out.append((letter, text.strip()))
    return tuple(out)


def _answer(value: object, letters: Sequence[str]) -> str:
    if value is None:
        raise _RowError("answer", "missing")
    check("answer", value, Instance(str, msg=lambda v: f"must be an option letter, got {_json_type(v)}"),
          error=_RowError)
    if value.strip() not in letters:
        raise _RowError("answer", f"{value.strip()!r} is not among the options {_span(letters)}")
    return value.strip()


def _build(rows: Sequence[SourceRow], benchmark: str, error_field: str, prefix: str = ""
           ) -> tuple[QuestionItem, ...]:
    """Validate every row and build the items; ids must be unique."""
    items: list[QuestionItem] = []
    first_seen: dict[str, str] = {}
    for row in rows:
        try:
            item_id = _item_id(row.item_id)
            question = _text("question", row.question)
            options = _options(row.options)
            answer = _answer(row.answer, [letter for letter, _ in options])
            context = _text("context", row.context, allow_empty=True)
            if item_id in first_seen:
                raise _RowError("id", f"duplicate id {item_id!r} (first at {first_seen[item_id]})")
            first_seen[item_id] = row.where
            items.append(QuestionItem(item_id, question, options, answer, benchmark, context, row.meta))
        except (_RowError, InputError) as exc:
            raise InputError(error_field, f"{prefix}{row.where}: {exc}") from None
    return tuple(items)


def load_benchmark(name: str, *, data_dir: Path | str | None = None) -> tuple[QuestionItem, ...]:
    """Every item of benchmark ``name`` (one of :data:`BENCHMARKS`), in file order.

    ``data_dir`` defaults to the project's ``data/`` folder.
    """
    if name not in READERS:
        raise InputError("benchmark", f"unknown benchmark {name!r} (known: {', '.join(BENCHMARKS)})")
    folder = DEFAULT_DATA_DIR if data_dir is None else Path(data_dir)
    return _build(READERS[name](folder), name, "data_dir")


def load_pubmedqa_train(*, data_dir: Path | str | None = None) -> tuple[QuestionItem, ...]:
    """The 500 PubMedQA PQA-L items outside the official test split (benchmark ``pubmedqa``,
    the same form as :func:`load_benchmark`'s), in file order; only training reads them."""
    folder = DEFAULT_DATA_DIR if data_dir is None else Path(data_dir)
    return _build(read_pubmedqa_train(folder), "pubmedqa", "data_dir")


def _check_benchmark_name(benchmark: object) -> str:
    return check("benchmark", benchmark, Text(msg="must be a non-empty name, e.g. 'custom'"), error=InputError).strip()


def _row(text: str, where: str, field: str, prefix: str) -> SourceRow:
    """One JSON object read strictly (:mod:`common.strict_json`) as a source row."""
    try:
        obj = strict_json.loads(text, where, strict_text=True)
    except strict_json.NotJson as exc:
        at = f"line {exc.lineno}, column {exc.colno}" if exc.lineno > 1 else f"column {exc.colno}"
        raise InputError(field, f"{prefix}{where}: not valid JSON: {exc.msg} ({at})") from None
    except InputError as exc:
        raise InputError(field, f"{prefix}{exc}") from None
    check(field, obj, Instance(dict, msg=lambda v: f"{prefix}{where}: expected a JSON object, got {_json_type(v)}"),
          error=InputError)
    return SourceRow(where, obj.get("id"), obj.get("question"), obj.get("options"), obj.get("answer"),
                     obj.get("context", ""))


def parse_jsonl_items(text: str, *, benchmark: str = "custom", source: str = "") -> tuple[QuestionItem, ...]:
    """The items of JSONL ``text`` (format in the module docstring); errors on field ``path``,
    their messages starting with ``source`` (the file's name) when given."""
    name = _check_benchmark_name(benchmark)
    prefix = f"{source}, " if source else ""
    rows = [_row(line, f"line {n}", "path", prefix) for n, line in enumerate(text.split("\n"), start=1)
            if line.strip()]
    if not rows:
        raise InputError("path", f"{prefix}the file has no questions (it is empty or blank)")
    return _build(rows, name, "path", prefix)


def parse_json_item(text: str, *, benchmark: str = "asked") -> QuestionItem:
    """One item given as a JSON object (format in the module docstring); errors on field
    ``question``."""
    return _build([_row(text, "JSON item", "question", "")], _check_benchmark_name(benchmark), "question")[0]


def is_file(path: Path | str) -> bool:
    """Whether ``path`` names a file; any error while looking (a name too long for the file
    system, a NUL byte, no permission) means it does not."""
    try:
        return Path(path).is_file()
    except (OSError, ValueError):
        return False


def load_jsonl_items(path: Path | str, *, benchmark: str = "custom") -> tuple[QuestionItem, ...]:
    """Read a user's question file (UTF-8 JSONL, format in the module docstring)."""
    file = Path(path)
    if not is_file(file):
        raise InputError("path", f"file not found: {file}")
    try:
        data = file.read_bytes()
    except OSError as exc:
        raise InputError("path", f"cannot read {file}: {exc.strerror or exc}") from None
    text = strict_json.decode_utf8(data, "path", str(file))
    return parse_jsonl_items(text, benchmark=benchmark, source=str(file))


def sample_items(items: Sequence[QuestionItem], n: int, rng: np.random.Generator
                 ) -> tuple[QuestionItem, ...]:
    """``n`` items drawn without replacement, kept in their order in ``items``.

    ``n`` larger than ``len(items)`` returns them all.  The same ``rng`` seed gives the
    same items.
    """
    check("rng", rng, Instance(np.random.Generator, msg="pass a numpy.random.Generator, e.g. "
                                                       "numpy.random.default_rng(seed)"), error=InputError)
    check("n", n, Whole(1, numpy=True), error=InputError)
    if n >= len(items):
        return tuple(items)
    chosen = np.sort(rng.choice(len(items), size=int(n), replace=False))
    return tuple(items[int(i)] for i in chosen)
