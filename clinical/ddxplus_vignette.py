"""Render one DDXPlus case (age, sex, evidence codes) as a short clinical paragraph.

The rendering is a pure function of its inputs: the order of the evidence codes in the
input does not matter (codes are sorted by their number, values by the ontology's
``possible-values`` order), so the same case always gives the same text.

Layout, in this fixed order:

1. Opening: ``"A 31-year-old woman. Presenting complaint: she <clause>."`` from AGE,
   SEX and INITIAL_EVIDENCE (the first finding the patient reported).
2. One sentence per *gated group*: a binary gate question with categorical /
   multi-choice follow-ups (``E_53`` pain, ``E_129`` skin lesions, ``E_151``
   swelling), e.g. ``"Pain: described as sharp; located at the epigastric region; ..."``.
3. ``"Other symptoms: <clause>; <clause>."`` - the remaining present-tense binary findings.
4. ``"History and risk factors: <clause>; ..."`` - binary antecedents (``is_antecedent``)
   and categorical antecedents such as recent travel (``E_204``).
5. ``"Other answers: <question>: <value>."`` - any categorical answer not covered above.

Truncation rule: the opening is always kept.  Every later item is one *finding*; the
findings are kept in the order above and, when the paragraph would exceed
``max_chars``, the trailing findings are dropped and the paragraph ends with
``"(further findings omitted)"``.  The text never names the pathology or the
differential diagnosis; only the ontology's questions and answers are used.
"""
from __future__ import annotations

import re
from typing import Any, Iterable, Mapping

from clinical.ddxplus_phrasing import pronouns_for, question_to_clause, value_text
from common.errors import InputError

__all__ = ["MAX_VIGNETTE_CHARS", "OMITTED_SUFFIX", "GROUP_HEADINGS", "CHILD_LABELS", "NO_VALUE_TEXT",
           "parse_evidence", "render_vignette"]

MAX_VIGNETTE_CHARS = 1200
OMITTED_SUFFIX = "(further findings omitted)"

GROUP_HEADINGS: dict[str, str] = {"E_53": "Pain", "E_129": "Skin lesions", "E_151": "Swelling"}

# Short phrase per follow-up question; ``{}`` receives the decoded answer(s).
CHILD_LABELS: dict[str, str] = {
    "E_54": "described as {}",
    "E_55": "located at {}",
    "E_57": "radiating to {}",  # "nowhere" -> NO_VALUE_TEXT
    "E_56": "intensity {}",
    "E_58": "precision of location {}",
    "E_59": "speed of onset {} (10 = sudden)",
    "E_130": "colour {}",
    "E_131": "peeling: {}",
    "E_132": "rash swelling {}",
    "E_133": "located at {}",
    "E_134": "rash pain {}",
    "E_135": "larger than 1 cm: {}",
    "E_136": "itching {}",
    "E_152": "located at {}",
}

# Text for a location question answered only with "nowhere" (other such answers are skipped).
NO_VALUE_TEXT: dict[str, str] = {"E_57": "not radiating"}

_TRAVEL = "E_204"
_CODE_RE = re.compile(r"^E_(\d+)$")
Evidences = Mapping[str, Mapping[str, Any]]


def parse_evidence(token: str) -> tuple[str, str | None]:
    """``"E_55_@_V_89"`` -> ``("E_55", "V_89")``; ``"E_91"`` -> ``("E_91", None)``."""
    code, sep, value = token.strip().partition("_@_")
    if not _CODE_RE.match(code) or (sep and not value):
        raise InputError("EVIDENCES", f"malformed evidence code {token!r}")
    return code, (value if sep else None)


def _code_key(code: str) -> int:
    return int(code[2:])


def _value_key(entry: Mapping[str, Any], value: str) -> tuple[int, str]:
    possible = [str(v) for v in entry.get("possible-values") or []]
    return (possible.index(value) if value in possible else len(possible), value)


def _join(values: list[str]) -> str:
    if len(values) <= 2:
        return " and ".join(values)
    return ", ".join(values[:-1]) + " and " + values[-1]


def _collect(evidence_tokens: Iterable[str], ontology: Evidences) -> tuple[set[str], dict[str, list[str]]]:
    binary: set[str] = set()
    valued: dict[str, list[str]] = {}
    for token in evidence_tokens:
        code, value = parse_evidence(token)
        if code not in ontology:
            raise InputError("EVIDENCES", f"evidence code {code} is not in release_evidences.json")
        if value is None:
            binary.add(code)
        else:
            valued.setdefault(code, [])
            if value not in valued[code]:
                valued[code].append(value)
    for code, values in valued.items():
        values.sort(key=lambda v, c=code: _value_key(ontology[c], v))
    return binary, valued


