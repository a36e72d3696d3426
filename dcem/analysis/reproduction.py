"""Generated blocks of REPRODUCTION.md: ``<!-- NAME:begin -->`` ... ``<!-- NAME:end -->``.

Each block is printed by a command from a shipped artifact; the tests compare the block
with what the artifact gives, and :func:`replace_block` writes a fresh one.
"""
from __future__ import annotations

from common.errors import InputError

__all__ = ["reproduction_block", "replace_block"]


def _span(text: str, name: str) -> tuple[int, int]:
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    start = text.find(begin)
    stop = text.find(end, start + len(begin)) if start >= 0 else -1
    if start < 0 or stop < 0:
        raise InputError("reproduction", f"no block {begin} ... {end} in the text")
    return start + len(begin), stop


def reproduction_block(text: str, name: str) -> str:
    """The text between the NAME markers (blank lines around it removed); InputError
    when the markers are absent or out of order."""
    start, stop = _span(text, name)
    return text[start:stop].strip("\n")


def replace_block(text: str, name: str, content: str) -> str:
    """``text`` with the NAME block's content replaced by ``content``."""
    start, stop = _span(text, name)
    return text[:start] + "\n" + content.strip("\n") + "\n" + text[stop:]
