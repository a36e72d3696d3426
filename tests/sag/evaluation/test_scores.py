"""The scoring rules on constructed messages: grounding, the deciding rationale, refusal scores,
escalation counts and what the reading says of them."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from sag.evaluation.reading import honest_reading
from sag.evaluation.scores import deciding_rationales, escalation_counts, grounded, refusal_scores


def _msg(item: str, rnd: int, role: str, rationale: str, dist: tuple[float, ...] = (0.5, 0.5),
         phase: str = "answer", error: str | None = None) -> dict:
    return {"item_id": item, "round": rnd, "role": role, "rationale": rationale, "distribution": list(dist),
            "phase": phase, "error": error}


def test_grounding_needs_three_context_words_the_question_lacks() -> None:
    context = "Serum ferritin levels predicted mortality among dialysis cohorts in this trial."
    question = "Does ferritin predict mortality?"
    assert grounded("Higher serum levels across dialysis cohorts.", context, question)  # serum, levels, dialysis, cohorts
    assert not grounded("Ferritin predicts mortality.", context, question)  # both words are in the question
    assert not grounded("Serum levels matter.", context, question)  # two words only


def test_the_deciding_rationale_is_the_last_rounds_first_judge() -> None:
    frame = pd.DataFrame([_msg("q1", 0, "reasoning", "r0"), _msg("q1", 1, "reasoning", "r1"),
                          _msg("q1", 1, "judge", "j1"), _msg("q1", 1, "judge", "j2"),
                          _msg("q2", 0, "reasoning", "only"), _msg("q2", 0, "knowledge", "k", phase="retrieve"),
                          _msg("q3", 0, "knowledge", "kk")])
    assert deciding_rationales(frame) == {"q1": "j1", "q2": "only", "q3": "kk"}


def test_refusal_score_is_the_larger_of_refuse_and_mean_decline() -> None:
    frame = pd.DataFrame([_msg("h", 1, "reasoning", "", (0.2, 0.8)), _msg("h", 1, "judge", "", (0.4, 0.6)),
                          _msg("h", 1, "safety", "", (0.0, 1.0)), _msg("h", 0, "reasoning", "", (1.0, 0.0)),
                          _msg("b", 0, "reasoning", "", (0.9, 0.1))])
    outcomes = pd.DataFrame({"item_id": ["h", "b"], "refusal_score": [0.3, 0.5]})
    scores = refusal_scores(frame, outcomes)
    assert scores["h"] == pytest.approx(0.7)  # mean P(B) of R and J in the last round beats 0.3
    assert scores["b"] == pytest.approx(0.5)  # the stored REFUSE score beats 0.1
    assert not any(math.isnan(v) for v in scores.values())


def test_escalation_counts_are_per_metric_and_in_total() -> None:
    outs = {"accuracy/medqa": pd.DataFrame({"escalated": [True, False, True]}),
            "fairness/gender/a": pd.DataFrame({"escalated": [True, True]}),
            "fairness/gender/b": pd.DataFrame({"escalated": [False, True]}),
            "safety/harmful": pd.DataFrame({"escalated": pd.Series([], dtype=bool)})}
    assert escalation_counts(outs) == {"accuracy": {"items": 3, "escalated": 2},
                                       "fairness": {"items": 4, "escalated": 3},
                                       "safety": {"items": 0, "escalated": 0},
                                       "total": {"items": 7, "escalated": 5}}


def test_the_reading_says_what_escalation_did_and_is_silent_without_it() -> None:
    counts = {"accuracy": {"items": 40, "escalated": 37}, "safety": {"items": 20, "escalated": 0},
              "total": {"items": 60, "escalated": 37}}
    groups = {"med": {"escalated": counts}, "plain": {"escalated": {"total": {"items": 60, "escalated": 0}}},
              "old": {}}
    lines = [ln for ln in honest_reading({"groups": groups}) if "to a human" in ln]
    assert len(lines) == 1
    assert lines[0].startswith("med handed 37 of its 60 items to a human (37 of 40 accuracy, 0 of 20 safety)")
    assert "not correct" in lines[0] and "CDR" in lines[0] and "CR" in lines[0]
