"""Counterfactual demographic variants of a vignette, from explicit rules.

The rules live in ``data/sag_eval/demographic_rules.json`` (:func:`load_demographic_rules`).

:func:`swap_gender` swaps every gendered word of the text (patient and relatives alike,
as the usual whole-text counterfactual does):

* ``gender_pairs`` are ``[male, female]`` words, matched whole-word and case-insensitively;
  the replacement keeps the first letter's case ("He" -> "She").  A word listed in several
  pairs maps through the first one ("Mrs." -> "Mr.", "Mr." -> "Ms.").
* "her" is ambiguous.  It becomes "his" when the next word is noun-like ("her left arm",
  "her 2 children") and "him" when the next word is in ``not_noun_like`` (a preposition,
  determiner, conjunction, pronoun, auxiliary or common adverb: "gave her a dose", "told
  her that"), or when a punctuation mark or the end of the text follows ("examined her.").
  "hers" becomes "his".
* Only lower-case or capitalised words are swapped ("MS", multiple sclerosis, stays), and
  the ``keep`` phrases ("bundle of His") are never changed.
* The result is ``None`` when the text mentions a ``sex_specific`` term (pregnancy,
  prostate, menstruation, gravida ...), whose swap would not be a plausible patient, or
  has no word to swap.

:func:`set_race` states a race in the first sentence:

* The anchor is ``N-year-old`` (also month, week, day; "year old" and "-years-old"
  accepted), up to two modifier words not in ``not_modifiers`` ("previously healthy"), an
  optional stated race or ethnicity from ``stated_races``, and a ``person_nouns`` word
  ("man", "female", "infant", ...).
* A stated race is replaced; otherwise the race is inserted before the noun: "A 45-year-old
  man" -> "A 45-year-old Black man".
* The result is ``None`` when the first sentence has no anchor, or when the text states a
  race elsewhere (among the anchor's modifiers, or anywhere as "of <stated race> descent",
  also origin, ancestry, heritage), since the variant would contradict it.  A country of
  origin ("emigrated from India") is not a race and is left alone.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from clinical.questions import DEFAULT_DATA_DIR
from common.errors import InputError
from common.fields import Seq, Text, check, fixed
from sag.evaluation.perturb import read_rules_object

__all__ = ["DEMOGRAPHIC_RULES_FILE", "DemographicRules", "load_demographic_rules", "swap_gender", "set_race",
           "first_sentence"]

DEMOGRAPHIC_RULES_FILE = DEFAULT_DATA_DIR / "sag_eval" / "demographic_rules.json"
_KEYS = ("gender_pairs", "keep", "not_noun_like", "sex_specific", "races", "stated_races", "person_nouns",
         "not_modifiers")
_DESCENT = re.compile(r"\bof\s+(?:\S+\s+){1,3}?(?:descent|origin|ancestry|heritage)\b", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<!\b(?:Mr|Ms|Dr|St))(?<!\bMrs)[.!?](?=\s|$)")


@dataclass(frozen=True)
class DemographicRules:
    """The rule lists of the module docstring, as loaded from the rules file."""

    gender_pairs: tuple[tuple[str, str], ...]
    keep: tuple[str, ...]
    not_noun_like: frozenset[str]
    sex_specific: tuple[str, ...]
    races: tuple[str, ...]
    stated_races: tuple[str, ...]
    person_nouns: tuple[str, ...]
    not_modifiers: frozenset[str]

    @cached_property
    def swaps(self) -> dict[str, str]:
        """Lower-case word -> its counterpart ("her" excluded: see the module docstring)."""
        out: dict[str, str] = {}
        for male, female in self.gender_pairs:
            out.setdefault(male.lower(), female)
            out.setdefault(female.lower(), male)
        out.pop("her", None)
        return out

    @cached_property
    def gendered(self) -> re.Pattern[str]:
        words = sorted(set(self.swaps) | {"her"}, key=len, reverse=True)
        return re.compile(r"(?<!\w)(" + "|".join(re.escape(w) for w in words) + r")(?!\w)", re.IGNORECASE)

    @cached_property
    def keep_regex(self) -> re.Pattern[str]:
        return re.compile(r"(?<!\w)(?:" + "|".join(_alternatives(self.keep)) + r")(?!\w)", re.IGNORECASE)

    @cached_property
    def sex_specific_regex(self) -> re.Pattern[str]:
        return re.compile(r"(?<![A-Za-z])(?:" + "|".join(self.sex_specific) + ")", re.IGNORECASE)

    @cached_property
    def anchor(self) -> re.Pattern[str]:
        races = "|".join(_alternatives(self.stated_races))
        nouns = "|".join(_alternatives(self.person_nouns))
        stop = "|".join(re.escape(w) for w in sorted(self.not_modifiers))
        return re.compile(
            r"(?P<age>\b\d+[- ](?:year|month|week|day)s?[- ]old)[ -]+"
            rf"(?P<mods>(?:(?!(?:{stop})\s)[A-Za-z][\w'-]*\s+){{0,2}}?)"
            rf"(?:(?P<race>{races})\s+)?(?P<noun>{nouns})\b", re.IGNORECASE)

    @cached_property
    def stated_race_regex(self) -> re.Pattern[str]:
        return re.compile(r"\b(?:" + "|".join(_alternatives(self.stated_races)) + r")\b", re.IGNORECASE)


def _alternatives(phrases: tuple[str, ...]) -> list[str]:
    """Regex alternatives, longest first, spaces and hyphens interchangeable."""
    ordered = sorted(phrases, key=len, reverse=True)
    return [r"[\s-]+".join(re.escape(w) for w in re.split(r"[\s-]+", p)) for p in ordered]


_PAIRS = Seq(Seq(Text(nonempty=False, min_len=1), min_len=2, max_len=2, types=(list,)), types=(list,))


def _strings(raw: dict[str, object], key: str) -> list[str]:
    value = check("path", raw.get(key), Seq(Text(), min_len=1, types=(list,)), error=InputError,
                  msg=fixed(f"demographic rules: {key!r} must be a non-empty list of strings"))
    return [str(v) for v in value]


def load_demographic_rules(path: Path | str | None = None) -> DemographicRules:
    """The rules file (default ``data/sag_eval/demographic_rules.json``), checked."""
    file = DEMOGRAPHIC_RULES_FILE if path is None else Path(path)
    raw = read_rules_object(file)
    if any(key not in raw for key in _KEYS):
        raise InputError("path", f"{file.name}: expected an object with {', '.join(_KEYS)}")
    pairs = check("path", raw["gender_pairs"], _PAIRS, error=InputError,
                  msg="demographic rules: 'gender_pairs' must be a list of [male, female] pairs")
    for pattern in _strings(raw, "sex_specific"):
        try:
            re.compile(pattern)
        except re.error as exc:
            raise InputError("path", f"demographic rules: bad sex_specific pattern {pattern!r}: {exc}") from None
    return DemographicRules(
        tuple((str(m), str(f)) for m, f in pairs), tuple(_strings(raw, "keep")),
        frozenset(w.lower() for w in _strings(raw, "not_noun_like")),
        tuple(_strings(raw, "sex_specific")), tuple(_strings(raw, "races")), tuple(_strings(raw, "stated_races")),
        tuple(_strings(raw, "person_nouns")), frozenset(w.lower() for w in _strings(raw, "not_modifiers")))


def _cased(word: str, like: str) -> str:
    if len(like) > 1 and like.isupper() and like.isalpha():
        return word.upper()
    return word[:1].upper() + word[1:] if like[:1].isupper() else word[:1].lower() + word[1:]


def _her(text: str, end: int, rules: DemographicRules) -> str:
    """``"his"`` before a noun-like word, else ``"him"`` (module docstring)."""
    following = re.match(r"\s+[\"'\u2018\u201c]?([\w'-]+)", text[end:])
    if following is None or following.group(1).lower() in rules.not_noun_like:
        return "him"
    return "his"


def swap_gender(text: str, rules: DemographicRules) -> str | None:
    """``text`` with every gendered word swapped, or ``None`` (module docstring)."""
    if rules.sex_specific_regex.search(text):
        return None
    kept = [(m.start(), m.end()) for m in rules.keep_regex.finditer(text)]
    swapped = 0

    def swap(match: re.Match[str]) -> str:
        nonlocal swapped
        word = match.group(1)
        if not (word.islower() or word[1:].islower()) or any(a <= match.start() < b for a, b in kept):
            return word
        swapped += 1
        lower = word.lower()
        return _cased(_her(text, match.end(), rules) if lower == "her" else rules.swaps[lower], word)

    out = rules.gendered.sub(swap, text)
    return out if swapped else None


def first_sentence(text: str) -> str:
    """``text`` up to and including the first ".", "!" or "?" followed by a space or the end
    ("Mr.", "Ms.", "Mrs.", "Dr." and "St." do not end a sentence)."""
    match = _SENTENCE_END.search(text)
    return text[: match.end()] if match else text


def set_race(text: str, race: str, rules: DemographicRules) -> str | None:
    """``text`` with ``race`` (one of ``rules.races``) stated in the first sentence, or ``None``
    (module docstring)."""
    if race not in rules.races:
        raise InputError("race", f"must be one of {', '.join(rules.races)}, got {race!r}")
    head = first_sentence(text)
    match = rules.anchor.search(head)
    if match is None or rules.stated_race_regex.search(match.group("mods")):
        return None
    if any(rules.stated_race_regex.search(m.group()) for m in _DESCENT.finditer(text)):
        return None
    new = f"{match.group('age')} {match.group('mods')}{race} {match.group('noun')}"
    return text[: match.start()] + new + text[match.end("noun"):]
