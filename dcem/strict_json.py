"""Strict JSON for user input: only finite numbers a float can hold, bounded nesting.

Python's :func:`json.loads` accepts ``NaN`` and ``Infinity``, turns ``1e400`` into
``inf``, raises a bare ``ValueError`` for integers of more than 4,300 digits and a
``RecursionError`` for deeply nested arrays.  :func:`loads` refuses all of these with an
:class:`~dcem.errors.InputError` naming the source, so the command line can print one
line instead of a traceback.
"""
from __future__ import annotations

import json
import math
from typing import Any

from dcem.errors import InputError

__all__ = ["loads", "check_depth", "MAX_DEPTH", "NotJson"]

MAX_DEPTH = 64  # nesting levels of arrays and objects; explain documents need 4
_MAX_DIGITS = 400  # any integer with more digits is beyond a float anyway


class NotJson(InputError):
    """The text is not JSON at all (a syntax error), as opposed to refused JSON."""


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


def loads(text: str, source: str) -> Any:
    """Parse ``text`` as strict JSON; ``source`` names the input in error messages."""
    try:
        value = json.loads(text, parse_constant=_constant(source), parse_int=_integer(source),
                           parse_float=_real(source))
    except json.JSONDecodeError as exc:
        raise NotJson(source, f"is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}") from None
    except RecursionError:
        raise InputError(source, f"is nested too deeply (more than {MAX_DEPTH} levels)") from None
    check_depth(value, source)
    return value
