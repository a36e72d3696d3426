"""A cue list stops decoding once its three cues are written: the parsed cues stay the same."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from clinical.datasets import load_dataset
from dcem_clinical.agent import CUE_TOKENS, DiagnosticAgent, cues_complete, parse_cues
from runtime.messages import GenerationOptions


def test_cues_are_complete_only_when_three_finished_lines_hold_findings() -> None:
    assert not cues_complete("")
    assert not cues_complete("- fever\n- cough\n- wheeze")  # the third line may still grow
    assert cues_complete("- fever\n- cough\n- wheeze\n")
    assert not cues_complete("1.\n-\n\n- fever\n- cough\n")  # bullets alone are not cues
    assert cues_complete("1.\n- fever\n\n- cough\n3) rash\nmore")
    assert GenerationOptions(until=cues_complete) == GenerationOptions()  # a hint, not part of the options' identity
    assert "until" not in GenerationOptions(until=cues_complete).to_dict()  # nor of a cache key


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab -1.)\n\r*•")), max_size=60))
def test_stopping_where_cues_are_complete_never_changes_the_parsed_cues(text: str) -> None:
    for end in range(len(text) + 1):  # the first prefix at which a decoder would stop
        if cues_complete(text[:end]):
            assert parse_cues(text[:end]) == parse_cues(text)
            break


@pytest.mark.slow
def test_on_smollm2_a_stopped_cue_list_is_a_prefix_of_the_full_one_with_the_same_cues() -> None:
    from runtime.llama_backend import LlamaCppBackend
    from tests.runtime.test_llama_backend import MODEL

    ds = load_dataset("ddxplus8")
    backend = LlamaCppBackend(MODEL, n_ctx=1024, n_threads=1)
    agent = DiagnosticAgent(backend, ds.labels)
    shorter = 0
    for case in ds.cases[:4]:
        msgs = agent.cue_messages(case.text, ds.labels[0], ds.labels[6])
        full = backend.generate(msgs, GenerationOptions(max_tokens=CUE_TOKENS)).text
        cues, report = agent.cues(case.text, ds.labels[0], ds.labels[6])
        assert full.startswith(report.raw) and cues == parse_cues(full)
        assert report.completion_tokens <= CUE_TOKENS
        shorter += len(report.raw) < len(full)
        assert (len(report.raw) < len(full)) == cues_complete(report.raw)
    assert shorter >= 1  # the packaged model writes its three lines and goes on: decoding stopped early
