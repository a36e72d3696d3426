"""Text from items and models made safe to print on a terminal.

A question, an option or a model's rationale may hold terminal escape sequences
(``\\x1b[2J`` clears the screen, ``\\x1b]0;...\\x07`` sets the window title), carriage
returns that overwrite a printed line, or bidirectional overrides that reorder what the
reader sees.  :func:`escape_controls` shows each such character as its Python escape
(``\\x1b``, ``\\r``, ``\\u202e``); the stored text is never changed.
"""
from __future__ import annotations

import unicodedata

__all__ = ["escape_controls"]

# explicit bidirectional formatting: marks, embeddings, overrides and isolates
_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_ESCAPED_CATEGORIES = frozenset({"Cc", "Cs", "Zl", "Zp"})  # C0, DEL, C1; lone surrogates; line breaks


def _escaped(char: str, keep: str) -> bool:
    if char in keep:
        return False
    return char in _BIDI or unicodedata.category(char) in _ESCAPED_CATEGORIES


def escape_controls(text: str, keep: str = "") -> str:
    """``text`` with control characters (C0, DEL, C1, ESC), Unicode line and paragraph
    separators, lone surrogates and bidirectional controls written as escapes; the
    characters in ``keep`` (e.g. ``"\\n\\t"`` for multi-line text) are left as they are."""
    if text.isprintable():  # the usual case; bidirectional controls are not printable
        return text
    return "".join(ascii(c)[1:-1] if _escaped(c, keep) else c for c in text)
