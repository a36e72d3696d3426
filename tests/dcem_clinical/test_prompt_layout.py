"""The case-first prompt layout: agents on one model share a case's prompt up to its end.

agent-first (the default, every shipped run) must stay byte-identical; case-first moves the
agent's name and role after the case, keeps the run ids of agent-first specs, and on the
packaged SmolLM2 lets agent B restore agent A's evaluation of the case with the scores of a
cold evaluation.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from clinical.datasets import load_dataset
from dcem.core.config import MediatorConfig
from common.errors import ConfigError
from dcem.store.database import Store
from dcem_clinical.agent import DiagnosticAgent
from dcem_clinical.cli import _parser
from dcem_clinical.prompts import CASE_FIRST, ROLE_NEUTRAL, continue_note, cue_request, letters, system_prompt
from dcem_clinical.roles import scenario_roles
from dcem_clinical.run import ClinicalSpec, run_clinical
from runtime.messages import Message, Role
from runtime.testing import ScriptedBackend
from tests.dcem_clinical.clinical_fakes import oracle_backend
from tests.dcem_clinical.test_panel_size_prompt import TWO_AGENT_PROMPT

LABELS = ("Anaphylaxis", "GERD", "URTI")
CASE = "A 30-year-old with a runny nose and a mild sore throat for two days."
ANCHOR = scenario_roles("ddxplus8", "S2")[1]


def _agents(layout: str, roles: tuple[str, str] = (ROLE_NEUTRAL, ANCHOR)) -> list[DiagnosticAgent]:
    return [DiagnosticAgent(ScriptedBackend(), LABELS, name=n, role=r, layout=layout)
            for n, r in zip(("Agent A", "Agent B"), roles)]


def _common(a: str, b: str) -> int:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return n


def test_agent_first_is_the_default_and_unchanged() -> None:
    plain = DiagnosticAgent(ScriptedBackend(), LABELS, role=ROLE_NEUTRAL)
    explicit = DiagnosticAgent(ScriptedBackend(), LABELS, role=ROLE_NEUTRAL, layout="agent-first")
    assert plain.layout == "agent-first"
    assert plain.messages(CASE, "a note") == explicit.messages(CASE, "a note")
    assert plain.messages(CASE)[0].content == TWO_AGENT_PROMPT
    assert "You are Agent A" not in plain.messages(CASE)[1].content


def test_case_first_names_the_agent_after_the_case_and_before_the_note() -> None:
    a, b = _agents(CASE_FIRST)
    note = continue_note("URTI", "GERD")
    sys_a, user_b = a.messages(CASE, note)[0].content, b.messages(CASE, note)[1].content
    assert sys_a == b.messages(CASE)[0].content  # one system turn for the whole panel
    assert "Agent A" not in sys_a and ROLE_NEUTRAL not in sys_a and "one of two agents" in sys_a
    case_at, me_at = user_b.index(CASE), user_b.index(f"You are Agent B. {ANCHOR}")
    note_at, ask_at = user_b.index(note), user_b.index("Answer with the letter")
    assert user_b.index("Categories:") < case_at < me_at < note_at < ask_at
    # the two agents' user turns agree up to the end of the case
    user_a = a.messages(CASE, note)[1].content
    assert _common(user_a, user_b) >= case_at + len(CASE) and user_a != user_b
    assert "treatment advice" in sys_a


def test_case_first_cue_call_starts_like_the_classification_prompt() -> None:
    _, b = _agents(CASE_FIRST)
    cue = b.cue_messages(CASE, "URTI", "GERD")
    scored = b.messages(CASE)
    assert cue[0] == scored[0]
    head = scored[1].content.rsplit("\n\n", 1)[0]  # everything before the answer request
    assert cue[1].content.startswith(head + "\n\n") and "tell URTI apart from GERD" in cue[1].content
    bare = cue_request(("URTI", "GERD"), CASE, "Agent B", ANCHOR, layout=CASE_FIRST)  # without the label list
    assert bare[1].content.startswith(f"Case:\n{CASE}\n\nYou are Agent B. {ANCHOR}")
    assert cue_request(("URTI", "GERD"), CASE, "Agent B", ANCHOR)[0].content == system_prompt("Agent B", ANCHOR)


def test_a_json_fallback_keeps_the_layout() -> None:
    backend = ScriptedBackend(["not json at all"])
    agent = DiagnosticAgent(backend, LABELS, name="Agent B", role=ANCHOR, mode="json", layout=CASE_FIRST)
    report = agent.classify(CASE)
    assert report.error is not None and "scored fallback" in report.error
    fallback = backend.calls[-1][1]
    assert fallback[0].content == agent.system_prompt() and f"You are Agent B. {ANCHOR}" in fallback[1].content


def test_a_bad_layout_is_a_clear_error_everywhere() -> None:
    with pytest.raises(ConfigError) as exc:
        DiagnosticAgent(ScriptedBackend(), LABELS, layout="role-last")
    assert exc.value.field == "layout" and "case-first" in str(exc.value)
    with pytest.raises(ConfigError) as exc:
        ClinicalSpec(layout="sideways")
    assert exc.value.field == "layout"
    with pytest.raises(ValueError, match="agent-first, case-first"):
        system_prompt("Agent A", "", layout="")
    with pytest.raises(SystemExit):
        _parser().parse_args(["run", "--layout", "upside-down"])
    assert _parser().parse_args(["run", "--layout", "case-first"]).layout == "case-first"


def test_run_ids_of_agent_first_specs_stay_and_case_first_is_its_own_run() -> None:
    default, case_first = ClinicalSpec(), ClinicalSpec(layout=CASE_FIRST)
    assert "layout" not in default.to_dict() and case_first.to_dict()["layout"] == CASE_FIRST
    assert default.run_id() == ClinicalSpec(layout="agent-first").run_id() != case_first.run_id()
    assert case_first.layout == CASE_FIRST


def test_a_case_first_cell_sends_one_system_turn_and_each_agent_after_the_case(tmp_path: Path) -> None:
    spec = ClinicalSpec(dataset="ddxplus8", scenarios=("S2",), seeds=(0,), n_cal=6, n_test=3,
                        agents=("fake-a", "fake-b"), base_config=MediatorConfig(prior="empirical", t_max=2),
                        free_rounds=1, layout=CASE_FIRST)
    with Store(tmp_path / "s.duckdb") as store:
        summary = run_clinical(store, spec, backends=[oracle_backend("ddxplus8", tag=t) for t in "ab"])
        rows = store.con.execute("SELECT messages_json FROM llm_calls WHERE run_id = ? AND purpose = 'classify'",
                                 [summary.run_id]).fetchall()
    assert summary.complete and rows
    turns = [json.loads(m) for (m,) in rows]
    assert len({t[0]["content"] for t in turns}) == 1
    users = [t[1]["content"] for t in turns]
    anchor = scenario_roles("ddxplus8", "S2")[1]
    assert any(f"You are Agent B. {anchor}" in u for u in users)
    assert any(f"You are Agent A. {ROLE_NEUTRAL}" in u for u in users)
    assert all(u.index("Case:") < u.index("You are Agent") for u in users)


@pytest.mark.slow
def test_on_smollm2_agent_b_restores_agent_a_case_and_scores_like_a_cold_prompt() -> None:
    from runtime.kv_cache import common_length, reusable_length
    from runtime.llama_backend import BLOCK, LlamaCppBackend
    from tests.runtime.test_llama_backend import MODEL

    ds = load_dataset("ddxplus8")
    cases = ds.cases[:2]
    warm = LlamaCppBackend(MODEL, n_ctx=1024, n_threads=1)
    cold = LlamaCppBackend(MODEL, n_ctx=1024, n_threads=1, kv_cache_mb=0, sha256=warm.model_sha256)
    reused: dict[str, list[int]] = {"agent-first": [], CASE_FIRST: []}
    for layout in reused:
        warm.forget()
        agents = [DiagnosticAgent(warm, ds.labels, name=n, layout=layout) for n in ("Agent A", "Agent B")]
        for agent in agents:  # agent-major, as a panel's round runs
            for case in cases:
                msgs = agent.messages(case.text)
                got = warm.score_options(msgs, letters(8)).logprobs
                reused[layout].append(warm.last_reused)
                if layout == CASE_FIRST:  # (agent-first's identity is tested with the saved states)
                    cold.forget()
                    assert cold.score_options(msgs, letters(8)).logprobs == got  # bit-identical
        if layout == CASE_FIRST:
            for i, case in enumerate(cases):
                tok_a, tok_b = (warm.prompt_tokens(a.messages(case.text)) for a in agents)
                shared = common_length(np.asarray(tok_a), np.asarray(tok_b))
                case_end = len(warm.prompt_tokens([agents[1].messages(case.text)[0],
                                                   Message(Role.USER, agents[1].messages(case.text)[1].content
                                                           .split("\n\nYou are Agent B")[0])]))
                assert shared >= case_end - 8  # the prompts agree up to the end of the case
                assert reused[CASE_FIRST][2 + i] == reusable_length(tok_b, tok_a, BLOCK) >= shared - BLOCK
    b_first, b_case = reused["agent-first"][2:], reused[CASE_FIRST][2:]
    assert b_first[0] == 0  # agent-first: nothing of A's prompts fits B's first one
    assert all(c >= f + BLOCK for c, f in zip(b_case, b_first))
