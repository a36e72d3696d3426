"""The system prompt names the panel's size; the two-agent text never changes."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from dcem.core.config import MediatorConfig
from common.errors import ConfigError
from dcem.store.database import Store
from dcem_clinical.agent import DiagnosticAgent
from dcem_clinical.prompts import ROLE_NEUTRAL, cue_request, number_word, system_prompt
from dcem_clinical.run import ClinicalSpec, run_clinical
from runtime.testing import ScriptedBackend
from tests.dcem_clinical.clinical_fakes import oracle_backend

LABELS = ("Anaphylaxis", "GERD", "URTI")

# the text every shipped call log was cached under: a change invalidates their cache keys
TWO_AGENT_PROMPT = (
    "You are Agent A, one of two agents sorting clinical cases into a fixed set of categories for a "
    "research study. You are an experienced senior clinician with no preferred diagnosis. Pick exactly one "
    "category from the list you are given, never invent a new one, and be honest when the case is unclear. "
    "Do not give treatment advice.")


def test_two_agent_system_prompt_is_byte_identical() -> None:
    assert system_prompt("Agent A", ROLE_NEUTRAL) == TWO_AGENT_PROMPT
    assert system_prompt("Agent A", ROLE_NEUTRAL, n_agents=2) == TWO_AGENT_PROMPT
    agent = DiagnosticAgent(ScriptedBackend(), LABELS, role=ROLE_NEUTRAL)
    assert agent.n_agents == 2 and agent.messages("x")[0].content == TWO_AGENT_PROMPT
    cues = cue_request(("GERD", "URTI"), "x", "Agent A", ROLE_NEUTRAL)
    assert cues == cue_request(("GERD", "URTI"), "x", "Agent A", ROLE_NEUTRAL, n_agents=2)
    assert cues[0].content == TWO_AGENT_PROMPT


@pytest.mark.parametrize("n, word", [(3, "three"), (4, "four"), (5, "five"), (6, "six"), (7, "seven"),
                                     (8, "eight")])
def test_larger_panels_say_their_size_in_words(n: int, word: str) -> None:
    text = system_prompt("Agent C", ROLE_NEUTRAL, n_agents=n)
    assert text == TWO_AGENT_PROMPT.replace("Agent A", "Agent C").replace("one of two", f"one of {word}")
    assert cue_request(("GERD", "URTI"), "x", "Agent C", ROLE_NEUTRAL, n_agents=n)[0].content == text


def test_number_words_and_bad_panel_sizes() -> None:
    assert [number_word(n) for n in (2, 12, 20, 21, 26)] == ["two", "twelve", "twenty", "twenty-one", "twenty-six"]
    for bad in (0, 1, 27, True, 3.0, "3"):
        with pytest.raises(ValueError):
            system_prompt("Agent A", "", n_agents=bad)  # type: ignore[arg-type]
        with pytest.raises(ConfigError) as exc:
            DiagnosticAgent(ScriptedBackend(), LABELS, n_agents=bad)  # type: ignore[arg-type]
        assert exc.value.field == "n_agents"


def test_agent_sends_its_panel_size_in_every_call() -> None:
    backend = ScriptedBackend(["- finding one"])
    agent = DiagnosticAgent(backend, LABELS, name="Agent D", n_agents=4)
    agent.classify("runny nose")
    agent.cues("runny nose", "URTI", "Anaphylaxis")
    json_agent = DiagnosticAgent(ScriptedBackend(['{"predicted_label": "URTI", "probabilities": {}}']), LABELS,
                                 n_agents=5, mode="json")
    json_agent.classify("runny nose")
    systems = [c[1][0].content for c in backend.calls] + [c[1][0].content for c in json_agent.backend.calls]
    assert len(systems) == 3
    assert all("one of four agents" in s for s in systems[:2]) and "one of five agents" in systems[2]
    assert agent.cue_messages("runny nose", "URTI", "Anaphylaxis")[0].content == systems[1]


def _system_prompts(store: Store, run_id: str) -> set[str]:
    rows = store.con.execute("SELECT messages_json FROM llm_calls WHERE run_id = ? AND purpose = 'classify'",
                             [run_id]).fetchall()
    return {json.loads(m)[0]["content"] for (m,) in rows}


def test_a_cell_tells_each_llm_member_the_panel_size(tmp_path: Path) -> None:
    def spec(*agents: str) -> ClinicalSpec:
        return ClinicalSpec(dataset="ddxplus8", scenarios=("S1",), seeds=(0,), n_cal=8, n_test=4, agents=agents,
                            base_config=MediatorConfig(prior="empirical", t_max=2), free_rounds=1)

    with Store(tmp_path / "s.duckdb") as store:
        three = run_clinical(store, spec("fake-a", "fake-b", "fake-c"),
                             backends=[oracle_backend("ddxplus8", tag=t) for t in "abc"])
        prompts = _system_prompts(store, three.run_id)
        assert three.complete and len(prompts) == 3
        assert all("one of three agents" in p and "one of two" not in p for p in prompts)
        assert {p.split(",")[0] for p in prompts} == {"You are Agent A", "You are Agent B", "You are Agent C"}
        two = run_clinical(store, spec("fake-a", "fake-b"), backends=[oracle_backend("ddxplus8", tag=t) for t in "ab"])
        assert system_prompt("Agent A", ROLE_NEUTRAL) in _system_prompts(store, two.run_id)
        assert all("one of two agents" in p for p in _system_prompts(store, two.run_id))


def test_the_cue_cache_key_is_made_from_the_messages_the_agent_sends(tmp_path: Path) -> None:
    from dcem_clinical.call_log import LoggedAgent, call_cache_key

    with Store(tmp_path / "s.duckdb") as store:
        keys = []
        for n in (2, 3):
            agent = DiagnosticAgent(ScriptedBackend(["- fever\n- cough"]), ("URTI", "GERD"), name="Agent A",
                                    n_agents=n)
            logged = LoggedAgent(agent, store)
            logged.cues("A cough.", "URTI", "GERD")
            assert logged.last_key == call_cache_key(agent, "cues", agent.cue_messages("A cough.", "URTI", "GERD"))
            keys.append(logged.last_key)
        assert keys[0] != keys[1]  # panels of different sizes never answer each other's cue calls
