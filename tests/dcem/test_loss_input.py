"""Strict reading of the loss matrix typed as text: "2,5" is refused, never read as 25,
and every message names the decision and true-label classes, never matrix indices."""
from __future__ import annotations

import re

import numpy as np
import pytest

from studio.views.loss_input import format_loss_cell, loss_cells, loss_change, parse_loss_cell, parse_loss_table
from common.errors import InputError

LABELS = ["flu", "pneumonia", "cold"]


def _table(cell: object, where: tuple[int, int] = (1, 0)) -> list[list[object]]:
    rows: list[list[object]] = [["0", "1", "1"], ["3", "0", "1"], ["3", "1", "0"]]
    rows[where[0]][where[1]] = cell
    return rows


def test_a_comma_is_refused_with_the_decimal_separator_hint_and_the_classes() -> None:
    with pytest.raises(InputError) as info:
        parse_loss_table(_table("2,5"), LABELS)
    message = str(info.value)
    assert info.value.field == "loss"
    assert "use a point as the decimal separator" in message
    assert "decision 'pneumonia'" in message and "true label 'flu'" in message
    assert not re.search(r"\[\d\]", message)  # no matrix indices
    with pytest.raises(InputError, match="comma"):
        parse_loss_cell("1,000", "flu", "cold")  # a thousands separator is refused too


@pytest.mark.parametrize("cell, words", [
    ("", "empty"), (None, "empty"), ("   ", "empty"), ("nan", "not a finite"), ("inf", "not a finite"),
    ("-inf", "not a finite"), (float("nan"), "not a finite"), ("-1", "negative"), ("-0.5", "negative"),
    ("abc", "not a number"), ("1_000", "not a number"), ("2.5.1", "not a number"), ("1e999", "too large"),
    ("2e12", "larger than the largest loss"), (True, "not a number"),
])
def test_bad_cells_are_refused_naming_the_classes(cell: object, words: str) -> None:
    with pytest.raises(InputError, match=words) as info:
        parse_loss_table(_table(cell, (2, 1)), LABELS)
    assert "decision 'cold'" in str(info.value) and "true label 'pneumonia'" in str(info.value)


def test_plain_numbers_are_read_exactly() -> None:
    got = parse_loss_table([["0", " 2.5 ", ".5"], ["+3", "0", "1e-3"], [3, 1.25, np.float64(0.0)]], LABELS)
    np.testing.assert_array_equal(got, [[0, 2.5, 0.5], [3, 0, 0.001], [3, 1.25, 0]])
    with pytest.raises(InputError, match=r"one row and one column per class \(3 x 3: flu, pneumonia, cold\)"):
        parse_loss_table([["0", "1"], ["1", "0"]], LABELS)


def test_formatted_cells_read_back_to_the_same_loss() -> None:
    loss = np.array([[0.0, 1.0, 1 / 3], [3.0, 0.0, 2.5955255939999997], [1e-7, 12345678.9, 0.0]])
    cells = loss_cells(loss)
    assert cells[0][:2] == ["0", "1"] and cells[1][2] == "2.5955255939999997"
    back = parse_loss_table(cells, LABELS)
    np.testing.assert_array_equal(back, loss)
    assert loss_change(back, loss) is None  # untouched: each cell keeps its own loss
    moved = back.copy()
    moved[0, 1] = 2.0
    assert loss_change(moved, loss) is not None
    assert format_loss_cell(2.5) == "2.5" and loss_cells([["2,5", None]]) == [["2,5", ""]]
