"""Perturbations for robustness and consistency: typos, rewording, distractors, shuffles."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clinical.questions import QuestionItem
from common.errors import InputError
from sag.evaluation.perturb import (
    KEYBOARD,
    RewordRules,
    add_typos,
    insert_distractor,
    load_distractor_templates,
    load_reword_rules,
    perturbed_id,
    reword,
    shuffle_options,
)

VIGNETTE = ("A 45-year-old man presents to the emergency department with shortness of breath and chest pain "
            "for the past 3 days. He complains of fever. His temperature is 38.5°C (101.3°F), pulse is 112/min, "
            "respirations are 24/min, and blood pressure is 95/60 mm Hg. Serum lactate is 4.1 mmol/L. "
            "Physical examination reveals crackles over the right lower lobe.")
SAMPLES = (
    VIGNETTE,
    ("A 62-year-old woman is brought to the emergency department by her husband. She has a history of "
     "hypertension and a family history of colon cancer. She denies any recent travel and denies having a "
     "rash. She currently takes lisinopril. She does not smoke and drinks alcohol occasionally. Her symptoms "
     "began 2 days ago and she subsequently underwent a CT scan. Additionally, laboratory studies show "
     "anemia. Her past medical history is notable for asthma diagnosed 10 years ago. She has had "
     "approximately 5 kg of weight loss. She is otherwise healthy and is admitted to the hospital. Her "
     "physician notes difficulty breathing and abdominal pain. The biopsy demonstrates granulomas "
     "consistent with sarcoidosis. She denies fever. Which of the following is the most likely diagnosis?"),
    "Which of the following is the most appropriate next step in management?",
    "Which of the following is the best initial test?",
    "Which of the following is the most likely cause of this patient's symptoms?",
    "Which of the following is true about this drug?",
    "A 30-year-old man presents with a cough.",
    "He denies being short of breath at rest.",
)
ITEM = QuestionItem("q1", VIGNETTE + " Which of the following is the most likely diagnosis?",
                    (("A", "Pneumonia"), ("B", "Pulmonary embolism"), ("C", "Heart failure"), ("D", "Asthma.")),
                    "A", "medqa")


def long_text() -> str:
    return " ".join([VIGNETTE] * 60)


def changed_words(before: str, after: str) -> int:
    return sum(a != b for a, b in zip(before.split(" "), after.split(" ")))


def test_typo_rate_is_near_the_requested_rate() -> None:
    text = long_text()
    out = add_typos(text, np.random.default_rng(7))
    eligible = len(re.findall(r"(?<![A-Za-z0-9/-])[a-z][a-z]{3,}(?![A-Za-z0-9/])", text))
    assert len(out.split(" ")) == len(text.split(" "))
    rate = changed_words(text, out) / eligible
    assert 0.03 <= rate <= 0.07, rate


def test_typos_never_touch_digits_units_or_acronyms() -> None:
    text = long_text() + " HbA1c 7.2%, WBC 12,000/mm3, BUN 22 mg/dL, 140 mmol/L, answer B."
    out = add_typos(text, np.random.default_rng(3), rate=1.0)
    assert re.findall(r"\d", out) == re.findall(r"\d", text)
    assert re.findall(r"[^\w\s]", out) == re.findall(r"[^\w\s]", text)
    for kept in ("HbA1c", "WBC", "BUN", "mg/dL", "mmol/L", " B.", "Hg", "45-year-old", "3 days"):
        assert kept in out


def test_each_typo_is_one_small_edit_with_the_case_kept() -> None:
    out = add_typos("Pneumonia", np.random.default_rng(0), rate=1.0)
    assert out != "Pneumonia" and out[0] == "P" and abs(len(out) - len("Pneumonia")) <= 1
    assert all(set(near) <= set("abcdefghijklmnopqrstuvwxyz") and near for near in KEYBOARD.values())


def test_typos_are_deterministic_per_seed() -> None:
    text = long_text()
    assert add_typos(text, np.random.default_rng(11)) == add_typos(text, np.random.default_rng(11))
    assert add_typos(text, np.random.default_rng(11)) != add_typos(text, np.random.default_rng(12))
    assert add_typos(text, np.random.default_rng(11), rate=0.0) == text


def test_typo_arguments_are_checked() -> None:
    with pytest.raises(InputError, match="rate"):
        add_typos("text", np.random.default_rng(0), rate=1.5)
    with pytest.raises(InputError, match="rng"):
        add_typos("text", 3)  # type: ignore[arg-type]


def test_reword_is_whole_word_and_keeps_the_capital() -> None:
    rules = RewordRules((("presents to", "comes to"), ("history of", "past record of")))
    assert reword("He presents to the clinic. Presents to us.", rules) == "He comes to the clinic. Comes to us."
    assert reword("A history  of asthma; prehistory of none.", rules) == "A past record of asthma; prehistory of none."
    assert reword("year-old", rules) == "year-old"


def test_shipped_reword_rules_load_and_each_one_changes_a_sample() -> None:
    rules = load_reword_rules()
    assert 35 <= len(rules.rules) <= 50
    for rule in rules.rules:
        one = RewordRules((rule,))
        assert any(reword(text, one) != text for text in SAMPLES), rule
    out = reword(VIGNETTE, rules)
    assert out.startswith("A 45-year-old man comes to the emergency room with breathlessness")
    assert re.findall(r"\d", out) == re.findall(r"\d", VIGNETTE)


def test_reword_rules_file_errors(tmp_path: Path) -> None:
    bad = tmp_path / "rules.json"
    bad.write_text(json.dumps({"about": "x", "rules": [["only one"]]}), encoding="utf-8")
    with pytest.raises(InputError):
        load_reword_rules(bad)
    with pytest.raises(InputError, match="not found"):
        load_reword_rules(tmp_path / "missing.json")


def test_distractor_goes_before_the_final_question_and_names_a_wrong_option() -> None:
    templates = load_distractor_templates()
    assert len(templates) >= 4
    pointed = set()
    for seed in range(40):
        changed, letter = insert_distractor(ITEM, np.random.default_rng(seed))
        assert (changed.item_id, changed.options, changed.answer) == (ITEM.item_id, ITEM.options, ITEM.answer)
        assert letter != ITEM.answer and letter in ITEM.letters
        prefix = VIGNETTE + " "
        assert changed.question.startswith(prefix)
        assert changed.question.endswith("Which of the following is the most likely diagnosis?")
        sentence = changed.question[len(prefix): -len("Which of the following is the most likely diagnosis?")]
        assert ITEM.option_text(letter).rstrip(".") in sentence
        assert "Pneumonia" not in sentence
        pointed.add(letter)
    assert pointed == {"B", "C", "D"}


def test_distractor_goes_at_the_end_without_a_question_sentence() -> None:
    item = QuestionItem("q2", "Pick the diagnosis.", (("A", "Gout"), ("B", "Lupus")), "A", "custom")
    changed, letter = insert_distractor(item, np.random.default_rng(0), templates=("Someone said {option}.",))
    assert (changed.question, letter) == ("Pick the diagnosis. Someone said Lupus.", "B")


option_lists = st.lists(st.text(alphabet="abcdefgh ", min_size=1, max_size=8).map(lambda s: s.strip() or "x"),
                        min_size=2, max_size=10, unique=True)


@settings(max_examples=200, deadline=None)
@given(texts=option_lists, answer=st.integers(min_value=0, max_value=9), seed=st.integers(0, 2**32 - 1))
def test_shuffle_keeps_the_correct_text_under_the_new_letter(texts: list[str], answer: int, seed: int) -> None:
    letters = "ABCDEFGHIJ"[: len(texts)]
    item = QuestionItem("q", "Which?", tuple(zip(letters, texts)), letters[answer % len(texts)], "custom")
    out = shuffle_options(item, np.random.default_rng(seed))
    assert out.letters == item.letters
    assert sorted(text for _, text in out.options) == sorted(texts)
    assert out.option_text(out.answer) == item.option_text(item.answer)
    assert (out.item_id, out.question) == (item.item_id, item.question)
    assert shuffle_options(item, np.random.default_rng(seed)) == out


def test_perturbed_id() -> None:
    assert perturbed_id("medqa-0001", "ling") == "medqa-0001~ling"
    with pytest.raises(InputError):
        perturbed_id("medqa-0001", "")
