"""User-supplied text is shown literally: a hostile deep link (an image, a link, HTML,
emphasis) renders as its own characters in the walkthrough's warnings, and
:func:`studio.literal.literal` escapes every Markdown construct of any text."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

from studio.literal import MARKDOWN_SPECIAL, literal, literal_lines

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "pages" / "walkthrough.py")
_ESCAPE = re.compile(r"\\(.)", re.S)

HOSTILE = {
    "run": "![img](http://127.0.0.1:9/x.png)",
    "method": "[click](http://127.0.0.1:9/)",
    "case": "<img src=x onerror=alert(1)> **bold** `code` :red[red] $x$",
    "round": "# heading | a | b |",
}


def _bare(markdown: str) -> str:
    """The Markdown with every backslash escape taken out (what is left can act)."""
    return _ESCAPE.sub("", markdown)


def _plain(markdown: str) -> str:
    """The text the Markdown shows: every backslash escape resolved."""
    return _ESCAPE.sub(r"\1", markdown)


def _acts(markdown: str) -> bool:
    """Whether some Markdown character stands unescaped, or a line starts a list."""
    bare = _bare(markdown)
    return any(c in MARKDOWN_SPECIAL for c in bare) or bool(re.match(r"\s*(?:[-+]|\d+[.)])(?:\s|$)", markdown))


def test_a_hostile_deep_link_is_shown_literally(run_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DCEM_DB", str(run_db))
    at = AppTest.from_file(PAGE, default_timeout=120)
    for name, value in HOSTILE.items():
        at.query_params[name] = value
    at.run()
    assert not at.exception
    warnings = [w.value for w in at.warning if _plain(w.value).startswith("The link asks for")]
    assert len(warnings) == 4, [w.value for w in at.warning]
    for value in HOSTILE.values():
        shown = next(w for w in warnings if value in _plain(w))
        assert "![" not in _bare(shown) and "](" not in _bare(shown) and "<img" not in _bare(shown)
        assert not any(c in MARKDOWN_SPECIAL for c in _bare(shown)), shown
    assert at.selectbox(key="run_id").value == "ui-run" and at.subheader[0].value.startswith("Round 1 of ")


@pytest.mark.parametrize("text", [
    "![img](http://127.0.0.1:9/x.png)", "[click](javascript:alert(1))", "<script>x</script>", "**b** _i_ `c`",
    "- item", "12. item", "+ item", "# title", "a | b", "~~s~~", "$x^2$", ":red[x]", "&lt;tag&gt;", "a\\", "\\[x]",
    "line\nbreak\r\n\n# not a heading", "tab\there", "\x00nul",
])
def test_literal_escapes_every_construct(text: str) -> None:
    out = literal(text)
    assert "\n" not in out and not _acts(out), out
    assert _plain(out) == " ".join("".join(c if c.isprintable() else " " for c in text).split())


@settings(max_examples=300, derandomize=True, deadline=None)
@given(st.text(alphabet=st.sampled_from(sorted(MARKDOWN_SPECIAL) + list("-+.1)( :!ab\n")) | st.characters(),
               max_size=40))
def test_literal_round_trips_any_text(text: str) -> None:
    out = literal(text)
    assert not _acts(out) and _plain(out) == " ".join("".join(c if c.isprintable() else " " for c in text).split())
    lines = literal_lines(text).split("  \n")
    assert all(line and not _acts(line) for line in lines if lines != [""])
