"""Perturbed copies of questions for the robustness and consistency metrics.

Every function is pure: randomness comes only from the ``numpy.random.Generator`` passed
in, so the same generator state gives the same text.

* :func:`add_typos` -- each eligible word is misspelt with probability ``rate`` by one of
  four edits: swap two adjacent inner letters, drop an inner letter, double a letter, or
  replace a letter with a QWERTY neighbour (:data:`KEYBOARD`).  Eligible words are runs of
  four or more letters with no digit or letter touching them; words with a capital after
  the first letter (acronyms, mmHg, HbA1c), words touching "/" (mg/dL, breaths/min), words
  right after a number, with or without a space or hyphen (a unit or a unit-like noun:
  "72 bpm", "10 days", "45-year-old") and the units of :data:`UNITS` are left alone.
  Digits, punctuation and case are never changed.
* :func:`reword` -- rule-based paraphrases (``data/sag_eval/reword_rules.json``), literal
  phrases matched whole-word and case-insensitively, applied in order; a match starting
  with a capital gets a capitalised replacement.
* :func:`insert_distractor` -- one sentence naming a wrong option (template from
  ``data/sag_eval/distractor_templates.json``), placed before the final sentence when that
  sentence asks the question (ends in "?", closing quotes allowed) or is a stem to complete
  (ends in ":" or has no final full stop, as many MedMCQA items do); after a text that
  ends in a statement it goes at the end.
* :func:`shuffle_options` -- options permuted and relettered A, B, ...; answer remapped.
* :func:`perturbed_id` -- ``"{item_id}~{tag}"``.
"""
from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from clinical.questions import DEFAULT_DATA_DIR, QuestionItem
from common.errors import InputError
from common.fields import Instance, Number, Satisfies, Seq, Text, check, fixed

__all__ = ["KEYBOARD", "UNITS", "REWORD_RULES_FILE", "DISTRACTOR_TEMPLATES_FILE", "RewordRules",
           "add_typos", "reword", "load_reword_rules", "load_distractor_templates", "insert_distractor",
           "shuffle_options", "perturbed_id"]

REWORD_RULES_FILE = DEFAULT_DATA_DIR / "sag_eval" / "reword_rules.json"
DISTRACTOR_TEMPLATES_FILE = DEFAULT_DATA_DIR / "sag_eval" / "distractor_templates.json"
_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")


def _neighbours() -> dict[str, str]:
    """Letters left and right on the same row and the two nearest on the rows above/below."""
    out: dict[str, str] = {}
    for r, row in enumerate(_ROWS):
        for c, ch in enumerate(row):
            near = [row[c - 1]] if c > 0 else []
            near += [row[c + 1]] if c + 1 < len(row) else []
            for other in (r - 1, r + 1):
                if 0 <= other < len(_ROWS):
                    near += [k for k in _ROWS[other][max(c - 1, 0): c + 1]]
            out[ch] = "".join(dict.fromkeys(near))
    return out


KEYBOARD: dict[str, str] = _neighbours()
UNITS = frozenset({"mmol", "nmol", "pmol", "umol", "fmol", "kcal", "mosm", "mmhg", "mcg", "msec", "kpa"})
_WORD = re.compile(r"(?<![A-Za-z0-9])[A-Za-z]{4,}(?![A-Za-z0-9])")
_AFTER_NUMBER = re.compile(r"\d[\s-]?$")


def _eligible(text: str, match: re.Match[str]) -> bool:
    word, start, end = match.group(), match.start(), match.end()
    if any(ch.isupper() for ch in word[1:]) or word.lower() in UNITS:
        return False
    if text[start - 1: start] == "/" or text[end: end + 1] == "/":
        return False
    return not _AFTER_NUMBER.search(text[max(start - 2, 0): start])


def _typo(word: str, rng: np.random.Generator) -> str:
    """One of the four edits; a swap of two equal letters becomes a drop."""
    kind = int(rng.integers(4))
    if kind == 0:
        pairs = [i for i in range(1, len(word) - 2) if word[i].lower() != word[i + 1].lower()]
        if pairs:
            i = pairs[int(rng.integers(len(pairs)))]
            return word[:i] + word[i + 1] + word[i] + word[i + 2:]
        kind = 1
    if kind == 1:
        i = int(rng.integers(1, len(word) - 1))
        return word[:i] + word[i + 1:]
    if kind == 2:
        i = int(rng.integers(len(word)))
        return word[: i + 1] + word[i:]
    i = int(rng.integers(len(word)))
    near = KEYBOARD[word[i].lower()]
    new = near[int(rng.integers(len(near)))]
    return word[:i] + (new.upper() if word[i].isupper() else new) + word[i + 1:]


def add_typos(text: str, rng: np.random.Generator, rate: float = 0.05) -> str:
    """``text`` with each eligible word misspelt with probability ``rate`` (module docstring)."""
    check("rng", rng, Instance(np.random.Generator, msg="pass a numpy.random.Generator, e.g. "
                                                       "numpy.random.default_rng(seed)"), error=InputError)
    check("rate", rate, Number(0.0, 1.0, msg="must be between 0 and 1, got {value!r}"), error=InputError)
    pieces: list[str] = []
    last = 0
    for match in _WORD.finditer(text):
        if not _eligible(text, match):
            continue
        pieces.append(text[last: match.start()])
        word = match.group()
        pieces.append(_typo(word, rng) if rng.random() < rate else word)
        last = match.end()
    return "".join(pieces) + text[last:]


