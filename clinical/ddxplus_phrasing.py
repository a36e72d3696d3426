"""Turn DDXPlus ontology questions and value codes into third-person English phrases.

DDXPlus stores every finding as the patient-facing question it answers
(``release_evidences.json`` field ``question_en``, e.g. "Do you have a cough?").  A
binary evidence present in a case means the patient answered *yes*, so the question is
rewritten as a third-person statement ("has a cough") by fixed rules:

* ``" or do you "`` / ``" or have you "`` / ``" or are you "`` split the question into
  clauses, each rewritten on its own and joined with ``" or "``.
* Leading forms: ``Do you [adverb] VERB`` -> ``[adverb] VERB-s``; ``Have you`` ->
  ``has``; ``Are you`` -> ``is``; ``Are your X`` -> ``<his/her> X are``; ``Do your X``
  -> ``<his/her> X``; ``Is your X`` -> ``<his/her> X is``.
* Inside the clause ``your`` -> possessive, ``you are / you have / you were`` ->
  subject + third-person verb, any other ``you`` -> object pronoun.

Questions the rules render badly are listed in ``CLAUSE_OVERRIDES`` (written by hand
from the question text, same meaning).  If no rule applies the clause falls back to
``answered yes to "<question>"`` so nothing is silently dropped.

Values of categorical / multi-choice evidences are decoded through ``value_meaning`` ->
``en``; body locations written ``"thigh(R)"`` become ``"right thigh"``; ``Y``/``N``
become ``yes``/``no``; numeric answers on the 0-10 scales become ``"7/10"``.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

__all__ = ["Pronouns", "pronouns_for", "CLAUSE_OVERRIDES", "question_to_clause",
           "value_text", "location_text"]


@dataclass(frozen=True)
class Pronouns:
    """Third-person forms used when rewriting second-person questions."""

    subject: str
    object: str
    possessive: str


_PRONOUNS = {
    "M": Pronouns("he", "him", "his"),
    "F": Pronouns("she", "her", "her"),
}
_NEUTRAL = Pronouns("the patient", "the patient", "the patient's")


def pronouns_for(sex: str) -> Pronouns:
    """``M`` / ``F`` -> he / she forms; anything else -> "the patient" forms."""
    return _PRONOUNS.get(sex, _NEUTRAL)


# Hand-written third-person clauses for questions the rules cannot rewrite well.
# ``{s}``, ``{o}``, ``{p}`` stand for subject, object and possessive pronouns.
CLAUSE_OVERRIDES: dict[str, str] = {
    "E_42": "has been in contact with or ate something {s} is allergic to",
    "E_49": "attends or works in a daycare",
    "E_129": "has lesions, redness or problems on {p} skin related to the complaint",
    "E_159": "lost consciousness",
    "E_161": "has recently had a loss of appetite or gets full more quickly than usual",
    "E_167": "is or may be pregnant",
    "E_4": "has had croup, or a family member has",
    "E_65": "has difficulty swallowing or a feeling of discomfort/blockage when swallowing",
    "E_111": "feels like {s} is dying or is afraid of dying",
    "E_114": "is more irritable or {p} mood has been very unstable recently",
    "E_177": "has or has had numbness, loss of sensitivity or tingling anywhere on {p} body",
    "E_205": "suddenly has difficulty opening {p} mouth or jaw pain when opening it",
}

_ADVERBS = {"currently", "constantly", "regularly", "suddenly", "ever", "often",
            "usually", "sometimes", "still", "also", "really"}
_IRREGULAR = {"have": "has", "do": "does", "go": "goes", "are": "is", "were": "was"}
_SPLITTERS = (" or do you ", " or have you ", " or are you ")


def _third_person(verb: str) -> str:
    low = verb.lower()
    if low in _IRREGULAR:
        return _IRREGULAR[low]
    if re.search(r"(s|sh|ch|x|z|o)$", low):
        return verb + "es"
    if re.search(r"[^aeiou]y$", low):
        return verb[:-1] + "ies"
    return verb + "s"


def _inflect_verb_phrase(words: list[str]) -> list[str]:
    """Inflect the first non-adverb word of ``words`` to third person singular."""
    out = list(words)
    for i, word in enumerate(out):
        bare = word.lower().rstrip(",")
        if bare in _ADVERBS or bare.endswith("ly"):
            continue
        out[i] = _third_person(word)
        break
    return out


def _fix_pronouns(text: str, pro: Pronouns) -> str:
    text = re.sub(r"\byou(?:’|')re\b", f"{pro.subject} is", text)
    text = re.sub(r"\byou are\b", f"{pro.subject} is", text)
    text = re.sub(r"\byou have\b", f"{pro.subject} has", text)
    text = re.sub(r"\byou were\b", f"{pro.subject} was", text)
    text = re.sub(r"\b(when|that|if|while|because|since|where) you (\w+)",
                  lambda m: f"{m.group(1)} {pro.subject} {_third_person(m.group(2))}", text)
    text = re.sub(r"\byour\b", pro.possessive, text)
    text = re.sub(r"\byourself\b", "themselves" if pro is _NEUTRAL else
                  ("himself" if pro.subject == "he" else "herself"), text)
    return re.sub(r"\byou\b", pro.object, text)


def _rewrite_clause(clause: str, pro: Pronouns, first: bool) -> str | None:
    """Rewrite one clause; ``first`` means it still carries its ``Do you`` etc."""
    words = clause.split()
    if not words:
        return None
    if not first:  # text after a splitter: "do you"/"have you"/"are you" removed
        return " ".join(words)
    head = " ".join(words[:2]).lower()
    rest = words[2:]
    if head == "do you" and rest:
        return " ".join(_inflect_verb_phrase(rest))
    if head == "have you" and rest:
        return "has " + " ".join(rest)
    if head == "are you" and rest:
        return "is " + " ".join(rest)
    if head in ("are your", "do your", "is your") and rest:
        # "Are your symptoms worse ..." -> "<p> symptoms are worse ..."
        noun, tail = rest[0], rest[1:]
        verb = {"are your": "are", "do your": "", "is your": "is"}[head]
        parts = [f"{{p}} {noun}"] + ([verb] if verb else []) + tail
        return " ".join(parts)
    return None


def question_to_clause(code: str, question: str, sex: str) -> str:
    """Third-person statement meaning the patient answered *yes* to ``question``."""
    pro = pronouns_for(sex)
    fill = {"s": pro.subject, "o": pro.object, "p": pro.possessive}
    if code in CLAUSE_OVERRIDES:
        return CLAUSE_OVERRIDES[code].format(**fill)
    text = " ".join(question.strip().rstrip("?:").split())
    pieces: list[tuple[str, bool]] = [(text, True)]
    for splitter in _SPLITTERS:
        nxt: list[tuple[str, bool]] = []
        for piece, first in pieces:
            parts = re.split(re.escape(splitter), piece, flags=re.IGNORECASE)
            nxt.append((parts[0], first))
            for part in parts[1:]:
                verb_words = part.split()
                if splitter == " or do you ":
                    part = " ".join(_inflect_verb_phrase(verb_words))
                elif splitter == " or have you ":
                    part = "has " + part
                else:
                    part = "is " + part
                nxt.append((part, False))
        pieces = nxt
    clauses = [_rewrite_clause(p, pro, first) for p, first in pieces]
    if any(c is None for c in clauses):
        return f'answered yes to "{text}?"'
    joined = " or ".join(c for c in clauses if c)
    joined = joined.replace("{p}", pro.possessive)
    return _fix_pronouns(joined, pro)


def location_text(meaning: str) -> str:
    """``"thigh(R)"`` -> ``"right thigh"``; ``"finger (index)(L)"`` -> ``"left finger (index)"``."""
    m = re.fullmatch(r"\s*(.*?)\s*\((R|L)\)\s*", meaning)
    if not m:
        return meaning.strip()
    side = "right" if m.group(2) == "R" else "left"
    return f"{side} {m.group(1)}"


def value_text(entry: Mapping[str, Any], value: str) -> str | None:
    """English text of one answer value, or ``None`` for a "not applicable" answer."""
    meanings = entry.get("value_meaning") or {}
    if value in meanings:
        en = str(meanings[value].get("en", value)).strip()
        if en == "NA":
            return None
        if en in ("Y", "N"):
            return "yes" if en == "Y" else "no"
        return location_text(en)
    if re.fullmatch(r"-?\d+(\.\d+)?", value):
        return f"{value}/10"
    return value
