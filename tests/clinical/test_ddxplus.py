"""DDXPlus 8-way task: shipped data, vignette rendering, CAL/TEST splits, loss."""
from __future__ import annotations

import ast
import json
import re
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from clinical.ddxplus import (
    DEFAULT_CSV,
    HIGH_RISK,
    LABELS,
    PATHOLOGY_TO_LABEL,
    Case,
    ddxplus_loss,
    load_ddxplus8,
    load_evidences,
    read_ddxplus8,
    stratified_split,
)
from clinical.ddxplus_vignette import OMITTED_SUFFIX, render_vignette
from common.errors import InputError

DATA = DEFAULT_CSV.parent
EXPECTED_COUNTS = {"Anaphylaxis": 89, "Pulmonary_embolism": 81, "NSTEMI_STEMI": 56,
                   "Myocarditis": 37, "URTI": 200, "Viral_pharyngitis": 185, "GERD": 92,
                   "Bronchitis": 85}
# Stems that would give a label away, whatever the spelling of the label.
LEAK_STEMS = ("anaphyla", "embolism", "nstemi", "stemi", "myocardit", "urti",
              "upper respiratory", "pharyngit", "gerd", "reflux", "bronchitis")


@pytest.fixture(scope="module")
def cases() -> list[Case]:
    return load_ddxplus8()


@pytest.fixture(scope="module")
def ontology() -> dict:
    return load_evidences(DATA / "release_evidences.json")


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return pd.read_csv(DEFAULT_CSV, dtype=str, keep_default_na=False)


def test_shipped_files_and_counts(cases: list[Case]) -> None:
    assert {p.name for p in DATA.iterdir()} == {
        "SOURCE.md", "ddxplus_8way_subset.csv", "release_evidences.json", "release_conditions.json"}
    assert len(cases) == 825
    assert Counter(c.label_name for c in cases) == EXPECTED_COUNTS


def test_labels_mapping_and_cases(cases: list[Case]) -> None:
    assert LABELS == ("Anaphylaxis", "Pulmonary_embolism", "NSTEMI_STEMI", "Myocarditis",
                      "URTI", "Viral_pharyngitis", "GERD", "Bronchitis")
    assert HIGH_RISK == LABELS[:4]
    conditions = json.loads((DATA / "release_conditions.json").read_text(encoding="utf-8"))
    assert set(PATHOLOGY_TO_LABEL) <= set(conditions)
    assert sorted(PATHOLOGY_TO_LABEL.values()) == sorted(LABELS)
    for case in cases:
        assert 0 <= case.label < 8 and LABELS[case.label] == case.label_name
        assert case.sex in ("M", "F") and case.evidences
    assert len({c.case_id for c in cases}) == len(cases)


def test_rows_outside_the_labels_are_dropped_and_counted(tmp_path: Path, frame: pd.DataFrame) -> None:
    extra = frame.head(3).copy()
    extra["PATHOLOGY"] = ["Pneumonia", "Pneumonia", "Croup"]
    small = pd.concat([frame.head(5), extra])
    small.to_csv(tmp_path / "rows.csv", index=False)
    (tmp_path / "release_evidences.json").write_bytes((DATA / "release_evidences.json").read_bytes())
    data = read_ddxplus8(tmp_path / "rows.csv")
    assert len(data.cases) == 5 and data.n_rows == 8
    assert data.dropped == {"Croup": 1, "Pneumonia": 2} and data.n_dropped == 3
    assert len(load_ddxplus8(tmp_path / "rows.csv")) == 5


def test_bad_input_names_the_field(tmp_path: Path, frame: pd.DataFrame) -> None:
    (tmp_path / "release_evidences.json").write_bytes((DATA / "release_evidences.json").read_bytes())
    bad = frame.head(2).copy()
    bad["EVIDENCES"] = "['E_91', 'E_9999']"
    bad.to_csv(tmp_path / "bad.csv", index=False)
    with pytest.raises(InputError) as err:
        read_ddxplus8(tmp_path / "bad.csv")
    assert err.value.field == "EVIDENCES"
    with pytest.raises(InputError) as err:
        read_ddxplus8(tmp_path / "missing.csv")
    assert err.value.field == "path"


def test_rendering_is_deterministic_and_order_free(cases: list[Case], ontology: dict) -> None:
    again = load_ddxplus8()
    assert [c.text for c in again] == [c.text for c in cases]
    case = cases[0]
    shuffled = list(reversed(case.evidences))
    assert render_vignette(case.age, case.sex, shuffled, ontology, case.initial_evidence) == case.text


def test_vignette_has_demographics_and_evidence_phrases(cases: list[Case]) -> None:
    for case in cases:
        text = case.text
        assert f"{case.age}-year-old" in text or case.age == 0
        words = {"M": ("man", "boy"), "F": ("woman", "girl")}[case.sex]
        assert re.search(rf"\b({words[0]}|{words[1]})\b", text)
        assert "Presenting complaint:" in text
        assert any(h in text for h in ("Pain:", "Other symptoms:", "Skin lesions:", "Swelling:"))
        # No untranslated second person, no raw codes, no fallback phrasing on shipped data.
        assert not re.search(r"\b(you|your)\b", text, flags=re.IGNORECASE)
        assert not re.search(r"\b[EV]_\d+", text) and "answered yes" not in text