_PAIR = Seq(Text(), min_len=2, max_len=2, msg="each rule is a pair of non-empty strings, got {value!r}")


@dataclass(frozen=True)
class RewordRules:
    """``(phrase, replacement)`` pairs applied in order by :func:`reword`."""

    rules: tuple[tuple[str, str], ...]

    def __post_init__(self) -> None:
        for pair in self.rules:
            check("rules", pair, _PAIR, error=InputError)


@lru_cache(maxsize=None)
def _phrase_regex(phrase: str) -> re.Pattern[str]:
    body = r"\s+".join(re.escape(word) for word in phrase.split())
    return re.compile(rf"(?<!\w){body}(?!\w)", re.IGNORECASE)


def _cased(replacement: str, matched: str) -> str:
    return replacement[:1].upper() + replacement[1:] if matched[:1].isupper() else replacement


def reword(text: str, rules: RewordRules) -> str:
    """``text`` with every rule applied in order (whole words, first letter's case kept)."""
    for phrase, replacement in rules.rules:
        text = _phrase_regex(phrase).sub(lambda m, r=replacement: _cased(r, m.group()), text)
    return text


def read_rules_object(path: Path) -> dict[str, object]:
    """A rules file of the evaluation: a JSON object, or a clear InputError."""
    if not path.is_file():
        raise InputError("path", f"file not found: {path.name}")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, RecursionError) as exc:
        raise InputError("path", f"{path.name}: not valid JSON: {getattr(exc, 'msg', exc)}") from None
    return check("path", raw, Instance(dict), msg=fixed(f"{path.name}: expected a JSON object"), error=InputError)


def _read_object(path: Path, key: str) -> list[object]:
    raw = read_rules_object(path)
    return check("path", raw.get(key), Seq(min_len=1, types=(list,)), error=InputError,
                 msg=fixed(f"{path.name}: expected an object with a non-empty list {key!r}"))


def load_reword_rules(path: Path | str | None = None) -> RewordRules:
    """The rules file (default ``data/sag_eval/reword_rules.json``): ``{"about", "rules"}``."""
    rows = _read_object(REWORD_RULES_FILE if path is None else Path(path), "rules")
    check("path", rows, Seq(Instance(list)), msg="each rule must be a [phrase, replacement] list", error=InputError)
    return RewordRules(tuple(tuple(row) for row in rows))  # type: ignore[misc]


def load_distractor_templates(path: Path | str | None = None) -> tuple[str, ...]:
    """Sentence templates with one ``{option}`` slot (default
    ``data/sag_eval/distractor_templates.json``: ``{"about", "templates"}``)."""
    rows = _read_object(DISTRACTOR_TEMPLATES_FILE if path is None else Path(path), "templates")
    check("path", rows, Seq(Instance(str)), Satisfies(lambda ts: all(t.count("{option}") == 1 for t in ts)),
          msg=fixed("each template must be a string with exactly one {option}"), error=InputError)
    return tuple(str(t) for t in rows)


@lru_cache(maxsize=1)
def _default_templates() -> tuple[str, ...]:
    return load_distractor_templates()


def _insert_before_question(question: str, sentence: str) -> str:
    """Before the final sentence when it asks ("?", closing quotes allowed) or is a stem to
    complete (ends in ":" or without a full stop); at the end after a statement."""
    text = question.rstrip()
    if not re.search(r"[.!][\"'\u201d\u2019)]*$", text):
        starts = [m.end() for m in re.finditer(r"[.!?]\s+(?=\S)", text)]
        if starts:
            cut = starts[-1]
            return f"{text[:cut]}{sentence} {text[cut:]}"
        return f"{sentence} {text}"
    return f"{text} {sentence}"


def insert_distractor(item: QuestionItem, rng: np.random.Generator,
                      templates: tuple[str, ...] | None = None) -> tuple[QuestionItem, str]:
    """``item`` with one sentence pointing to a wrong option, and that option's letter.

    The letter and the template are drawn from ``rng``; id, options and answer are kept.
    """
    wrong = [letter for letter in item.letters if letter != item.answer]
    letter = wrong[int(rng.integers(len(wrong)))]
    chosen = templates if templates is not None else _default_templates()
    template = chosen[int(rng.integers(len(chosen)))]
    sentence = template.replace("{option}", item.option_text(letter).rstrip("."))
    return dataclasses.replace(item, question=_insert_before_question(item.question, sentence)), letter


def shuffle_options(item: QuestionItem, rng: np.random.Generator) -> QuestionItem:
    """``item`` with its options in the order ``rng.permutation``, relettered A, B, ...,
    and the answer letter moved with the correct text."""
    order = [int(k) for k in rng.permutation(len(item.options))]
    letters = item.letters
    options = tuple((letters[new], item.options[old][1]) for new, old in enumerate(order))
    return dataclasses.replace(item, options=options, answer=letters[order.index(item.answer_index)])


def perturbed_id(item_id: str, tag: str) -> str:
    """The id of a perturbed copy: ``"{item_id}~{tag}"``."""
    if not tag or "~" in tag:
        raise InputError("tag", f"must be non-empty and contain no '~', got {tag!r}")
    return f"{item_id}~{tag}"
