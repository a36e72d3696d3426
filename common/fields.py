"""Declared validation: what a field accepts is said once; one validator writes the error.

In the spirit of scikit-learn's parameter constraints: a field lists the rules its value
must pass; :func:`check` (one value) or :class:`Spec` (a frozen dataclass's fields, in
order) applies them, and the first rule a value fails raises ``error(name, message)``
(:class:`~common.errors.ConfigError` unless told otherwise) with a one-line message.

Rules: :class:`Whole` (an integer, never a bool) and :class:`Number` (int or float, never
a bool; ``finite=True`` refuses NaN and infinities) in an interval whose ends are closed
or open (``closed="both" | "left" | "right" | "neither"``); :class:`OneOf`; :class:`Flag`
(True or False); :class:`Text` (not blank, length, printable, pattern); :class:`Instance`;
:class:`Seq` (a list or tuple, its length bounded, each item passing a rule);
:class:`Either`; :class:`Satisfies` (a test no other rule states); :class:`ToFloat`
(converts, refusing a whole number beyond a float).  ``optional=True`` lets None through.

A message is the rule's template, else the field's, else ``"must be {must}, got {got}"``
(or a function of the value).  Templates are ``str.format`` strings over ``value``;
``got`` (the value as the caller's ``show`` prints it, ``repr`` unless told); ``short``
(``reprlib.repr``); ``shown`` (ASCII, 40 characters, a whole number of over 128 bits
described by its size); ``type`` (its type's name); ``len``; ``must`` (what the rule
accepts, in words: ``a whole number in [1, 10]``) and the rule's parameters (``low``,
``high``, ``options``, ``choices``, ``min_len``, ``max_len``).  Only the words a template
names are computed: a value too long to print costs nothing unless printed.
"""
from __future__ import annotations

import math
import numbers
import re
import reprlib
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Union

import numpy as np

from common.errors import ConfigError

__all__ = ["Rule", "Whole", "Number", "OneOf", "Flag", "Text", "Instance", "Seq", "Either", "Satisfies", "ToFloat",
           "Field", "Spec", "check", "shown", "bare", "fixed", "DEFAULT_MESSAGE"]

DEFAULT_MESSAGE = "must be {must}, got {got}"
Error = Callable[[str, str], BaseException]
Msg = Union[str, Callable[[Any], str], None]  # a template, or a function of the value
_CLOSED = ("both", "left", "right", "neither")


def shown(value: Any) -> str:
    """A value for a message, short and ASCII; a whole number too long to print is described."""
    if isinstance(value, int) and value.bit_length() > 128:
        return f"a whole number of {value.bit_length()} bits"
    return ascii(value)[:40]


def bare(kind: Callable[[str], BaseException] = ValueError) -> Error:
    """An ``error`` for exceptions that take the message alone (the field is not named)."""
    return lambda field, message: kind(message)


def fixed(text: str) -> Callable[[Any], str]:
    """A message that is ``text`` as it stands (read data in it may hold braces)."""
    return lambda _value: text


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
    """One constraint: :meth:`ok` says whether a value passes, :meth:`must` says what passes."""

    msg: Msg = None

    def ok(self, value: Any) -> bool:
        raise NotImplementedError

    def must(self) -> str:
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
    refused, and with ``finite=True`` NaN and infinities (NaN lies in no interval anyway)."""

    finite: bool = False
    numpy: bool = False
    fmt: str = "g"

    def ok(self, value: Any) -> bool:
        kinds = (int, float, np.integer, np.floating) if self.numpy else (int, float)
        if isinstance(value, bool) or not isinstance(value, kinds):
            return False
        if self.finite and not (isinstance(value, numbers.Integral) or math.isfinite(value)):
            return False
        return _inside(value, self.low, self.high, self.closed)

    def must(self) -> str:
        return ("a finite number" if self.finite else "a number") + _bounds(self.low, self.high, self.closed, self.fmt)


@dataclass(frozen=True)
class ToFloat(Rule):
    """Converts a number to a float; a whole number beyond a float's range is refused."""

    msg: Msg = None

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
        if all(isinstance(o, str) for o in self.options) and not isinstance(value, str):
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

    def convert(self, value: Any) -> Any:
        return next(r for r in self.rules if r.ok(value)).convert(value)


