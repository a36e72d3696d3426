"""Agent calls are logged once and answered from the log when repeated."""
from __future__ import annotations

import json
import math

import pytest

from dcem.store.database import Store
from dcem_clinical.agent import DiagnosticAgent
from dcem_clinical.call_log import CallContext, LoggedAgent, call_count
from runtime.messages import GenerationOptions
from runtime.testing import ScriptedBackend

LABELS = ("Anaphylaxis", "GERD", "URTI")


def _agent(backend: ScriptedBackend, **kw: object) -> DiagnosticAgent:
    return DiagnosticAgent(backend, LABELS, **kw)  # type: ignore[arg-type]


def test_repeat_call_is_a_cache_hit_with_no_model_call_and_no_row(store: Store) -> None:
    backend = ScriptedBackend(scores=lambda m, o: [math.log(0.2), math.log(0.7), math.log(0.1)])
    agent = LoggedAgent(_agent(backend), store)
    ctx = CallContext(run_id="r", case_id="c1", agent=0, round=1)
    first, cached = agent.classify("burning pain after meals", context=ctx)
    assert not cached and first.label == 1 and call_count(store, "r") == 1
    again, cached = agent.classify("burning pain after meals", context=ctx)
    assert cached and again.label == 1 and again.probabilities.tolist() == pytest.approx(first.probabilities.tolist())
    assert len(backend.calls) == 1 and call_count(store) == 1
    row = store.con.execute("SELECT run_id, case_id, agent, round, purpose, backend, model_sha256, "
                            "messages_json, parsed_json FROM llm_calls").fetchone()
    assert row[:6] == ("r", "c1", 0, 1, "classify", "scripted") and len(row[6]) == 64
    assert "burning pain" in json.loads(row[7])[-1]["content"]
    assert json.loads(row[8]) == {"label": 1, "label_name": "GERD"}


def test_key_covers_seed_temperature_note_and_model(store: Store) -> None:
    backend = ScriptedBackend()
    LoggedAgent(_agent(backend), store).classify("x")
    LoggedAgent(_agent(backend, options=GenerationOptions(seed=1)), store).classify("x")
    LoggedAgent(_agent(backend, options=GenerationOptions(temperature=0.3)), store).classify("x")
    LoggedAgent(_agent(backend), store).classify("x", note="look again")
    other_model = ScriptedBackend(model_sha256="1" * 64)
    LoggedAgent(_agent(other_model), store).classify("x")
    assert call_count(store) == 5 and len(backend.calls) == 4 and len(other_model.calls) == 1


def test_failed_parses_are_logged_with_the_error_and_not_served_from_cache(store: Store) -> None:
    backend = ScriptedBackend(["garbage"], scores=lambda m, o: [0.0, -3.0, -3.0])
    agent = LoggedAgent(_agent(backend, mode="json"), store)
    report, _ = agent.classify("hives")
    assert report.error and "scored fallback" in report.error
    agent.classify("hives")  # an errored row is not a cache hit: the call is retried
    errors = store.con.execute("SELECT count(*) FROM llm_calls WHERE error IS NOT NULL").fetchone()[0]
    assert errors == 2 and len([c for c in backend.calls if c[0] == "generate"]) == 2


def test_cue_calls_are_cached_too(store: Store) -> None:
    backend = ScriptedBackend(["- hives\n- wheeze"])
    agent = LoggedAgent(_agent(backend), store)
    assert agent.cues("case", "URTI", "Anaphylaxis") == (["hives", "wheeze"], False)
    assert agent.cues("case", "URTI", "Anaphylaxis") == (["hives", "wheeze"], True)
    assert store.con.execute("SELECT purpose FROM llm_calls").fetchall() == [("cues",)]
