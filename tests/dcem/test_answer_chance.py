"""The near-chance check of a probability answer and its ranked table."""
from __future__ import annotations

import pandas as pd
import pytest

from studio.views.answer_chance import CHANCE_MARGIN, answer_chance, chance_caveat, ranked_probabilities
from common.errors import InputError


def test_near_chance_when_the_top_is_within_the_margin_of_one_over_k() -> None:
    flat = answer_chance([0.26, 0.25, 0.25, 0.24])
    assert flat.k == 4 and flat.chance == 0.25 and flat.near_chance
    assert flat.top == pytest.approx(0.26) and flat.spread == pytest.approx(0.02)
    assert answer_chance([0.25 + CHANCE_MARGIN + 0.01, 0.25, 0.25, 0.24 - CHANCE_MARGIN]).near_chance is False
    assert answer_chance([0.54, 0.46]).near_chance and not answer_chance([0.56, 0.44]).near_chance
    assert answer_chance([0.3, 0.7], margin=0.25).near_chance  # the margin is a parameter
    assert chance_caveat([0.9, 0.05, 0.05]) is None
    caveat = chance_caveat([1.0, 1.0, 1.1])  # raw scores are normalised first
    assert caveat is not None and caveat.startswith("Near chance: the most probable label has 0.355")
    assert "1/3 = 0.333" in caveat


@pytest.mark.parametrize("values, words", [([0.5], "at least 2 labels"), ([0.5, float("nan")], "finite"),
                                           ([0.5, -0.1], "not negative"), ([0, 0], "all be zero"),
                                           (["a", 0.5], "numbers")])
def test_bad_probabilities_are_refused_by_name(values: list, words: str) -> None:
    with pytest.raises(InputError, match=words) as info:
        answer_chance(values)
    assert info.value.field == "probabilities"
    with pytest.raises(InputError, match="margin"):
        answer_chance([0.5, 0.5], margin=1.5)


def test_ranked_probabilities_most_probable_first() -> None:
    table = pd.DataFrame({"label": ["a", "b", "c", "d"], "probability": [0.1, 0.4, 0.1, 0.4]})
    ranked = ranked_probabilities(table)
    assert list(ranked["label"]) == ["b", "d", "a", "c"] and list(ranked.index) == [0, 1, 2, 3]
    assert list(table["label"]) == ["a", "b", "c", "d"]  # the input is left as it was
    with pytest.raises(InputError, match="no 'p' column"):
        ranked_probabilities(table, "p")
