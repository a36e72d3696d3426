"""Checks of a JSON document's shape that name the offending field by its path.

:class:`ShapeCheck` reads one parsed document and refuses, with one
:class:`~common.errors.InputError`, the first value that is not what the schema wants:
a path such as ``("groups", "sag-6", "accuracy", "medqa", "low")`` prints as
``groups.sag-6.accuracy.medqa.low``, and the value found is shown briefly.
"""
from __future__ import annotations

import math
from typing import Any, Iterable, NoReturn, Sequence

from common.errors import InputError

__all__ = ["ShapeCheck", "Path", "show", "kind", "MAX_COUNT"]

MAX_COUNT = 10**9  # items, runs and the like: beyond any evaluation
Path = tuple[Any, ...]


def show(path: Path) -> str:
    out = ""
    for key in path:
        if isinstance(key, int):
            out += f"[{key}]"
        else:
            text = str(key)
            simple = text and all(c.isalnum() or c in "-_/" for c in text)
            out += (("." if out else "") + text) if simple else f"[{text!r}]"
    return out or "the file"


def kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        text = repr(value)
        return text if len(text) <= 24 else text[:12] + "..."
    if isinstance(value, str):
        return "a string" if len(value) > 24 else repr(value)
    return {dict: "an object", list: "a list"}.get(type(value), type(value).__name__)


class ShapeCheck:
    """The checks of one file, named ``name`` in every message, each failure an
    :class:`~common.errors.InputError` of the field ``field``; ``what`` names the kind of
    document in the message about an unknown field ("is not a field of <what>")."""

    def __init__(self, name: str, field: str, what: str) -> None:
        self.name, self.field, self.what = name, field, what

    def fail(self, path: Path, message: str) -> NoReturn:
        raise InputError(self.field, f"{self.name}: {show(path)} {message}")

    def obj(self, value: Any, path: Path, required: Iterable[str], optional: Iterable[str] = ()) -> dict[str, Any]:
        if not isinstance(value, dict):
            self.fail(path, f"must be an object, got {kind(value)}")
        required = tuple(required)
        for key in required:
            if key not in value:
                self.fail(path + (key,), "is missing")
        known = set(required) | set(optional)
        for key in value:
            if key not in known:
                self.fail(path + (key,), f"is not a field of {self.what}")
        return value

    def mapping(self, value: Any, path: Path, names: Sequence[str] | None = None) -> dict[str, Any]:
        """An object of named entries (groups, benchmarks, parts), names from ``names`` if given."""
        if not isinstance(value, dict):
            self.fail(path, f"must be an object, got {kind(value)}")
        for key in value:
            if names is not None and key not in names:
                known = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
                self.fail(path + (key,), f"is not a known name here (known: {known})")
        return value

    def integer(self, value: Any, path: Path, low: int = 0, high: int = MAX_COUNT) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            self.fail(path, f"must be a whole number in [{low}, {high}], got {kind(value)}")
        return value

    def number(self, value: Any, path: Path, low: float = 0.0, high: float = 1.0, *, null: bool = False
               ) -> float | None:
        if value is None and null:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                or not low <= value <= high:
            what = "a number" + (" or null" if null else "")
            self.fail(path, f"must be {what} in [{low:g}, {high:g}], got {kind(value)}")
        return float(value)

    def text(self, value: Any, path: Path, *, empty: bool = False, cell: bool = False) -> str:
        """A string; ``cell``: printed in a Markdown table, so one line without ``|``."""
        if not isinstance(value, str) or (not empty and not value.strip()):
            self.fail(path, f"must be a {'' if empty else 'non-empty '}string, got {kind(value)}")
        if cell and (not value.isprintable() or "|" in value or len(value) > 200):
            self.fail(path, "must be one printable line of at most 200 characters without '|'")
        return value

    def texts(self, value: Any, path: Path, *, unique: bool = False) -> list[str]:
        if not isinstance(value, list):
            self.fail(path, f"must be a list, got {kind(value)}")
        for i, v in enumerate(value):
            self.text(v, path + (i,))
        if unique and len(set(value)) != len(value):
            self.fail(path, "names an entry twice")
        return value

    def agree(self, ok: bool, path: Path, message: str) -> None:
        if not ok:
            self.fail(path, message)
