"""The scoring rules on constructed messages: grounding, the deciding rationale, refusal scores."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from sag.evaluation.scores import deciding_rationales, grounded, refusal_scores


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
