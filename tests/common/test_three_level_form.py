"""Reading a loss matrix back into the {0, 1, l_high} form the what-if page's fields show."""
from __future__ import annotations

import numpy as np
from hypothesis import given, strategies as st

from common.loss import three_level_form, three_level_loss


@given(st.integers(2, 8).flatmap(lambda k: st.tuples(st.just(k), st.sets(st.integers(0, k - 1)),
                                                     st.floats(0.0, 50.0).filter(lambda v: v != 1.0))))
def test_a_three_level_matrix_reads_back_as_its_classes_and_l_high(case: tuple[int, set[int], float]) -> None:
    k, high, l_high = case
    form = three_level_form(three_level_loss(k, sorted(high), l_high))
    assert form == (sorted(high), l_high if high else None)


def test_a_matrix_edited_cell_by_cell_has_no_three_level_form() -> None:
    loss = three_level_loss(4, [1], 5.0)
    loss[0, 1] = 7.0  # one miss of class 1 now costs more than the others
    assert three_level_form(loss) is None
    two = three_level_loss(4, [1, 2], 5.0)
    two[:, 2] = 3.0
    two[2, 2] = 0.0  # two high-risk classes with different costs
    assert three_level_form(two) is None
    diagonal = three_level_loss(3, [0], 2.0)
    diagonal[1, 1] = 0.5
    assert three_level_form(diagonal) is None


def test_every_miss_costing_one_has_no_high_risk_class() -> None:
    assert three_level_form(three_level_loss(5, [], 9.0)) == ([], None)
    assert three_level_form(np.ones((3, 2))) is None
