"""The Glossary page: every concept, metric and parameter in words, grouped, reachable
from the app's navigation."""
from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dcem.analysis.glossary import CONCEPTS, GLOSSARY, METRICS, PARAMETERS

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def glossary(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> AppTest:
    monkeypatch.setenv("DCEM_DB", str(tmp_path / "none.duckdb"))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    at.switch_page("pages/glossary.py").run()
    assert not at.exception
    return at


def test_the_glossary_is_in_the_navigation(glossary: AppTest) -> None:
    assert glossary.title[0].value == "Glossary"
    assert any("not clinical advice" in c.value for c in glossary.caption)


def test_every_term_is_defined_once_in_its_group(glossary: AppTest) -> None:
    assert [s.value for s in glossary.subheader] == ["Concepts", "Metrics", "Parameters"]
    text = "\n".join(m.value for m in glossary.markdown)
    for name, term in GLOSSARY.items():
        assert text.count(f"**{term.words}** (`{name}`): {term.help}") == 1, name
    for required in ("energy", "margin", "eps_safe", "eps_low", "delta", "s_asym", "certified",
                     "harmful_consensus", "system_risk"):
        assert required in GLOSSARY
    # the groups come in order: concepts before metrics before parameters
    first = {group: min(text.index(f"(`{n}`)") for n in terms)
             for group, terms in (("c", CONCEPTS), ("m", METRICS), ("p", PARAMETERS))}
    assert first["c"] < first["m"] < first["p"]
