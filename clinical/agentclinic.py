"""AgentClinic-MedQA (extended) cases as four-option diagnosis questions.

Source: ``data/clinical_cases/agentclinic_medqa_extended.jsonl`` (214 OSCE-style cases, one
JSON object per line; see that folder's SOURCE.md).  Case ``i`` (0-based line number) becomes
item ``agentclinic-NNN`` (``i`` zero-padded to three digits).

Vignette rules:

* The first sentence is ``"A {Demographics} presents with {primary symptom}."``: the
  demographics are kept verbatim (only a capitalised first word such as "Newborn" is
  lowercased), so age-sex rules can find "35-year-old female"; "An" replaces "A" before a
  vowel sound (8-, 11-, 18-, 80-year-old ...); a comma follows demographics that contain
  one; the symptom loses its final full stop and its first letter is lowercased unless the
  first word is an acronym.  A case without a primary symptom "presents for evaluation".
* Then the history text, "Other symptoms: a; b; c.", and each further Patient_Actor field
  in stored order (past medical history, medications, social history, review of systems,
  ...) as ``"Name: value."``; then one sentence per group of the examination findings and
  the test results.  Nested objects are flattened into ``"Name: value"`` phrases joined by
  "; ", inner names appended to their parent's ("Chest CT findings: ...").
* The question ends with "Which is the most likely diagnosis?".  The whole text is capped at
  :data:`MAX_CHARS`: test-result sentences are cut (at a "; " boundary) or dropped from the
  end first, then examination sentences, then the other patient fields; the first sentence
  and the final question are never cut.  ``Objective_for_Doctor`` and
  ``Management_and_Follow_Up`` are never shown (the latter can name the diagnosis).

Options are the correct diagnosis plus three distractors, other cases' diagnoses, drawn
with ``numpy.random.default_rng([20261123, i])``; the same generator then orders the four.
Two diagnoses count as the same (so neither can be a distractor for the other, nor two
distractors together) when, after lowercasing and dropping parentheses, possessive "'s" and
punctuation, one's words are a subset of the other's ("Hemophilia" / "Hemophilia A") or the
pair is listed in :data:`SAME_DIAGNOSIS` ("Chickenpox" / "Varicella").

Required per case: ``Patient_Actor`` with non-empty ``Demographics`` and ``History`` and a
``Symptoms`` object, ``Physical_Examination_Findings`` and ``Test_Results`` objects, and a
non-empty ``Correct_Diagnosis``.  A missing or mistyped field raises
:class:`~common.errors.InputError` naming the file line; no case is skipped.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from clinical.data_files import FIELD, read_jsonl
from common.errors import InputError
from common.fields import Instance, Seq, Text, bare, check

__all__ = ["AgentClinicCase", "RELATIVE_PATH", "SOURCE_NAME", "MAX_CHARS", "SEED", "SAME_DIAGNOSIS",
           "FINAL_QUESTION", "agentclinic_cases", "case_vignette"]

RELATIVE_PATH = "clinical_cases/agentclinic_medqa_extended.jsonl"
SOURCE_NAME = "agentclinic-medqa-extended"
MAX_CHARS = 1800
SEED = 20261123
N_DISTRACTORS = 3
FINAL_QUESTION = "Which is the most likely diagnosis?"
SAME_DIAGNOSIS: tuple[tuple[str, str], ...] = (
    ("chickenpox", "varicella"),
    ("progressive multifocal encephalopathy", "progressive multifocal leukoencephalopathy"),
    ("lung cancer", "apical lung tumor"),
)
_LETTERS = "ABCD"
_SKIPPED = ("Demographics", "History", "Symptoms")
_GENERIC = {"Findings", "Result", "Results", "Report", "Impression", "Description", "Value"}


@dataclass(frozen=True)
class AgentClinicCase:
    """One case as a question: ``options`` are the four texts in letter order A-D."""

    where: str
    item_id: str
    question: str
    options: tuple[str, ...]
    answer: str
    diagnosis: str


class _CaseError(Exception):
    """A problem with one field of one case."""


_CASE = bare(_CaseError)  # its messages name the field themselves


def _obj(parent: dict[str, object], key: str) -> dict[str, object]:
    return check(key, parent.get(key), Instance(dict), error=_CASE,
                 msg=lambda v: f"{key}: {'missing' if v is None else 'must be an object'}")


def _str(parent: dict[str, object], key: str) -> str:
    return check(key, parent.get(key), Text(), error=_CASE,
                 msg=lambda v: f"{key}: {'missing' if v is None else 'must be a non-empty string'}").strip()


def _human(key: str) -> str:
    """``Vital_Signs`` -> ``Vital signs``: words after the first are lowercased unless they
    are acronyms or mixed case (CT, HbA1c)."""
    words = key.replace("_", " ").split()
    return " ".join([words[0]] + [w.lower() if w[:1].isupper() and w[1:].islower() else w
                                  for w in words[1:]]) if words else key


def _leaf(value: object) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if value is None:
        return "not recorded"
    if isinstance(value, list):
        return ", ".join(_leaf(v) if not isinstance(v, dict) else "; ".join(_phrases(v)) for v in value)
    return str(value).strip().rstrip(".")


def _phrases(obj: dict[str, object], prefix: str = "") -> list[str]:
    """``"Name: value"`` phrases of a nested object, inner names appended to the parent's."""
    out: list[str] = []
    for key, value in obj.items():
        label = f"{prefix} {_human(key)[:1].lower()}{_human(key)[1:]}" if prefix else _human(key)
        if isinstance(value, dict):
            out.extend(_phrases(value, label))
        else:
            out.append(f"{label}: {_leaf(value)}")
    return out


