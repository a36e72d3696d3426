"""The declared-validation helper (common.fields): each rule kind, bools refused as numbers,
NaN and infinities, open and closed interval ends, None, conversions and the message format."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from common.errors import ConfigError, InputError
from common.fields import (
    Either, Field, Flag, Instance, Number, OneOf, Satisfies, Seq, Spec, Text, ToFloat, Whole, bare, check, fixed, shown,
)


def _message(value: Any, *rules: Any, **kwargs: Any) -> str:
    with pytest.raises(ConfigError) as err:
        check("f", value, *rules, **kwargs)
    assert err.value.field == "f"
    return str(err.value)


def test_whole_accepts_integers_in_the_interval_and_refuses_bools_floats_and_text() -> None:
    assert check("f", 3, Whole(1, 10)) == 3
    for bad in (True, False, 3.0, "3", None, 0, 11):
        assert _message(bad, Whole(1, 10)) == f"f: must be a whole number in [1, 10], got {bad!r}"


def test_whole_takes_numpy_integers_only_when_told() -> None:
    assert check("f", np.int64(4), Whole(0, numpy=True)) == 4
    assert _message(np.int64(4), Whole(0)) == f"f: must be a whole number >= 0, got {np.int64(4)!r}"
    assert _message(np.bool_(True), Whole(0, numpy=True)).startswith("f: must be a whole number >= 0")


@pytest.mark.parametrize("closed, inside, outside, words", [
    ("both", (0, 1), (-1, 2), "in [0, 1]"),
    ("left", (0,), (1,), "in [0, 1)"),
    ("right", (1,), (0,), "in (0, 1]"),
    ("neither", (0.5,), (0, 1), "in (0, 1)"),
])
def test_interval_ends_are_open_or_closed(closed: str, inside: tuple[float, ...], outside: tuple[float, ...],
                                          words: str) -> None:
    for v in inside:
        assert check("f", v, Number(0, 1, closed=closed)) == v
    for v in outside:
        assert _message(v, Number(0, 1, closed=closed)) == f"f: must be a number {words}, got {v!r}"


def test_one_sided_intervals_read_as_comparisons() -> None:
    assert _message(0, Whole(1)) == "f: must be a whole number >= 1, got 0"
    assert _message(0, Whole(0, closed="neither")) == "f: must be a whole number > 0, got 0"
    assert _message(6, Whole(high=5)) == "f: must be a whole number <= 5, got 6"
    assert _message(5, Whole(high=5, closed="left")) == "f: must be a whole number < 5, got 5"
    assert _message(20000, Whole(0, 10_000, fmt=",")) == "f: must be a whole number in [0, 10,000], got 20000"


def test_number_refuses_bools_and_nan_and_infinity_when_finite() -> None:
    assert check("f", 2, Number()) == 2 and check("f", 0.5, Number(finite=True)) == 0.5
    for bad in (True, "1", None, [1]):
        assert _message(bad, Number()) == f"f: must be a number, got {bad!r}"
    for bad in (math.nan, math.inf, -math.inf):
        assert _message(bad, Number(finite=True)) == f"f: must be a finite number, got {bad!r}"
    assert check("f", math.inf, Number()) == math.inf  # without finite=True an infinity passes
    assert _message(math.nan, Number(0, 1)) == "f: must be a number in [0, 1], got nan"  # NaN lies in no interval
    assert _message(10**400, Number(finite=True)).startswith("f: must be a finite number, got 1000")  # beyond a float
    assert check("f", 10**300, Number(finite=True)) == 10**300
    assert check("f", np.float32(0.5), Number(0, 1, numpy=True)) == 0.5
    assert _message(np.int64(1), Number()).startswith("f: must be a number, got")


def test_to_float_converts_and_refuses_a_number_beyond_a_float() -> None:
    assert check("f", 3, ToFloat()) == 3.0 and isinstance(check("f", 3, ToFloat()), float)
    assert _message(10**400, ToFloat(msg="is too large")) == "f: is too large"


def test_one_of_a_set_of_options() -> None:
    assert check("f", "b", OneOf(("a", "b"))) == "b"
    assert _message("c", OneOf(("a", "b"))) == "f: must be one of a, b, got 'c'"
    assert _message(["a"], OneOf(frozenset({"a"}))).startswith("f: must be one of a")  # unhashable: refused
    assert _message(1, OneOf(("1",))) == "f: must be one of 1, got 1"  # text options take text only
    assert _message("x", OneOf(("a",), msg="must be one of {options}, got {value!r}")) \
        == "f: must be one of ('a',), got 'x'"


def test_flag_takes_true_or_false_only() -> None:
    assert check("f", False, Flag()) is False
    for bad in (0, 1, "true", None, np.bool_(True)):
        assert _message(bad, Flag()) == f"f: must be true or false, got {bad!r}"


def test_text_nonempty_length_printable_and_pattern() -> None:
    assert check("f", "ok", Text()) == "ok"
    assert _message("  ", Text()) == "f: must be a non-empty text, got '  '"
    assert check("f", "", Text(nonempty=False)) == ""
    assert _message("abcd", Text(max_len=3)).startswith("f: must be a non-empty text")
    assert check("f", " ", Text(nonempty=False, min_len=1)) == " "  # blank but not empty
    assert _message("", Text(nonempty=False, min_len=1)) == "f: must be a non-empty text, got ''"
    assert _message("a\nb", Text(printable=True)).startswith("f: must be a non-empty text")
    pattern = re.compile(r"[0-9a-f]{4}")
    assert check("f", "00af", Text(pattern=pattern)) == "00af"
    assert _message("00AF", Text(pattern=pattern, msg="must be 4 hex digits, got {got}")) \
        == "f: must be 4 hex digits, got '00AF'"


def test_instance_names_the_expected_type() -> None:
    rng = np.random.default_rng(0)
    assert check("f", rng, Instance(np.random.Generator)) is rng
    assert _message(3, Instance(np.random.Generator, name="numpy.random.Generator")) \
        == "f: must be a numpy.random.Generator, got 3"
    assert _message(3, Instance((list, tuple))) == "f: must be a list, got 3"


def test_sequence_length_items_and_conversion_to_a_tuple() -> None:
    rule = Seq(Whole(0), min_len=1, max_len=3, to_tuple=True)
    assert check("f", [1, 2], rule) == (1, 2)
    for bad in ([], [1, 2, 3, 4], [1, -1], [True], "12", None):
        assert _message(bad, rule) == f"f: must be a list of 1 to 3 items, each a whole number >= 0, got {bad!r}"
    assert _message([], Seq(min_len=1)) == "f: must be a non-empty list, got []"
    assert _message((1,), Seq(min_len=2, msg="need two, got {len}")) == "f: need two, got 1"
    assert check("f", [1.5], Seq(ToFloat(), to_tuple=True)) == (1.5,)


def test_either_and_satisfies() -> None:
    rule = Either((OneOf(("uniform",)), Seq(Number(), min_len=2)))
    assert check("f", "uniform", rule) == "uniform" and check("f", [0.5, 0.5], rule) == [0.5, 0.5]
    assert _message("x", rule) == "f: must be one of uniform or a list of at least 2 items, each a number, got 'x'"
    even = Satisfies(lambda v: isinstance(v, int) and v % 2 == 0, "an even number")
    assert check("f", 4, even) == 4 and _message(3, even) == "f: must be an even number, got 3"


def test_optional_lets_none_through_and_nothing_else() -> None:
    assert check("f", None, Whole(1), optional=True) is None
    assert _message(0, Whole(1), optional=True) == "f: must be a whole number >= 1, got 0"
    assert _message(None, Whole(1)) == "f: must be a whole number >= 1, got None"


def test_rules_apply_in_order_each_with_its_own_message() -> None:
    field = Field((Number(msg="must be a number, got {short}"), ToFloat(msg="is too large (beyond a float)"),
                   Number(finite=True, msg="must be finite, got {value!r}"), Number(0, msg="must be >= 0, got {value}")))
    assert field.check("w", 2) == 2.0
    for bad, words in (("x" * 100, "must be a number, got 'xxxxx"), (10**400, "is too large (beyond a float)"),
                       (math.nan, "must be finite, got nan"), (-1, "must be >= 0, got -1.0")):
        with pytest.raises(ConfigError, match=re.escape(f"w: {words}")):
            field.check("w", bad)


def test_message_words_and_the_error_class() -> None:
    with pytest.raises(InputError) as err:
        check("n", 10**200, Whole(1, 5), error=InputError, show=shown)
    assert str(err.value) == "n: must be a whole number in [1, 5], got a whole number of 665 bits"
    assert err.value.field == "n"
    words = "{type} {short} {len} {must} {low} {high}"
    assert _message("abc", Whole(1, 5, msg=words)) == "f: str 'abc' 3 a whole number in [1, 5] 1 5"
    assert _message("abc", Whole(1, msg=lambda v: f"no {v}")) == "f: no abc"
    long = 10**5000  # printing it would raise: only the words a template names are computed
    assert _message(long, Whole(1, 5, msg="too long a {type}")) == "f: too long a int"
    with pytest.raises(ValueError, match="boom"):
        check("f", 0, Whole(1), error=lambda field, message: ValueError(f"boom: {field} {message}"))
    assert shown("a\x00b") == "'a\\x00b'" and shown("x" * 100) == ascii("x" * 100)[:40]


def test_bare_errors_and_fixed_messages() -> None:
    with pytest.raises(KeyError) as err:  # an exception that takes the message alone
        check("f", 0, Whole(1), error=bare(KeyError))
    assert err.value.args == ("must be a whole number >= 1, got 0",)
    where = "file {x}.json"  # read data with braces is not a template
    with pytest.raises(InputError, match=re.escape("data: file {x}.json: expected an object")):
        check("data", [], Instance(dict), msg=fixed(f"{where}: expected an object"), error=InputError)


def test_label_names_the_field_in_the_error() -> None:
    with pytest.raises(ConfigError) as err:
        Field((Whole(1),), label="items").check("n_items", 0)
    assert str(err.value) == "items: must be a whole number >= 1, got 0"


@dataclass(frozen=True)
class _Config:
    items: Any = 3
    weight: Any = 1
    mode: Any = "a"

    def __post_init__(self) -> None:
        _SPEC.apply(self)


@dataclass
class _Loose:
    items: Any
    weight: Any


_SPEC = Spec({"items": Whole(1, 10), "weight": (Number(finite=True), ToFloat()), "mode": OneOf(("a", "b"))})


def test_a_spec_checks_a_frozen_dataclass_in_order_and_keeps_converted_values() -> None:
    cfg = _Config()
    assert cfg.weight == 1.0 and isinstance(cfg.weight, float)
    with pytest.raises(ConfigError, match=r"^items: must be a whole number in \[1, 10\], got 0$"):
        _Config(items=0, weight=math.nan)  # the first declared field fails first
    with pytest.raises(ConfigError, match=r"^weight: must be a finite number, got inf$"):
        _Config(weight=math.inf)
    with pytest.raises(ConfigError, match=r"^mode: must be one of a, b, got 'c'$"):
        _Config(mode="c")
    loose = _Loose(items=0, weight=2)
    _SPEC.apply(loose, "weight")  # only the fields named
    assert loose.items == 0 and loose.weight == 2.0 and isinstance(loose.weight, float)
    spec = Spec({"n": Whole(1)}, error=InputError, show=shown)
    with pytest.raises(InputError, match="^n: must be a whole number >= 1, got 'x'$"):
        spec.check("n", "x")


def test_an_interval_end_that_is_not_known_is_refused_when_declared() -> None:
    with pytest.raises(ValueError, match="closed must be one of"):
        Whole(0, 1, closed="open")
