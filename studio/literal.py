"""User-supplied text shown literally inside Streamlit's Markdown.

``st.markdown``, ``st.warning``, ``st.error``, ``st.info``, ``st.success``,
``st.caption``, ``st.subheader`` and ``st.write`` read their text as Markdown (with
Streamlit's extras: ``:red[...]`` colours, ``:smile:`` shortcodes, ``$...$`` maths).  A
value that comes from the user -- a deep link's query parameter, a run id or label, a case
id, a file name, a value of an uploaded CSV, an item's text, or an error message quoting
one -- must not become an image, a link, a heading or HTML there.  :func:`literal` escapes
it; every page and panel passes such values through it.  No Streamlit import here.
"""
from __future__ import annotations

import re

__all__ = ["literal", "literal_lines", "MARKDOWN_SPECIAL"]

MARKDOWN_SPECIAL = frozenset("\\`*_{}[]<>#|$~&")
"""Characters escaped with a backslash wherever they stand (CommonMark renders ``\\X`` as
``X`` for every ASCII punctuation ``X``): emphasis, code, links and images (no ``[``),
HTML, autolinks and entities, headings, tables, strikethrough, maths, and Streamlit's
``:colour[...]`` directives (no ``[``).  A list marker (``-``, ``+``, ``1.``) is escaped
only at the start, the one place it acts on a single line.  A bare web address stays
text that Streamlit may underline as a link to itself (it shows where it leads)."""

_LIST_START = re.compile(r"^(?:[-+]|[0-9]{1,9}[.)])(?=\s|$)")


def literal(value: object) -> str:
    """``str(value)`` as Markdown that renders exactly as that text, on one line.

    The Markdown characters of :data:`MARKDOWN_SPECIAL` are backslash-escaped, and a
    leading list marker; line breaks and other control characters become single spaces
    (no new block, heading or list can start), and runs of spaces one space (no indented
    code block).
    """
    text = " ".join("".join(c if c.isprintable() else " " for c in str(value)).split())
    out = "".join("\\" + c if c in MARKDOWN_SPECIAL else c for c in text)
    marker = _LIST_START.match(out)
    if marker:
        out = out[:marker.end() - 1] + "\\" + out[marker.end() - 1:]
    return out


def literal_lines(text: object) -> str:
    """Like :func:`literal`, keeping the text's lines (a Markdown line break between them,
    blank lines dropped): for longer text such as a case text."""
    lines = (literal(line) for line in str(text).splitlines())
    return "  \n".join(line for line in lines if line)
