"""Strict reading of typed whole and decimal numbers, and the Experiments launch form built on it."""
from __future__ import annotations

import math

import pytest

from dcem.analysis.form_input import parse_float_field, parse_int_field
from studio.views.launch_form import LaunchProgress, cells_text, launch_message, read_launch_form
from common.errors import ConfigError


@pytest.mark.parametrize("text", ["2,5", "2.5", "abc", "", "   ", "1e3", "3 4", "٣", "0x3", None])
def test_anything_but_a_whole_number_is_refused_with_the_field_and_range(text: object) -> None:
    read = parse_int_field(text, field="Seeds", low=1, high=50)
    assert read.value is None and not read.ok
    assert read.error is not None and read.error.startswith("Seeds") and "1 to 50" in read.error


def test_commas_and_decimal_points_are_named() -> None:
    for text in ("2,5", "2.5"):
        error = parse_int_field(text, field="Seeds", low=1, high=50).error
        assert error is not None and f"“{text}”" in error and "no commas or decimal points" in error
    assert "is empty" in (parse_int_field("", field="Seeds", low=1, high=50).error or "")


@pytest.mark.parametrize(("text", "value"), [("3", 3), (" 12 ", 12), ("+7", 7), ("50", 50), ("1", 1)])
def test_whole_numbers_in_range_are_read_exactly(text: str, value: int) -> None:
    read = parse_int_field(text, field="Seeds", low=1, high=50)
    assert read.ok and read.value == value


@pytest.mark.parametrize("text", ["0", "51", "-3", "9" * 5000])
def test_out_of_range_is_refused_not_clipped(text: str) -> None:
    read = parse_int_field(text, field="Round budget T", low=2, high=30)
    assert read.value is None and read.error is not None
    assert read.error.startswith("Round budget T must be from 2 to 30") and len(read.error) < 120


def test_the_form_counts_cells_and_blocks_an_invalid_field() -> None:
    form = read_launch_form(["S1", "S2"], "3", "12")
    assert form.ok and form.cells == 6
    assert cells_text(form).startswith("6 cells: 2 scenarios × 3 seeds")
    assert "2 already stored, Run computes 4" in cells_text(form, stored=2)
    assert "not cells" in cells_text(form, ablation=True)
    spec = form.spec(xi=0.5, ablation=False, world="sharpened", compliance="blend")
    assert spec.seeds == (0, 1, 2) and spec.t_max == 12 and spec.sharpness == 3.0
    bad = read_launch_form([], "abc", "12")
    assert not bad.ok and bad.cells is None and len(bad.errors) == 2
    assert "fix the fields" in cells_text(bad)
    with pytest.raises(ConfigError, match="Seeds"):
        bad.spec(xi=1.0, ablation=False, world="seed", compliance="adopt")


def test_a_launch_that_did_not_finish_reads_as_stopped() -> None:
    running = LaunchProgress("syn-1", 2, 6)
    assert launch_message(running) == ("warning", "Stopped after 2 of 6 cells — run again to resume.")
    done = running.completed(computed=4, skipped=2, total=6)
    assert launch_message(done) == ("success", "Run syn-1: 4 cells computed, 2 already stored.")
    failed = LaunchProgress("llm-1", 1, 4, failed="case_file: 1 case is longer than smollm2-135m can read")
    assert launch_message(failed) == ("error", "Stopped by an error after 1 of 4 cells: case_file: 1 case is longer "
                                               "than smollm2-135m can read (every finished cell stays stored)")


def test_progress_that_cannot_happen_is_refused() -> None:
    with pytest.raises(ConfigError, match="progress"):
        LaunchProgress("syn-1", 7, 6)


ALPHA = {"field": "Smoothing alpha", "low": 0.01, "high": 10.0}


@pytest.mark.parametrize(("text", "value"), [("0.5", 0.5), ("1", 1.0), (".5", 0.5), ("5.", 5.0), (" 2.25 ", 2.25),
                                             ("+0.01", 0.01), ("10", 10.0), ("10.000", 10.0)])
def test_decimal_numbers_in_range_are_read_exactly(text: str, value: float) -> None:
    read = parse_float_field(text, **ALPHA)
    assert read.ok and read.error is None and read.value == value


def test_a_decimal_comma_is_refused_not_read_as_another_number() -> None:
    for text in ("2,5", "0,5", "1,000"):
        read = parse_float_field(text, **ALPHA)
        assert read.value is None and read.error is not None
        assert read.error.startswith(f"Smoothing alpha: “{text}”") and "use a point as the decimal separator" in read.error
        assert "from 0.01 to 10" in read.error


@pytest.mark.parametrize("text", ["", "   ", None, 0.5, "abc", "nan", "inf", "-inf", "1e-2", "0x1", ".", "+",
                                  "2.5.1", "1 2", "½", "٣"])
def test_anything_but_a_plain_decimal_number_is_refused_with_the_field_and_range(text: object) -> None:
    read = parse_float_field(text, **ALPHA)
    assert read.value is None and not read.ok
    assert read.error is not None and read.error.startswith("Smoothing alpha") and "0.01 to 10" in read.error
    if not (text.strip() if isinstance(text, str) else ""):
        assert "is empty" in read.error


@pytest.mark.parametrize("text", ["0", "0.009", "10.0001", "-1", "9" * 400])
def test_out_of_range_or_not_finite_is_refused_not_clipped(text: str) -> None:
    assert math.isinf(float("9" * 400))  # the long one overflows to infinity
    read = parse_float_field(text, **ALPHA)
    assert read.value is None and read.error is not None
    assert read.error.startswith("Smoothing alpha must be from 0.01 to 10; got ") and len(read.error) < 120


def test_a_bad_decimal_range_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="alpha"):
        parse_float_field("1", field="alpha", low=2.0, high=1.0)
    with pytest.raises(ValueError, match="alpha"):
        parse_float_field("1", field="alpha", low=0.0, high=math.inf)
