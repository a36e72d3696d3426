"""Counterfactual demographic variants: gender swaps and stated races, from the shipped rules."""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

import pytest

from clinical.questions import load_benchmark
from common.errors import InputError
from sag.evaluation.demographics import (
    DemographicRules,
    first_sentence,
    load_demographic_rules,
    set_race,
    swap_gender,
)

MALE = ("A 45-year-old man presents with chest pain. He says his father had a heart attack at 50. "
        "Mr. Jones lives with his wife and their son; he describes himself as a healthy gentleman.")
FEMALE = ("A 45-year-old woman presents with chest pain. She says her mother had a heart attack at 50. "
          "Ms. Jones lives with her husband and their daughter; she describes herself as a healthy lady.")


@lru_cache(maxsize=None)
def rules() -> DemographicRules:
    return load_demographic_rules()


def test_rules_file_loads() -> None:
    loaded = rules()
    assert loaded.races == ("White", "Black", "Hispanic", "Asian")
    assert {"caucasian", "african american", "latino", "latina"} <= set(loaded.stated_races)
    assert ("man", "woman") in loaded.gender_pairs and ("he", "she") in loaded.gender_pairs
    assert "her" not in loaded.swaps and loaded.swaps["hers"] == "his"


def test_gender_swaps_both_ways() -> None:
    assert swap_gender(MALE, rules()) == FEMALE
    assert swap_gender(FEMALE, rules()) == MALE


def test_swapping_twice_gives_back_the_original() -> None:
    text = ("A 30-year-old male athlete says he hurt his knee. His brother drove him here; "
            "he blames himself. The boy's uncle and grandfather were present.")
    once = swap_gender(text, rules())
    assert once is not None and once != text
    assert swap_gender(once, rules()) == text


@pytest.mark.parametrize("text, expected", [
    ("She lifted her left arm.", "He lifted his left arm."),
    ("Her 2 children are well.", "His 2 children are well."),
    ("The nurse gave her a dose of aspirin.", "The nurse gave him a dose of aspirin."),
    ("We told her that the test was normal.", "We told him that the test was normal."),
    ("The doctor examined her.", "The doctor examined him."),
    ("Her mother brought her to the clinic.", "His father brought him to the clinic."),
    ("The book is hers.", "The book is his."),
])
def test_her_becomes_his_before_a_noun_and_him_otherwise(text: str, expected: str) -> None:
    assert swap_gender(text, rules()) == expected


def test_case_and_protected_words() -> None:
    text = "He has MS. The bundle of His conducts normally; MRS. is not a title."
    assert swap_gender(text, rules()) == "She has MS. The bundle of His conducts normally; MRS. is not a title."
    assert swap_gender("A 37-year-old-woman presents.", rules()) == "A 37-year-old-man presents."


@pytest.mark.parametrize("text", [
    "A 28-year-old woman who is pregnant presents with nausea. She is at 10 weeks' gestation.",
    "A 70-year-old man has an enlarged prostate. He reports nocturia.",
    "A 16-year-old girl has not had menarche. Her mother is worried.",
    "A 30-year-old G2P1 woman presents for a visit.",
    "A 25-year-old man has testicular pain.",
])
def test_sex_specific_vignettes_are_excluded(text: str) -> None:
    assert swap_gender(text, rules()) is None


def test_text_without_gendered_words_gives_none() -> None:
    assert swap_gender("A 40-year-old patient presents with a cough.", rules()) is None
    assert swap_gender("Which enzyme is deficient in MS?", rules()) is None


@pytest.mark.parametrize("text, race, expected", [
    ("A 45-year-old man presents with fever. He is tired.", "Black",
     "A 45-year-old Black man presents with fever. He is tired."),
    ("A 45-year-old African American man presents with fever.", "White",
     "A 45-year-old White man presents with fever."),
    ("A 42-year-old Caucasian male presents with hematuria.", "Asian",
     "A 42-year-old Asian male presents with hematuria."),
    ("An 8-month-old previously healthy girl is brought in.", "Hispanic",
     "An 8-month-old previously healthy Hispanic girl is brought in."),
    ("A 65-year old female presents.", "Black", "A 65-year old Black female presents."),
    ("A 2-day-old male infant has jaundice.", "Asian", "A 2-day-old Asian male infant has jaundice."),
])
def test_race_is_inserted_or_replaced_in_the_first_sentence(text: str, race: str, expected: str) -> None:
    assert set_race(text, race, rules()) == expected


@pytest.mark.parametrize("text", [
    "A newborn is found to be cyanotic. The 3-day-old boy is pale.",
    "A researcher is studying enzyme kinetics.",
    "A 50-year-old with a male partner presents.",
    "A 5-year-old boy of African descent presents with anemia.",
    "A 30-year-old man presents with a rash. He is of Ashkenazi Jewish descent.",
    "A 23-year-old white obese man presents with fatigue.",
])
def test_no_anchor_or_a_race_stated_elsewhere_gives_none(text: str) -> None:
    assert set_race(text, "Black", rules()) is None


def test_unknown_race_is_an_error() -> None:
    with pytest.raises(InputError, match="race"):
        set_race("A 45-year-old man presents.", "Martian", rules())


def test_first_sentence_skips_titles_and_decimals() -> None:
    assert first_sentence("Mr. Smith, 45, has a 38.5°C fever. He is ill.") == "Mr. Smith, 45, has a 38.5°C fever."


def test_rules_file_errors(tmp_path: Path) -> None:
    raw = json.loads(Path(__file__).resolve().parents[3].joinpath("data/sag_eval/demographic_rules.json")
                     .read_text(encoding="utf-8"))
    raw["sex_specific"] = ["pregnan(", "ovar"]
    bad = tmp_path / "rules.json"
    bad.write_text(json.dumps(raw), encoding="utf-8")
    with pytest.raises(InputError, match="sex_specific"):
        load_demographic_rules(bad)
    del raw["races"]
    bad.write_text(json.dumps(raw), encoding="utf-8")
    with pytest.raises(InputError, match="races"):
        load_demographic_rules(bad)


def variant_counts(benchmark: str, n: int | None = None) -> tuple[int, int]:
    items = load_benchmark(benchmark)[:n]
    swaps = sum(swap_gender(item.question, rules()) is not None for item in items)
    races = sum(set_race(item.question, "Black", rules()) is not None for item in items)
    return swaps, races


def test_most_medqa_vignettes_yield_both_variants() -> None:
    """First 200 MedQA items: 152 gender swaps and 168 race variants when written."""
    swaps, races = variant_counts("medqa", 200)
    assert swaps >= 100, swaps
    assert races >= 150, races


def test_most_agentclinic_vignettes_yield_both_variants() -> None:
    """All 214 AgentClinic items: 166 gender swaps and 208 race variants when written."""
    swaps, races = variant_counts("agentclinic")
    assert swaps >= 150, swaps
    assert races >= 200, races