def test_example_vignette_text(cases: list[Case]) -> None:
    text = cases[0].text  # row 0: a 31-year-old woman with diarrhoea as the first complaint
    assert text.startswith("A 31-year-old woman. Presenting complaint: she has had diarrhea")
    assert "Pain: described as sharp;" in text and "intensity 5/10" in text
    assert "has a known severe food allergy" in text


def test_no_label_or_differential_leaks(cases: list[Case], frame: pd.DataFrame) -> None:
    conditions = json.loads((DATA / "release_conditions.json").read_text(encoding="utf-8"))
    ontology_text = (DATA / "release_evidences.json").read_text(encoding="utf-8").lower()
    # Condition names that occur in the ontology's own questions (e.g. "Have you ever had
    # pneumonia?") are legitimate history findings; every other name must never appear.
    names = {n for key, c in conditions.items() for n in (key, c["cond-name-eng"])}
    forbidden = {n.lower() for n in names
                 if not re.search(rf"\b{re.escape(n.lower())}\b", ontology_text)}
    forbidden |= {label.lower() for label in LABELS} | {k.lower() for k in PATHOLOGY_TO_LABEL}
    pattern = re.compile(r"\b(" + "|".join(sorted(map(re.escape, forbidden))) + r")\b")
    for case, differential in zip(cases, frame["DIFFERENTIAL_DIAGNOSIS"]):
        low = case.text.lower()
        assert pattern.search(low) is None, (case.case_id, pattern.search(low))
        assert not any(stem in low.replace("_", " ") for stem in LEAK_STEMS), case.case_id
        # The differential's names are all in ``forbidden`` or in the ontology itself.
        assert {n.lower() for n, _ in ast.literal_eval(differential)} <= forbidden | {
            n.lower() for n in names}
        assert not re.search(r"0\.\d{4,}", case.text)  # no differential probabilities


def test_max_length_and_truncation_rule(cases: list[Case], ontology: dict) -> None:
    assert max(len(c.text) for c in cases) <= 1200
    long_case = max(cases, key=lambda c: len(c.evidences))
    short = render_vignette(long_case.age, long_case.sex, long_case.evidences, ontology,
                            long_case.initial_evidence, max_chars=400)
    assert len(short) <= 400 and short.endswith(OMITTED_SUFFIX)
    full = render_vignette(long_case.age, long_case.sex, long_case.evidences, ontology,
                           long_case.initial_evidence, max_chars=100_000)
    assert OMITTED_SUFFIX not in full
    # The kept part is a prefix of the full rendering (findings dropped from the end).
    kept = short[: -len(OMITTED_SUFFIX)].rstrip().rstrip(".")
    assert full.startswith(kept)


def test_split_disjoint_stratified_reproducible(cases: list[Case]) -> None:
    cal, test, notes = stratified_split(cases, 80, 160, rng=np.random.default_rng(3))
    assert notes == [] and len(cal) == 80 and len(test) == 160
    assert not {c.case_id for c in cal} & {c.case_id for c in test}
    assert set(Counter(c.label for c in cal).values()) == {10}
    assert set(Counter(c.label for c in test).values()) == {20}
    cal2, test2, _ = stratified_split(cases, 80, 160, rng=np.random.default_rng(3))
    assert [c.case_id for c in cal2] == [c.case_id for c in cal]
    assert [c.case_id for c in test2] == [c.case_id for c in test]
    cal3, test3, _ = stratified_split(cases, 80, 160, rng=np.random.default_rng(4))
    assert {c.case_id for c in cal3} != {c.case_id for c in cal}
    assert {c.case_id for c in test3} != {c.case_id for c in test}


def test_short_class_uses_what_exists_and_notes_it(cases: list[Case]) -> None:
    few_myo = [c for c in cases if c.label_name != "Myocarditis"]
    few_myo += [c for c in cases if c.label_name == "Myocarditis"][:12]
    cal, test, notes = stratified_split(few_myo, 80, 160, rng=np.random.default_rng(0))
    assert len(cal) == 80 and len(test) == 160
    assert not {c.case_id for c in cal} & {c.case_id for c in test}
    n_myo = sum(c.label_name == "Myocarditis" for c in cal + test)
    assert n_myo == 12
    assert sum(c.label_name == "Myocarditis" for c in cal) == 4
    assert len(notes) == 1 and notes[0].startswith("Myocarditis: only 12 cases")
    per_class = Counter(c.label_name for c in cal + test)
    assert {v for k, v in per_class.items() if k != "Myocarditis"} <= {32, 33}


def test_small_pool_note_and_bad_arguments(cases: list[Case]) -> None:
    pool = cases[:30]
    cal, test, notes = stratified_split(pool, 80, 160, rng=np.random.default_rng(0))
    assert len(cal) + len(test) == 30 and len(cal) == 10
    assert notes[0].startswith("Only 30 cases are available")
    with pytest.raises(InputError) as err:
        stratified_split(cases, 80, 160, rng=0)  # type: ignore[arg-type]
    assert err.value.field == "rng"
    with pytest.raises(InputError):
        stratified_split(cases, -1, 160, rng=np.random.default_rng(0))


def test_loss_shape_and_values() -> None:
    loss = ddxplus_loss()
    assert loss.shape == (8, 8)
    assert np.all(np.diag(loss) == 0)
    for d in range(8):
        for y in range(8):
            if d != y:
                assert loss[d, y] == (5.0 if y < 4 else 1.0)
    assert ddxplus_loss(l_high=3.0)[4, 0] == 3.0
    with pytest.raises(InputError):
        ddxplus_loss(l_high=-1.0)
