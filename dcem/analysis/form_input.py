"""Strict reading of the numbers a person types into a form.

A browser's number box silently replaces an out-of-range or non-numeric entry with
another value, so a run could start with settings the screen never showed.  The
dashboard therefore takes such numbers as text and reads them here: a whole number in
an allowed range, or a message that names the field, quotes what was typed and gives
the range.  Nothing is rounded, clipped or guessed.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["IntField", "parse_int_field"]

_INTEGER = re.compile(r"[+-]?[0-9]+")
_MAX_DIGITS = 12  # longer digit strings are out of any range a form allows


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
