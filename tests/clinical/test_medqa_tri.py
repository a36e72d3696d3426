"""MedQA-Tri: stem filter, keyword mapping, fallback, shipped file, loss and split."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from clinical.medqa_stem_filter import ask_sentence
from clinical.medqa_tri import (
    ANSWER_PREFIX,
    DEFAULT_PATH,
    HIGH_RISK,
    LABELS,
    build_medqa_tri,
    is_diagnosis_stem,
    load_medqa_tri,
    map_specialty,
    medqa_tri_loss,
    stratified_split,
)
from common.errors import InputError

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "data" / "medqa" / "medqa_us_4opt_test.jsonl"
VIGNETTE = "A 54-year-old man comes to the emergency department because of chest pain. "


@pytest.mark.parametrize("stem", [
    VIGNETTE + "Which of the following is the most likely diagnosis?",
    VIGNETTE + "What is the most likely cause of this patient's symptoms?",
    VIGNETTE + "Which of the following is the most likely underlying condition?",
    VIGNETTE + "Which of the following is the most likely etiology of this patient's condition?",
    VIGNETTE + "Which of the following best explains these findings?",
    VIGNETTE + "Which of the following is the most likely causal organism?",
    VIGNETTE + "Laboratory studies show:\nSodium 140 mEq/L\nWhat is the most likely diagnosis?\"",
])
def test_filter_accepts_diagnosis_stems(stem: str) -> None:
    assert is_diagnosis_stem(stem)


@pytest.mark.parametrize("stem", [
    VIGNETTE + "Which of the following is the most appropriate next step in management?",
    VIGNETTE + "Which of the following is the best treatment for this patient's most likely diagnosis?",
    VIGNETTE + "Which of the following is the mechanism of action of the drug most likely prescribed?",
    VIGNETTE + "Which of the following drugs is the most likely cause of these findings?",
    VIGNETTE + "Which of the following is most likely to confirm the diagnosis?",
    VIGNETTE + "Which of the following is the most appropriate response by the physician?",
    VIGNETTE + "What is the sensitivity of the new test in this study?",
    VIGNETTE + "This patient is at increased risk for which of the following?",
    VIGNETTE + "Which of the following is the most likely finding on examination?",
])
def test_filter_rejects_other_stems(stem: str) -> None:
    assert not is_diagnosis_stem(stem)


def test_ask_sentence_is_the_final_question() -> None:
    stem = VIGNETTE + "He was treated with aspirin. What is the most likely diagnosis? Serum:\nNa+ 140"
    assert ask_sentence(stem) == "What is the most likely diagnosis?"


@pytest.mark.parametrize("stem, answer, label", [
    ("A man has crushing chest pain and ST elevations on ECG.", "Acute inferior myocardial infarction",
     "Cardiology"),
    ("A smoker has progressive dyspnea and wheezing; spirometry is abnormal.",
     "Chronic obstructive pulmonary disease", "Pulmonology"),
    ("A woman has a resting tremor and a shuffling gait.", "Parkinson disease", "Neurology"),
    ("A man has bloody diarrhea; colonoscopy shows continuous mucosal inflammation.",
     "Ulcerative colitis", "Gastroenterology"),
    ("A woman has weight gain, cold intolerance and a high TSH.", "Hashimoto thyroiditis",
     "Endocrinology"),
    ("A man has fever and chills; blood cultures grow gram-positive cocci in clusters.",
     "Staphylococcus aureus", "Infectious_Disease"),
    ("A boy has periorbital edema and proteinuria.", "Minimal change disease", "Renal_Urology"),
])
def test_mapping_each_specialty(stem: str, answer: str, label: str) -> None:
    got, reason = map_specialty(stem, answer)
    assert got == label
    assert reason.startswith("keyword:") and "answer[" in reason


def test_answer_outweighs_stem() -> None:
    got, _ = map_specialty("She has a cough and shortness of breath.", "Cardiac tamponade")
    assert got == "Cardiology"


@pytest.mark.parametrize("stem, answer", [
    ("A 30-year-old man is brought in by his partner.", "Reaction formation"),  # no keyword
    ("A woman is seen in clinic.", "Asthma and angina"),  # tie: Pulmonology 9 vs Cardiology 9
    ("A woman has low mood and anhedonia.", "Major depressive disorder"),  # out of scope
])
def test_ambiguous_or_out_of_scope_items_are_skipped(stem: str, answer: str) -> None:
    got, reason = map_specialty(stem, answer)
    assert got is None
    assert reason.startswith("skipped:")


def _write_source(path: Path, rows: list[tuple[str, str]]) -> Path:
    with path.open("w", encoding="utf-8") as handle:
        for question, answer in rows:
            handle.write(json.dumps({"question": question, "answer": answer}) + "\n")
    return path


@pytest.fixture()
def small_source(tmp_path: Path) -> Path:
    ask = " Which of the following is the most likely diagnosis?"
    return _write_source(tmp_path / "src.jsonl", [
        ("A man has chest pain." + ask, "Hypertrophic cardiomyopathy"),               # keyword
        ("A man has chest pain. What is the best next step in management?", "Aspirin"),  # not diag
        ("A man is brought in by his partner." + ask, "Reaction formation"),         # skip -> fb ok
        ("A woman has low mood." + ask, "Major depressive disorder"),                 # skip -> fb bad
        ("A child is irritable." + ask, "Unexplained condition"),                     # skip -> fb None
    ])


def test_build_without_fallback_drops_and_counts(small_source: Path) -> None:
    items, report = build_medqa_tri(small_source)
    assert [i.item_id for i in items] == ["medqa-0000"]
    assert (report.total, report.diagnosis_style, report.keyword_mapped) == (5, 4, 1)
    assert (report.fallback_mapped, report.dropped, report.fallback_invalid) == (0, 3, 0)
    assert report.per_class["Cardiology"] == 1 and sum(report.per_class.values()) == 1
    item = items[0]
    assert item.label == "Cardiology" and LABELS[item.label_index] == item.label
    assert item.mapping == "keyword" and "cardiomyopathy" in item.reason
    assert item.text.endswith(ANSWER_PREFIX + "Hypertrophic cardiomyopathy")


def test_build_with_fallback_maps_valid_and_drops_invalid(small_source: Path) -> None:
    answers = {"Reaction formation": " Neurology ", "Major depressive disorder": "Psychiatry",
               "Unexplained condition": None}
    seen: list[tuple[str, str]] = []

    def fake_llm(stem: str, answer: str) -> str | None:
        seen.append((stem, answer))
        return answers[answer]

    items, report = build_medqa_tri(small_source, fallback=fake_llm)
    assert [a for _, a in seen] == list(answers)  # only heuristic-skipped, diagnosis-style items
    assert [(i.item_id, i.label, i.mapping) for i in items] == [
        ("medqa-0000", "Cardiology", "keyword"), ("medqa-0002", "Neurology", "fallback")]
    assert items[1].reason.startswith("fallback: Neurology")
    assert (report.keyword_mapped, report.fallback_mapped) == (1, 1)
    assert (report.dropped, report.fallback_invalid) == (2, 2)
    assert report.per_class_fallback["Neurology"] == 1


def test_build_rejects_bad_source(tmp_path: Path) -> None:
    with pytest.raises(InputError):
        build_medqa_tri(tmp_path / "missing.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "Q?"}\n', encoding="utf-8")
    with pytest.raises(InputError, match="answer"):
        build_medqa_tri(bad)


@pytest.fixture(scope="module")
def shipped() -> list:
    return load_medqa_tri()


def test_shipped_file_matches_a_fresh_build(shipped: list) -> None:
    items, report = build_medqa_tri(SOURCE)
    assert shipped == items  # the shipped file is exactly what the script produces
    assert report.total == 1273 and report.fallback_mapped == 0
    assert report.keyword_mapped == len(shipped)
    assert report.diagnosis_style == report.keyword_mapped + report.dropped
    assert report.per_class == dict(Counter(i.label for i in shipped))
    assert set(report.per_class) == set(LABELS)


def test_shipped_items_are_valid(shipped: list) -> None:
    source = [json.loads(line) for line in SOURCE.read_text(encoding="utf-8").splitlines()]
    assert DEFAULT_PATH.is_file() and len(shipped) > 200
    assert len({i.item_id for i in shipped}) == len(shipped)
    for item in shipped:
        assert item.label in LABELS and LABELS[item.label_index] == item.label
        assert item.mapping == "keyword" and item.reason.startswith("keyword:")
        row = source[int(item.item_id.split("-")[1])]
        assert item.text.endswith(ANSWER_PREFIX + row["answer"].strip())
        assert item.text.startswith(row["question"].strip()[:200])


def test_load_rejects_unknown_label(tmp_path: Path) -> None:
    path = tmp_path / "x.jsonl"
    path.write_text(json.dumps({"item_id": "a", "label": "Psychiatry", "text": "t",
                                "mapping": "keyword", "reason": ""}) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="label"):
        load_medqa_tri(path)


def test_loss_is_three_level_with_high_risk_columns() -> None:
    loss = medqa_tri_loss()
    assert loss.shape == (7, 7) and np.all(np.diag(loss) == 0)
    for y, name in enumerate(LABELS):
        off = np.delete(loss[:, y], y)
        assert np.all(off == (5.0 if name in HIGH_RISK else 1.0))
    assert medqa_tri_loss(2.0).max() == 2.0


def test_split_is_stratified_disjoint_and_reproducible(shipped: list) -> None:
    cal, test, notes = stratified_split(shipped, rng=np.random.default_rng(7))
    assert (len(cal), len(test)) == (70, 140)
    cal_ids, test_ids = {i.item_id for i in cal}, {i.item_id for i in test}
    assert len(cal_ids) == 70 and len(test_ids) == 140 and not cal_ids & test_ids
    available = Counter(i.label for i in shipped)
    for split, n in ((cal, 70), (test, 140)):
        counts = Counter(i.label for i in split)
        assert set(counts) == set(LABELS)
        for name in LABELS:  # short classes are used in full, the others are topped up
            share = n // len(LABELS)
            assert counts[name] >= min(share, available[name] * n // 210) - 1
    short = [name for name in LABELS if available[name] < 30]
    assert len(notes) == len(short) and all(any(s in n for n in notes) for s in short)
    again = stratified_split(shipped, rng=np.random.default_rng(7))
    assert [i.item_id for i in again[0]] == [i.item_id for i in cal]
    assert [i.item_id for i in again[1]] == [i.item_id for i in test]
    other = stratified_split(shipped, rng=np.random.default_rng(8))
    assert [i.item_id for i in other[1]] != [i.item_id for i in test]