def _decoded(code: str, values: list[str], ontology: Evidences) -> list[str]:
    texts = [value_text(ontology[code], v) for v in values]
    return [t for t in texts if t is not None and t != "nowhere"]


def _opening(age: int, sex: str, chief: str | None, ontology: Evidences) -> str:
    noun = {"M": ("man", "boy"), "F": ("woman", "girl")}.get(sex, ("patient", "patient"))
    who = noun[0] if age >= 18 else noun[1]
    if age < 1:
        text = f"A {who} under 1 year old."
    else:
        article = "An" if str(age).startswith("8") or age in (11, 18) else "A"
        text = f"{article} {age}-year-old {who}."
    if chief is not None:
        pro = pronouns_for(sex)
        clause = question_to_clause(chief, str(ontology[chief]["question_en"]), sex)
        text += f" Presenting complaint: {pro.subject} {clause}."
    return text


def _sections(sex: str, binary: set[str], valued: dict[str, list[str]],
              chief: str | None, ontology: Evidences) -> list[tuple[str, list[str]]]:
    """(heading, findings) in the fixed layout order; empty sections are dropped later."""
    groups: dict[str, list[str]] = {g: [] for g in GROUP_HEADINGS}
    history: list[str] = []
    travel: list[str] = []
    others: list[str] = []
    for code in sorted(valued, key=_code_key):
        entry = ontology[code]
        parent = str(entry.get("code_question", code))
        texts = _decoded(code, valued[code], ontology)
        if code == _TRAVEL:
            dest = [t for t in texts if t != "no"]
            travel.append("travelled out of the country in the last 4 weeks: " + _join(dest)
                           if dest else "no travel out of the country in the last 4 weeks")
            continue
        if not texts:
            if code in NO_VALUE_TEXT and parent in groups:
                groups[parent].append(NO_VALUE_TEXT[code])
            continue
        if parent in groups and code in CHILD_LABELS:
            groups[parent].append(CHILD_LABELS[code].format(_join(texts)))
        elif entry.get("is_antecedent"):
            history.append(f"{str(entry['question_en']).rstrip('?: ')}: {_join(texts)}")
        else:
            others.append(f"{str(entry['question_en']).rstrip('?: ')}: {_join(texts)}")
    symptoms: list[str] = []
    for code in sorted(binary, key=_code_key):
        if code in groups or code == chief:
            if code in groups and not groups[code] and code != chief:
                groups[code].append("present")
            continue
        clause = question_to_clause(code, str(ontology[code]["question_en"]), sex)
        (history if ontology[code].get("is_antecedent") else symptoms).append(clause)
    ordered = [(GROUP_HEADINGS[g], groups[g]) for g in GROUP_HEADINGS]
    ordered += [("Other symptoms", symptoms), ("History and risk factors", history + travel),
                ("Other answers", others)]
    return ordered


def _assemble(opening: str, sections: list[tuple[str, list[str]]], keep: int, total: int) -> str:
    parts = [opening]
    left = keep
    for heading, findings in sections:
        if left <= 0:
            break
        chosen = findings[:left]
        left -= len(chosen)
        if chosen:
            parts.append(f"{heading}: " + "; ".join(chosen) + ".")
    if keep < total:
        parts.append(OMITTED_SUFFIX)
    return " ".join(parts)


def render_vignette(age: int, sex: str, evidences: Iterable[str], ontology: Evidences,
                    initial_evidence: str | None = None,
                    max_chars: int = MAX_VIGNETTE_CHARS) -> str:
    """Deterministic plain-English vignette of one case (see the module docstring).

    Parameters
    ----------
    age, sex : demographics (``sex`` is ``"M"`` or ``"F"``; other values read "patient").
    evidences : DDXPlus evidence tokens (``E_xx`` or ``E_xx_@_value``).
    ontology : the parsed ``release_evidences.json``.
    initial_evidence : the binary code reported first, shown as the presenting complaint.
    max_chars : hard upper bound on the length of the returned text.
    """
    binary, valued = _collect(evidences, ontology)
    chief = initial_evidence if initial_evidence in binary else None
    if initial_evidence is not None and initial_evidence not in ontology:
        raise InputError("INITIAL_EVIDENCE", f"{initial_evidence} is not in release_evidences.json")
    opening = _opening(int(age), sex, chief, ontology)
    sections = _sections(sex, binary, valued, chief, ontology)
    total = sum(len(f) for _, f in sections)
    for keep in range(total, -1, -1):
        text = _assemble(opening, sections, keep, total)
        if len(text) <= max_chars:
            return text
    # Only the opening itself is too long: cut it at a word boundary.
    room = max_chars - len(OMITTED_SUFFIX) - 1
    head = opening[:max(room, 0)].rsplit(" ", 1)[0] if room > 0 else ""
    return (head + " " + OMITTED_SUFFIX).strip()[:max_chars]