class _Words(dict):  # type: ignore[type-arg]
    """The words of a message template, each computed only when the template names it."""

    def __init__(self, rule: Rule, value: Any, show: Callable[[Any], str]) -> None:
        super().__init__(value=value, **rule.params())
        self._rule, self._show = rule, show

    def _got(self, value: Any) -> str:
        try:
            return self._show(value)
        except ValueError:  # a whole number too long for repr
            return shown(value)

    def __missing__(self, key: str) -> Any:
        value = self["value"]
        words: dict[str, Callable[[], Any]] = {
            "got": lambda: self._got(value), "short": lambda: reprlib.repr(value), "shown": lambda: shown(value),
            "type": lambda: type(value).__name__, "must": self._rule.must, "len": lambda: len(value)}
        if key not in words:
            raise KeyError(key)
        return words[key]()


@dataclass(frozen=True)
class Field:
    """What one field accepts: ``rules`` applied in order, each converting the value it
    passes on; ``optional`` lets None through; ``label`` names the field in the error when
    that differs from the attribute; ``msg`` is the template of every rule without its own."""

    rules: tuple[Rule, ...]
    optional: bool = False
    label: str | None = None
    msg: Msg = None

    def check(self, name: str, value: Any, *, error: Error = ConfigError, show: Callable[[Any], str] = repr) -> Any:
        """The value as the field keeps it, or ``error(name, message)`` at the first rule it fails."""
        if value is None and self.optional:
            return None
        for rule in self.rules:
            if not rule.ok(value):
                template = rule.msg or self.msg or DEFAULT_MESSAGE
                text = template(value) if callable(template) else template.format_map(_Words(rule, value, show))
                raise error(self.label or name, text)
            value = rule.convert(value)
        return value


def check(name: str, value: Any, *rules: Rule, error: Error = ConfigError, msg: Msg = None,
          optional: bool = False, show: Callable[[Any], str] = repr) -> Any:
    """Check one value against ``rules`` (see :class:`Field`); the value as kept."""
    return Field(rules, optional=optional, msg=msg).check(name, value, error=error, show=show)


class Spec:
    """The declared fields of a dataclass (or a mapping's keys), checked in declaration order.

    ``Spec({"t_max": Whole(1, 10), "name": Field((Text(),), msg=...)}, show=shown)``;
    :meth:`apply` checks a frozen dataclass's attributes and sets the converted values.
    """

    def __init__(self, fields: Mapping[str, Field | Rule | Iterable[Rule]], *, error: Error = ConfigError,
                 show: Callable[[Any], str] = repr) -> None:
        self.fields = {name: f if isinstance(f, Field) else Field((f,) if isinstance(f, Rule) else tuple(f))
                       for name, f in fields.items()}
        self.error, self.show = error, show

    def check(self, name: str, value: Any) -> Any:
        """One declared field's value, as kept."""
        return self.fields[name].check(name, value, error=self.error, show=self.show)

    def apply(self, obj: Any, *names: str) -> None:
        """Check ``obj``'s attributes (all declared fields, or only ``names``) in order;
        a converted value replaces the attribute (frozen dataclasses too)."""
        for name in names or tuple(self.fields):
            value = getattr(obj, name)
            kept = self.check(name, value)
            if kept is not value:
                object.__setattr__(obj, name, kept)

    def read(self, values: Mapping[str, Any], *names: str) -> dict[str, Any]:
        """The declared keys of a mapping (a missing key is None), checked and as kept."""
        return {name: self.check(name, values.get(name)) for name in names or tuple(self.fields)}
