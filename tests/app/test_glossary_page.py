"""The Glossary page: every concept, metric and parameter in words, grouped, reachable
from the app's navigation."""
from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from studio.views.glossary import CONCEPTS, GLOSSARY, GLOSSARY_GROUPS, METRICS, PARAMETERS

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
    assert [s.value for s in glossary.subheader] == [group for group, _ in GLOSSARY_GROUPS]
    assert [s.value for s in glossary.subheader][:3] == ["Concepts", "Metrics", "Parameters"]
    text = "\n".join(m.value for m in glossary.markdown)
    for name, term in [(n, t) for _, terms in GLOSSARY_GROUPS for n, t in terms.items()]:
        assert text.count(f"**{term.words}** (`{name}`): {term.help}") == 1, name
    for missing_before in ("dangerous_miss", "pooled_q", "cdr", "compliance", "bayes_decision", "runner_up",
                           "cal_accuracy", "chance_level", "cues", "single", "free", "pool", "sharpened_world",
                           "hrr", "roc_auc", "gap", "cr", "supported", "grounded", "bleu4", "A_R", "A_K", "A_S",
                           "A_J"):
        assert f"(`{missing_before}`)" in text, missing_before
    for required in ("energy", "margin", "eps_safe", "eps_low", "delta", "s_asym", "certified",
                     "harmful_consensus", "system_risk"):
        assert required in GLOSSARY
    # the groups come in order: concepts before metrics before parameters
    first = {group: min(text.index(f"(`{n}`)") for n in terms)
             for group, terms in (("c", CONCEPTS), ("m", METRICS), ("p", PARAMETERS))}
    assert first["c"] < first["m"] < first["p"]


def test_the_scenarios_the_members_settings_and_the_guarantees_inputs_are_defined(glossary: AppTest) -> None:
    """Issue 51: S1-S3b, fixed_sequence / bonferroni, anchor / kappa and "ex post" appear on
    the pages; the guarantee's inputs go by names apart from the mediator's alpha and delta."""
    text = "\n".join(m.value for m in glossary.markdown)
    for name in ("S1", "S2", "S3a", "S3b", "fixed_sequence", "bonferroni", "anchor", "kappa", "ex_post", "rate_bound",
                 "bound_fails"):
        assert f"(`{name}`)" in text, name
    assert "**S3b (noisy, not complementary)**" in text and "**Ex post**" in text
    risk = GLOSSARY["risk_control"].help
    assert "the rate bound (alpha)" in risk and "the chance the bound fails" in risk
    assert "not the mediator's own alpha" in risk
