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

import reprlib
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

from common.errors import ConfigError
from common.field_rules import (Either, Flag, Instance, Msg, Number, OneOf, Rule, Satisfies, Seq, Text, ToFloat,
                                Whole)

__all__ = ["Rule", "Whole", "Number", "OneOf", "Flag", "Text", "Instance", "Seq", "Either", "Satisfies", "ToFloat",
           "Field", "Spec", "check", "shown", "bare", "fixed", "DEFAULT_MESSAGE"]

DEFAULT_MESSAGE = "must be {must}, got {got}"
Error = Callable[[str, str], BaseException]


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
            if rule.converts:
                value = rule.convert(value)
        return value


def check(name: str, value: Any, *rules: Rule, error: Error = ConfigError, msg: Msg = None,
          optional: bool = False, show: Callable[[Any], str] = repr) -> Any:
    """Check one value against ``rules`` (see :class:`Field`); the value as kept."""
    return Field(rules, optional=optional, msg=msg).check(name, value, error=error, show=show)


class Spec:
    """The declared fields of a dataclass, checked in declaration order.

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