def _sentence(label: str, value: object) -> str:
    """``"Label: phrases."``; an object whose only entry is a generic name such as
    "Findings" is named after both ("Electromyography findings: ...")."""
    if isinstance(value, dict) and len(value) == 1 and set(value) <= _GENERIC:
        return "; ".join(_phrases(value, label)) + "."
    body = "; ".join(_phrases(value)) if isinstance(value, dict) else _leaf(value)
    return f"{label}: {body}."


def _article(demo: str) -> str:
    digits = re.match(r"\d+", demo)
    if digits:
        number = digits.group()
        vowel = number.startswith("8") or (len(number) in (2, 4) and number[:2] in ("11", "18"))
    else:
        vowel = demo[:1].lower() in "aeiou"
    return "An" if vowel else "A"


def _first_sentence(demo: str, symptoms: dict[str, object]) -> str:
    if re.match(r"[A-Z][a-z]", demo):
        demo = demo[0].lower() + demo[1:]
    comma = "," if "," in demo else ""
    primary = symptoms.get("Primary_Symptom")
    if primary is None:
        return f"{_article(demo)} {demo}{comma} presents for evaluation."
    check("Primary_Symptom", primary, Text(msg="Primary_Symptom: must be a non-empty string"), error=_CASE)
    text = primary.strip().rstrip(".")
    first = text.split()[0]
    if not (len(first) > 1 and first[1].isupper()):
        text = text[0].lower() + text[1:]
    return f"{_article(demo)} {demo}{comma} presents with {text}."


def _patient_parts(actor: dict[str, object]) -> list[str]:
    history = _str(actor, "History")
    parts = [history if history[-1] in ".!?" else history + "."]
    secondary = _obj(actor, "Symptoms").get("Secondary_Symptoms")
    if secondary is not None:
        check("Secondary_Symptoms", secondary, Seq(Instance(str), types=(list,)), error=_CASE,
              msg="Secondary_Symptoms: must be a list of strings")
        if secondary:
            parts.append("Other symptoms: " + "; ".join(s.strip().rstrip(".") for s in secondary) + ".")
    parts += [_sentence(_human(k), v) for k, v in actor.items() if k not in _SKIPPED]
    return parts


