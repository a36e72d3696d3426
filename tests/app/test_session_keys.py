"""The session's names live in one place (studio.views.session_keys): no page or studio
module reads or writes ``st.session_state`` with a literal key, and no two names share a
value."""
from __future__ import annotations

import re
from pathlib import Path

from studio.views import session_keys

ROOT = Path(__file__).resolve().parents[2]
LITERAL = re.compile(r"session_state(\.get|\.pop|\.setdefault)?[\[(]\s*[\"']")


def _literal_uses(paths: list[Path]) -> list[str]:
    return [f"{p.relative_to(ROOT)}:{n}" for p in paths for n, line in enumerate(p.read_text().splitlines(), 1)
            if LITERAL.search(line)]


def test_no_page_or_studio_module_names_a_session_key_literally() -> None:
    files = [p for p in [*(ROOT / "studio").rglob("*.py"), *(ROOT / "pages").glob("*.py"), ROOT / "app.py"]
             if p.name != "session_keys.py"]
    assert len(files) > 30 and not _literal_uses(files)


def test_a_literal_key_is_caught(tmp_path: Path) -> None:
    planted = tmp_path / "page.py"
    planted.write_text('import streamlit as st\nx = st.session_state.get("wi_loss")\nst.session_state["a"] = 1\n')
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        assert _literal_uses([planted]) == ["page.py:2", "page.py:3"]
    finally:
        ROOT = saved


def test_every_session_name_is_its_own() -> None:
    names = {k: v for k, v in vars(session_keys).items() if k.isupper()}
    assert len(names) > 30 and len(set(names.values())) == len(names)
    assert all(isinstance(v, str) and v for v in names.values())
