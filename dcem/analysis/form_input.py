"""Strict reading of the numbers a person types into a form.

A browser's number box silently replaces an out-of-range or non-numeric entry with
another value, so a run could start with settings the screen never showed.  The
dashboard therefore takes such numbers as text and reads them here: a whole number
(:func:`parse_int_field`) or a decimal number (:func:`parse_float_field`) in an allowed
range, or a message that names the field, quotes what was typed and gives the range.
Nothing is rounded, clipped or guessed: "2,5" is refused, never read as 25 or 2.5.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

__all__ = ["IntField", "parse_int_field", "FloatField", "parse_float_field"]

_INTEGER = re.compile(r"[+-]?[0-9]+")
_MAX_DIGITS = 12  # longer digit strings are out of any range a form allows
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)")  # "0.5", "1", ".5", "5."; no exponent


@dataclass(frozen=True)
class IntField:
    """What was read from one field: ``value`` when valid, else ``error`` (one sentence)."""

    field: str
    value: int | None
    error: str | None

    @property
    def ok(self) -> bool:
        return self.error is None


def _refuse(field: str, text: str, low: int, high: int) -> str:
    shown = text if len(text) <= 20 else text[:20] + "…"
    allowed = f"a whole number from {low} to {high}"
    if not text:
        return f"{field} is empty: enter {allowed}."
    if "," in text or "." in text:
        return (f"{field}: “{shown}” is not a whole number (no commas or decimal points): "
                f"enter {allowed}.")
    return f"{field}: “{shown}” is not a whole number: enter {allowed}."


def parse_int_field(text: object, *, field: str, low: int, high: int) -> IntField:
    """Read ``text`` as a whole number in ``[low, high]`` (surrounding spaces allowed).

    Refuses an empty field, anything but digits with an optional sign ("2,5", "2.5",
    "1e3", "abc") and numbers outside the range, each with a message naming ``field``
    and the allowed range.
    """
    if low > high:
        raise ValueError(f"empty range {low}..{high} for {field}")
    raw = text.strip() if isinstance(text, str) else ""
    if not _INTEGER.fullmatch(raw):
        return IntField(field, None, _refuse(field, raw, low, high))
    digits = raw.lstrip("+-")
    value = int(raw) if len(digits) <= _MAX_DIGITS else None
    if value is None or not low <= value <= high:
        shown = raw if value is not None else raw[:_MAX_DIGITS] + "…"
        return IntField(field, None, f"{field} must be from {low} to {high}; got {shown}.")
    return IntField(field, value, None)


@dataclass(frozen=True)
class FloatField:
    """What was read from one decimal field: ``value`` when valid, else ``error`` (one sentence)."""

    field: str
    value: float | None
    error: str | None

    @property
    def ok(self) -> bool:
        return self.error is None


def _shown(text: str) -> str:
    return text if len(text) <= 20 else text[:20] + "…"


def _refuse_decimal(field: str, text: str, allowed: str) -> str:
    if not text:
        return f"{field} is empty: enter {allowed}."
    if "," in text:
        return (f"{field}: “{_shown(text)}” has a comma: use a point as the decimal separator "
                f"(no thousands separators): enter {allowed}.")
    return f"{field}: “{_shown(text)}” is not a decimal number: enter {allowed}."


def parse_float_field(text: object, *, field: str, low: float, high: float) -> FloatField:
    """Read ``text`` as a decimal number in ``[low, high]`` (surrounding spaces allowed).

    Accepts digits with an optional sign and one decimal point ("0.5", "1", ".5", "5.").
    Refuses an empty field, a decimal comma ("2,5": "use a point as the decimal
    separator"), exponents ("1e-2"), words ("abc", "nan", "inf"), numbers too large to
    be finite and numbers outside the range, each with a message naming ``field`` and
    the allowed range.
    """
    if not (math.isfinite(low) and math.isfinite(high)) or low > high:
        raise ValueError(f"bad range {low}..{high} for {field}")
    allowed = f"a number from {low:g} to {high:g}"
    raw = text.strip() if isinstance(text, str) else ""
    if not _DECIMAL.fullmatch(raw):
        return FloatField(field, None, _refuse_decimal(field, raw, allowed))
    value = float(raw)
    if not math.isfinite(value) or not low <= value <= high:
        return FloatField(field, None, f"{field} must be from {low:g} to {high:g}; got {_shown(raw)}.")
    return FloatField(field, value, None)
