"""The rules of :mod:`common.fields`: what a value must be, and that in words.

Each rule says whether a value passes (:meth:`Rule.ok`), what passes in words
(:meth:`Rule.must`, for messages) and, for the few that convert, the value a field
keeps (:meth:`Rule.convert`).  Import them from :mod:`common.fields`.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Callable, Union

import numpy as np

__all__ = ["Rule", "Whole", "Number", "OneOf", "Flag", "Text", "Instance", "Seq", "Either", "Satisfies", "ToFloat",
           "Msg"]

Msg = Union[str, Callable[[Any], str], None]  # a template, or a function of the value
_CLOSED = ("both", "left", "right", "neither")
_REALS, _NUMPY_REALS = (int, float), (int, float, np.integer, np.floating)


def _finite(value: Any) -> bool:
    """Whether a number is finite as a float (a whole number beyond a float's range is not)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _inside(value: Any, low: Any, high: Any, closed: str) -> bool:
    """Whether ``value`` lies in the interval; NaN lies in none."""
    if low is not None and not (value >= low if closed in ("both", "left") else value > low):
        return False
    return high is None or bool(value <= high if closed in ("both", "right") else value < high)


def _bounds(low: Any, high: Any, closed: str, fmt: str) -> str:
    """The interval in words: `` in [0, 1)``, `` >= 1``, `` < 5`` or nothing."""
    lo, hi = (format(b, fmt) if b is not None else "" for b in (low, high))
    if low is not None and high is not None:
        return f" in {'[' if closed in ('both', 'left') else '('}{lo}, {hi}{']' if closed in ('both', 'right') else ')'}"
    if low is not None:
        return f" >= {lo}" if closed in ("both", "left") else f" > {lo}"
    if high is not None:
        return f" <= {hi}" if closed in ("both", "right") else f" < {hi}"
    return ""


class Rule:
    """One constraint: whether a value passes (:meth:`ok`) and what passes, in words (:meth:`must`)."""

    msg: Msg = None
    converts = False  # whether :meth:`convert` may change the value

    def ok(self, value: Any) -> bool:
        raise NotImplementedError

    def must(self) -> str:  # what passes, in words
        raise NotImplementedError

    def convert(self, value: Any) -> Any:
        """The value the field keeps once the rule passed (itself unless the rule converts)."""
        return value

    def params(self) -> dict[str, Any]:
        """Words a message template may name besides the common ones."""
        return {}


@dataclass(frozen=True)
class _Interval(Rule):
    low: Any = None
    high: Any = None
    closed: str = "both"
    msg: Msg = None

    def __post_init__(self) -> None:
        if self.closed not in _CLOSED:
            raise ValueError(f"closed must be one of {', '.join(_CLOSED)}, got {self.closed!r}")

    def params(self) -> dict[str, Any]:
        return {"low": self.low, "high": self.high}


@dataclass(frozen=True)
class Whole(_Interval):
    """An integer in the interval; a bool is refused, numpy integers only with ``numpy=True``.
    ``fmt`` formats the bounds in :meth:`must` (``","``: 10,000)."""

    numpy: bool = False
    fmt: str = ""

    def ok(self, value: Any) -> bool:
        kinds = (int, np.integer) if self.numpy else int
        return not isinstance(value, bool) and isinstance(value, kinds) \
            and _inside(value, self.low, self.high, self.closed)

    def must(self) -> str:
        return "a whole number" + _bounds(self.low, self.high, self.closed, self.fmt)


@dataclass(frozen=True)
class Number(_Interval):
    """An int or float in the interval (numpy scalars with ``numpy=True``); a bool is
    refused, and with ``finite=True`` NaN, infinities and whole numbers beyond a float's
    range (NaN lies in no interval anyway)."""

    finite: bool = False
    numpy: bool = False
    fmt: str = "g"

    def ok(self, value: Any) -> bool:
        if isinstance(value, bool) or not isinstance(value, _NUMPY_REALS if self.numpy else _REALS):
            return False
        if self.finite and not _finite(value):
            return False
        return (self.low is None and self.high is None) or _inside(value, self.low, self.high, self.closed)

    def must(self) -> str:
        return ("a finite number" if self.finite else "a number") + _bounds(self.low, self.high, self.closed, self.fmt)


@dataclass(frozen=True)
class ToFloat(Rule):
    """Converts a number to a float; a whole number beyond a float's range is refused."""

    msg: Msg = None
    converts = True

    def ok(self, value: Any) -> bool:
        try:
            float(value)
        except (OverflowError, TypeError, ValueError):
            return False
        return True

    def must(self) -> str:
        return "a number within a float's range"

    def convert(self, value: Any) -> float:
        return float(value)


@dataclass(frozen=True)
class OneOf(Rule):
    """One of ``options``; when every option is a string, only a string passes (no 1 for True)."""

    options: tuple[Any, ...]
    msg: Msg = None

    def ok(self, value: Any) -> bool:
        if not isinstance(value, str) and all(isinstance(o, str) for o in self.options):
            return False
        try:
            return value in self.options
        except TypeError:  # an unhashable value against a set of options
            return False

    def must(self) -> str:
        return "one of " + self.params()["choices"]

    def params(self) -> dict[str, Any]:
        return {"options": self.options, "choices": ", ".join(map(str, self.options))}


@dataclass(frozen=True)
class Flag(Rule):
    """True or False (not 0, 1 or a string)."""

    msg: Msg = None

    def ok(self, value: Any) -> bool:
        return isinstance(value, bool)

    def must(self) -> str:
        return "true or false"


@dataclass(frozen=True)
class Text(Rule):
    """A string: with ``nonempty``, not blank; ``min_len`` to ``max_len`` characters; with
    ``printable``, no control character; with ``pattern``, matching it whole."""

    nonempty: bool = True
    max_len: int | None = None
    printable: bool = False
    pattern: re.Pattern[str] | None = None
    msg: Msg = None
    min_len: int = 0

    def ok(self, value: Any) -> bool:
        return isinstance(value, str) and (not self.nonempty or bool(value.strip())) \
            and self.min_len <= len(value) and (self.max_len is None or len(value) <= self.max_len) \
            and (not self.printable or value.isprintable()) \
            and (self.pattern is None or self.pattern.fullmatch(value) is not None)

    def must(self) -> str:
        return "a non-empty text" if self.nonempty or self.min_len else "text"

    def params(self) -> dict[str, Any]:
        return {"min_len": self.min_len, "max_len": self.max_len}


@dataclass(frozen=True)
class Instance(Rule):
    """An instance of one of ``types`` (named ``name`` in messages)."""

    types: type | tuple[type, ...]
    name: str | None = None
    msg: Msg = None

    def ok(self, value: Any) -> bool:
        return isinstance(value, self.types)

    def must(self) -> str:
        first = self.types[0] if isinstance(self.types, tuple) else self.types
        return f"a {self.name or first.__name__}"


@dataclass(frozen=True)
class Seq(Rule):
    """A list or tuple (``types``) of ``min_len`` to ``max_len`` items, each passing
    ``item``; ``to_tuple`` keeps it as a tuple (each item converted by ``item``)."""

    item: Rule | None = None
    min_len: int = 0
    max_len: int | None = None
    types: tuple[type, ...] = (list, tuple)
    to_tuple: bool = False
    msg: Msg = None

    def ok(self, value: Any) -> bool:
        return isinstance(value, self.types) and self.min_len <= len(value) \
            and (self.max_len is None or len(value) <= self.max_len) \
            and (self.item is None or all(self.item.ok(v) for v in value))

    def must(self) -> str:
        size = "a non-empty list" if self.min_len == 1 and self.max_len is None else "a list"
        if self.min_len > 1 or self.max_len is not None:
            size += f" of {self.min_len} to {self.max_len} items" if self.max_len is not None \
                else f" of at least {self.min_len} items"
        return size + (f", each {self.item.must()}" if self.item is not None else "")

    @property
    def converts(self) -> bool:  # type: ignore[override]
        return self.to_tuple

    def convert(self, value: Any) -> Any:
        if not self.to_tuple:
            return value
        return tuple(self.item.convert(v) for v in value) if self.item is not None else tuple(value)

    def params(self) -> dict[str, Any]:
        return {"min_len": self.min_len, "max_len": self.max_len}


@dataclass(frozen=True)
class Satisfies(Rule):
    """Whatever ``test`` accepts (a rule no other rule states), described as ``what``."""

    test: Callable[[Any], bool]
    what: str = "a valid value"
    msg: Msg = None

    def ok(self, value: Any) -> bool:
        return bool(self.test(value))

    def must(self) -> str:
        return self.what


@dataclass(frozen=True)
class Either(Rule):
    """Any of ``rules`` (the first that passes converts)."""

    rules: tuple[Rule, ...]
    msg: Msg = None

    def ok(self, value: Any) -> bool:
        return any(r.ok(value) for r in self.rules)

    def must(self) -> str:
        return " or ".join(r.must() for r in self.rules)

    converts = True

    def convert(self, value: Any) -> Any:
        return next(r for r in self.rules if r.ok(value)).convert(value)
