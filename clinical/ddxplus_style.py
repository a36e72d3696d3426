"""Does a text read like a DDXPlus-8 case as the project renders it?

A model trained on the rendered cases (:mod:`clinical.ddxplus_vignette`) learned their
phrases, not clinical prose: "intensity 7/10", "is experiencing shortness of breath or
difficulty breathing in a significant way", "has high blood pressure or takes medications to
treat high blood pressure".  :func:`ddxplus_phrasing` splits a text into its findings (the
sentences, the ``;``-separated items of the renderer's layout and the parts of their
lists, numbers replaced by ``#``) and counts those that occur in some rendered case of the
dataset.  A rendered case, whole or one view of it, matches (nearly) every finding: built
from four fifths of the cases, the phrases matched at least 94 % of the findings of each
case of the other fifth.  The Models page's example, a myocardial infarction in plain
words, matches 2 of its 11.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

__all__ = ["PHRASING_SHARE", "Phrasing", "findings", "ddxplus_phrasing"]

PHRASING_SHARE = 0.8
"""At least this share of a text's findings must be rendered DDXPlus phrases for it to read
as a DDXPlus case."""

_HEADING = re.compile(r"^(Presenting complaint|Pain|Skin lesions|Swelling|Other symptoms|History and risk factors|"
                      r"Other answers):\s*")
_NUMBER = re.compile(r"\d+(\.\d+)?")
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z(])")
_LIST = re.compile(r",\s+|\s+and\s+")


def findings(text: str) -> list[str]:
    """The text's findings: sentences split at ``;`` and at the commas and "and" of their
    lists, headings dropped, numbers as ``#``, lower case, without the closing full stop."""
    out = []
    for sentence in _SENTENCE.split(text.strip()):
        sentence = _HEADING.sub("", sentence.strip())
        for item in sentence.split(";"):
            item = _NUMBER.sub("#", item.strip().rstrip(".").strip()).lower()
            out += [part.strip() for part in _LIST.split(item) if part.strip()]
    return out


@lru_cache(maxsize=1)
def _phrases() -> frozenset[str]:
    from clinical.ddxplus import load_ddxplus8

    return frozenset(f for case in load_ddxplus8() for f in findings(case.text))


@dataclass(frozen=True)
class Phrasing:
    """How many of a text's findings are phrases of the rendered DDXPlus-8 cases."""

    matched: int
    findings: int

    @property
    def share(self) -> float:
        return self.matched / self.findings if self.findings else 0.0

    @property
    def reads_as_ddxplus(self) -> bool:
        return self.findings > 0 and self.share >= PHRASING_SHARE


def ddxplus_phrasing(text: str) -> Phrasing:
    """Count the findings of ``text`` that occur in the rendered DDXPlus-8 cases (the
    dataset is read once per process)."""
    items = findings(text)
    known = _phrases()
    return Phrasing(sum(f in known for f in items), len(items))
