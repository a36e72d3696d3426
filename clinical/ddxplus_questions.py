"""DDXPlus-8 cases as eight-option diagnosis questions (question benchmark ``ddxplus8``).

Each case of :func:`clinical.ddxplus.read_ddxplus8` becomes one question:

* **id**: the case id (``ddx-NNNN``), the id :mod:`clinical.training_split` and
  :mod:`clinical.datasets` use, so TRAIN and HELD-OUT are the same cases as in D-CEM's
  clinical task;
* **question**: the rendered vignette, a blank line, then :data:`FINAL_QUESTION`;
* **options**: the eight diagnoses in the fixed order of :data:`clinical.ddxplus.LABELS`
  (A = Anaphylaxis ... H = Bronchitis) under the readable names of :data:`OPTION_NAMES`;
  every item has the same options, so the answer letter is the label index;
* **answer**: the letter of the case's diagnosis;
* **meta**: ``("source", <public extract the row came from>)``.

The vignette holds no diagnosis (PATHOLOGY and DIFFERENTIAL_DIAGNOSIS never reach it).
"""
from __future__ import annotations

from pathlib import Path

from clinical.ddxplus import DEFAULT_CSV, LABELS, Case, load_ddxplus8

__all__ = ["OPTION_NAMES", "LETTERS", "FINAL_QUESTION", "RELATIVE_CSV", "OPTIONS", "question_text", "answer_letter",
           "diagnosis_of_letter", "ddxplus_cases"]

OPTION_NAMES: dict[str, str] = {
    "Anaphylaxis": "Anaphylaxis",
    "Pulmonary_embolism": "Pulmonary embolism",
    "NSTEMI_STEMI": "Myocardial infarction (NSTEMI / STEMI)",
    "Myocarditis": "Myocarditis",
    "URTI": "Upper respiratory tract infection",
    "Viral_pharyngitis": "Viral pharyngitis",
    "GERD": "Gastro-oesophageal reflux disease",
    "Bronchitis": "Bronchitis",
}
LETTERS = "ABCDEFGH"
FINAL_QUESTION = "Which of the following is the most likely diagnosis?"
RELATIVE_CSV = f"ddxplus/{DEFAULT_CSV.name}"  # under data/
OPTIONS: tuple[tuple[str, str], ...] = tuple((LETTERS[i], OPTION_NAMES[name]) for i, name in enumerate(LABELS))


def question_text(case: Case) -> str:
    """The case's vignette followed by the diagnosis question."""
    return f"{case.text}\n\n{FINAL_QUESTION}"


def answer_letter(case: Case) -> str:
    """The option letter of the case's diagnosis (its label index as A..H)."""
    return LETTERS[case.label]


def diagnosis_of_letter(letter: str) -> str:
    """The label name (:data:`clinical.ddxplus.LABELS`) an option letter stands for."""
    return LABELS[LETTERS.index(letter)]


def ddxplus_cases(data_dir: Path) -> list[Case]:
    """The cases of ``data_dir``'s DDXPlus-8 file (the shipped one under the default folder)."""
    return load_ddxplus8(data_dir / RELATIVE_CSV)