def _fit(parts: list[tuple[int, str]], cap: int) -> list[str]:
    """Cut or drop the last sentence of the highest tier until the joined text fits ``cap``."""
    parts = list(parts)
    while len(" ".join(p for _, p in parts)) > cap and any(t for t, _ in parts):
        tier = max(t for t, _ in parts)
        idx = max(i for i, (t, _) in enumerate(parts) if t == tier)
        excess = len(" ".join(p for _, p in parts)) - cap
        text = parts[idx][1]
        cut = text[: max(len(text) - excess - 1, 0)].rfind("; ")
        if cut > text.find(":") + 2 and cut > 0:
            parts[idx] = (tier, text[:cut] + ".")
        else:
            del parts[idx]
    return [p for _, p in parts]


def case_vignette(case: dict[str, object], cap: int = MAX_CHARS) -> str:
    """The question text of one stored case (rules in the module docstring)."""
    exam = _obj(case, "OSCE_Examination")
    actor = _obj(exam, "Patient_Actor")
    first = _first_sentence(_str(actor, "Demographics"), _obj(actor, "Symptoms"))
    parts = [(0, first)] + [(1, p) for p in _patient_parts(actor)]
    parts += [(2, _sentence(_human(k), v)) for k, v in _obj(exam, "Physical_Examination_Findings").items()]
    parts += [(3, _sentence(_human(k), v)) for k, v in _obj(exam, "Test_Results").items()]
    return " ".join(_fit(parts + [(0, FINAL_QUESTION)], cap))


def _key(diagnosis: str) -> frozenset[str]:
    text = re.sub(r"\([^)]*\)", " ", diagnosis.lower())
    text = re.sub(r"['\u2019]s\b", "", text)
    return frozenset(re.findall(r"[a-z0-9]+", text))


def _same(a: str, b: str) -> bool:
    ka, kb = _key(a), _key(b)
    if ka <= kb or kb <= ka:
        return True
    pairs = {(frozenset(x.split()), frozenset(y.split())) for x, y in SAME_DIAGNOSIS}
    return (ka, kb) in pairs or (kb, ka) in pairs


def _options(index: int, correct: str, pool: list[str]) -> tuple[tuple[str, ...], str]:
    rng = np.random.default_rng([SEED, index])
    chosen: list[str] = []
    for j in rng.permutation(len(pool)):
        candidate = pool[int(j)]
        if not _same(candidate, correct) and not any(_same(candidate, c) for c in chosen):
            chosen.append(candidate)
            if len(chosen) == N_DISTRACTORS:
                break
    if len(chosen) < N_DISTRACTORS:
        raise _CaseError("Correct_Diagnosis: too few different diagnoses in the file for distractors")
    four = [correct] + chosen
    order = [int(k) for k in rng.permutation(len(four))]
    return tuple(four[k] for k in order), _LETTERS[order.index(0)]


def agentclinic_cases(data_dir: Path) -> list[AgentClinicCase]:
    """Every case of the shipped file as a question, in file order."""
    rows = read_jsonl(data_dir, RELATIVE_PATH)
    built: list[tuple[str, int, str, str]] = []
    for where, row, line_no in rows:
        try:
            diagnosis = _str(_obj(row, "OSCE_Examination"), "Correct_Diagnosis")
            built.append((where, line_no - 1, case_vignette(row), diagnosis))
        except _CaseError as exc:
            raise InputError(FIELD, f"{where}: {exc}") from None
    pool: list[str] = []
    for _, _, _, diagnosis in built:
        if not any(_key(diagnosis) == _key(p) for p in pool):
            pool.append(diagnosis)
    out: list[AgentClinicCase] = []
    for where, index, question, diagnosis in built:
        try:
            options, answer = _options(index, diagnosis, pool)
        except _CaseError as exc:
            raise InputError(FIELD, f"{where}: {exc}") from None
        out.append(AgentClinicCase(where, f"agentclinic-{index:03d}", question, options, answer, diagnosis))
    return out
