"""Strict JSON for user input: only finite numbers a float can hold, bounded nesting.

Python's :func:`json.loads` accepts ``NaN`` and ``Infinity``, turns ``1e400`` into
``inf``, raises a bare ``ValueError`` for integers of more than 4,300 digits and a
``RecursionError`` for deeply nested arrays.  :func:`loads` refuses all of these with an
:class:`~common.errors.InputError` naming the source, so the command line can print one
line instead of a traceback.  With ``strict_text`` it also refuses an object that repeats
a key (JSON keeps the last one silently) and text that cannot be written as UTF-8 (a
lone surrogate such as ``"\\ud800"``).

:func:`decode_utf8` reads the bytes of a user's file as strict UTF-8 (a byte order mark
is dropped) and names the line and column of the first bad byte.
"""
from __future__ import annotations

import json
import math
from typing import Any

from common.errors import InputError

__all__ = ["loads", "check_depth", "check_text", "decode_utf8", "MAX_DEPTH", "NotJson"]

MAX_DEPTH = 64  # nesting levels of arrays and objects; explain documents need 4
_MAX_DIGITS = 400  # any integer with more digits is beyond a float anyway


class NotJson(InputError):
    """The text is not JSON at all (a syntax error), as opposed to refused JSON.

    ``msg``, ``lineno`` and ``colno`` are those of the :class:`json.JSONDecodeError`."""

    def __init__(self, field: str, message: str, msg: str = "", lineno: int = 0, colno: int = 0) -> None:
        super().__init__(field, message)
        self.msg, self.lineno, self.colno = msg, lineno, colno


def _constant(source: str) -> Any:
    def refuse(name: str) -> Any:
        raise InputError(source, f"{name} is not a number; give finite numbers only")
    return refuse


def _integer(source: str) -> Any:
    def parse(text: str) -> int:
        if len(text.lstrip("-")) > _MAX_DIGITS:
            raise InputError(source, f"number {text[:12]}... ({len(text)} digits) is too large")
        value = int(text)
        try:
            float(value)
        except OverflowError:
            raise InputError(source, f"number {text[:12]}... ({len(text)} digits) is too large") from None
        return value
    return parse


def _real(source: str) -> Any:
    def parse(text: str) -> float:
        value = float(text)
        if not math.isfinite(value):
            raise InputError(source, f"number {text[:24]} is out of range (larger than a float)")
        return value
    return parse


def _unique(source: str) -> Any:
    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in items:
            if key in out:
                raise InputError(source, f"key {key!r} is given twice in one object")
            out[key] = value
        return out
    return pairs


def check_depth(value: Any, source: str, limit: int = MAX_DEPTH) -> None:
    """Refuse arrays and objects nested more than ``limit`` levels (checked iteratively)."""
    level = [value] if isinstance(value, (list, dict)) else []
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            raise InputError(source, f"is nested too deeply (more than {limit} levels)")
        level = [x for v in level for x in (v.values() if isinstance(v, dict) else v)
                 if isinstance(x, (list, dict))]


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_text(value: Any, source: str) -> None:
    """Refuse any string (object keys included) that cannot be written as UTF-8."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, str) and not _encodable(v):
            bad = next(c for c in v if not _encodable(c))
            raise InputError(source, f"text holds {ascii(bad)}, a lone surrogate that is not a character")
        if isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)


def loads(text: str, source: str, *, strict_text: bool = False) -> Any:
    """Parse ``text`` as strict JSON; ``source`` names the input in error messages."""
    try:
        value = json.loads(text, parse_constant=_constant(source), parse_int=_integer(source),
                           parse_float=_real(source), object_pairs_hook=_unique(source) if strict_text else None)
    except json.JSONDecodeError as exc:
        raise NotJson(source, f"is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}",
                      exc.msg, exc.lineno, exc.colno) from None
    except RecursionError:
        raise InputError(source, f"is nested too deeply (more than {MAX_DEPTH} levels)") from None
    check_depth(value, source)
    if strict_text:
        check_text(value, source)
    return value


def decode_utf8(data: bytes, field: str, name: str) -> str:
    """``data`` as UTF-8 text (a leading byte order mark dropped); a bad byte raises an
    :class:`InputError` on ``field`` naming the file ``name``, the line and the column."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise InputError(field, f"{name}, line {line}: not UTF-8 text (byte 0x{data[exc.start]:02x} at "
                                f"column {column}); save the file as UTF-8") from None
