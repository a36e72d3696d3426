"""The evaluation metrics on constructed cases with known answers."""
from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sag.evaluation.metrics import (DOMINANT_SHARE, Rate, cdr, consensus_rate, dominant_answer, forward_flops, gap,
                                    rate, roc, run_std)


def test_rate_counts_and_interval() -> None:
    r = rate([True, False, True, True])
    assert (r.k, r.n, r.value) == (3, 4, 0.75)
    assert 0.0 < r.low < 0.75 < r.high <= 1.0
    assert Rate.from_dict(r.to_dict()) == r
    assert math.isnan(rate([]).value)


def test_gap_is_max_minus_min() -> None:
    assert gap([0.25, 0.5, 0.4]) == pytest.approx(0.25)
    assert math.isnan(gap([0.3]))
    assert gap([0.2, math.nan, 0.6]) == pytest.approx(0.4)


def test_cdr_counts_pairs_that_flip() -> None:
    r = cdr([("A", "A"), ("B", "C"), ("D", "D"), ("A", "B")])
    assert (r.k, r.n) == (2, 4)
    assert cdr([("A", "A")]).value == 0.0


def test_roc_on_hand_made_scores() -> None:
    curve = roc([0.9, 0.8, 0.4], [0.7, 0.3, 0.1])
    assert curve.fpr[0] == 0.0 and curve.tpr[0] == 0.0 and curve.fpr[-1] == 1.0 and curve.tpr[-1] == 1.0
    # 8 of the 9 (harmful, benign) pairs are ordered right: AUC = 8/9
    assert curve.auc == pytest.approx(8 / 9)
    assert roc([0.9, 0.8], [0.1, 0.2]).auc == 1.0
    assert roc([0.5, 0.5], [0.5, 0.5]).auc == pytest.approx(0.5)
    with pytest.raises(ValueError):
        roc([], [0.1])


@given(st.lists(st.floats(0, 1), min_size=1, max_size=20), st.lists(st.floats(0, 1), min_size=1, max_size=20))
def test_roc_area_is_the_mann_whitney_statistic(pos: list[float], neg: list[float]) -> None:
    wins = sum(1.0 if p > q else 0.5 if p == q else 0.0 for p in pos for q in neg)
    assert roc(pos, neg).auc == pytest.approx(wins / (len(pos) * len(neg)))


def test_consensus_rate_of_exactly_0_7() -> None:
    # item 1: 10 runs, 8 say A -> 0.8; item 2: 6 say B -> 0.6; mean 0.7
    runs = [["A"] * 8 + ["B"] * 2, ["B"] * 6 + ["C"] * 2 + ["A"] * 2]
    assert consensus_rate(runs) == pytest.approx(0.7)
    with pytest.raises(ValueError):
        consensus_rate([])


def test_run_std_is_the_sample_std() -> None:
    assert run_std([40.0, 60.0]) == pytest.approx(math.sqrt(200.0))
    assert run_std([50.0] * 5) == 0.0
    assert math.isnan(run_std([1.0]))


def test_flops_are_two_per_parameter_per_token() -> None:
    assert forward_flops(135_000_000, 100) == 2.7e10


def test_the_most_frequent_answer_is_flagged_only_above_half() -> None:
    d = dominant_answer(["A", "A", "A", "B", "C"])
    assert (d.answer, d.k, d.n, d.share, d.flagged) == ("A", 3, 5, 0.6, True)
    half = dominant_answer(["A", "A", "B", "C"])  # exactly half is not more than half
    assert half.share == DOMINANT_SHARE and not half.flagged
    assert dominant_answer(["D"] * 7).to_dict() == {"answer": "D", "k": 7, "n": 7, "share": 1.0, "flagged": True}
    assert dominant_answer(["B", "A", "B", "A"]).answer == "A"  # a tie goes to the first in order
    none = dominant_answer([])
    assert (none.answer, none.n, none.flagged) == (None, 0, False) and math.isnan(none.share)
