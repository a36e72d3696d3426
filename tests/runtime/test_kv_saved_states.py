"""Saved KV states on the packaged models: interleaved agents, cases and rounds give the
scores of a cold evaluation while most prompt tokens come from saved states."""
from __future__ import annotations

from pathlib import Path

import pytest

from clinical.datasets import load_dataset
from common.errors import ConfigError
from dcem_clinical.agent import DiagnosticAgent
from dcem_clinical.prompts import continue_note, letters
from runtime.llama_backend import LlamaCppBackend
from runtime.messages import GenerationOptions
from tests.runtime.test_llama_backend import MODEL


@pytest.fixture(scope="module")
def warm() -> LlamaCppBackend:
    return LlamaCppBackend(MODEL, n_ctx=1024, n_threads=1)


def _round_major_prompts(backend: LlamaCppBackend, rounds: int = 3, n_cases: int = 3) -> list:
    """A panel's order of calls: round by round, agent by agent, case by case."""
    ds = load_dataset("ddxplus8")
    agents = [DiagnosticAgent(backend, ds.labels, name=n) for n in ("Agent A", "Agent B")]
    out = []
    for t in range(rounds):
        for agent in agents:
            for case in ds.cases[:n_cases]:
                note = None if t == 0 else continue_note(ds.labels[t], ds.labels[(t + case.label) % 8])
                out.append(agent.messages(case.text, note))
    return out


@pytest.mark.parametrize("split", ["fixed", "paragraph"])
def test_saved_states_give_the_cold_scores_and_most_tokens_from_the_cache(warm: LlamaCppBackend,
                                                                          split: str) -> None:
    warm.set_split(split)
    opts = letters(8)
    prompts = _round_major_prompts(warm, rounds=2, n_cases=2)  # A c0, A c1, B c0, B c1, then round 2
    got = []
    for msgs in prompts:
        got.append((warm.score_options(msgs, opts).logprobs, warm.last_reused))
        if len(got) == 5:  # a cue call between two scored calls must not disturb the reuse
            warm.generate(prompts[0], GenerationOptions(max_tokens=4))
    cold = LlamaCppBackend(MODEL, n_ctx=1024, n_threads=1, kv_cache_mb=0, sha256=warm.model_sha256, split=split)
    for msgs, (logprobs, _) in zip(prompts, got):
        cold.forget()
        assert cold.score_options(msgs, opts).logprobs == logprobs  # bit-identical
        assert cold.last_reused == 0
    first_round = [r for _, r in got[:4]]
    later = [r for _, r in got[4:]]
    assert first_round[0] == 0 and first_round[1] >= 64 and first_round[3] >= 64  # the agent's shared prefix
    assert all(r >= 256 for r in later)  # the case is kept between rounds: only the note is new
    if split == "paragraph":  # ... all of it: the reuse ends exactly where the note's paragraph starts
        for msgs, r in zip(prompts[4:], later):
            tokens = warm.prompt_tokens(msgs)
            assert warm.llm.detokenize(tokens[:r], special=True).endswith(b"\n\n")
            assert warm.llm.detokenize(tokens[r:], special=True).startswith(b"Note from the mediator")
    assert sum(r for _, r in got) / sum(len(warm.prompt_tokens(m)) for m in prompts) > 0.4
    stats = warm.kv.stats()
    assert stats["restored"] >= 4 and stats["states"] <= 4  # one state per (agent, case): older ones replaced
    warm.set_split("fixed")


def test_a_small_budget_evicts_and_still_gives_the_cold_scores(warm: LlamaCppBackend) -> None:
    small = LlamaCppBackend(MODEL, n_ctx=1024, n_threads=1, kv_cache_mb=20, sha256=warm.model_sha256)
    opts = letters(8)
    prompts = _round_major_prompts(small, rounds=2, n_cases=3)  # A r1 c0-2, B r1 c0-2, A r2 c0-2, B r2 ...
    order = [0, 1, 6, 3, 4, 5, 7, 2]  # A c0, A c1, A c0 again (its state is saved), B's cases (evicting A's)
    for i in order:
        lp = small.score_options(prompts[i], opts).logprobs
        assert small.kv.bytes <= 20 << 20
        warm.forget()
        assert warm.score_options(prompts[i], opts).logprobs == lp
    assert small.kv.evicted > 0 and small.kv.restored > 0


def test_a_bad_budget_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DCEM_KV_CACHE_MB", "a lot")
    with pytest.raises(ConfigError, match="DCEM_KV_CACHE_MB"):
        LlamaCppBackend(MODEL, n_ctx=256, n_threads=1, sha256="0" * 64)
    monkeypatch.delenv("DCEM_KV_CACHE_MB")
    with pytest.raises(ConfigError, match="split.*fixed, paragraph"):
        LlamaCppBackend(MODEL, n_ctx=256, n_threads=1, sha256="0" * 64, split="sentence")


@pytest.mark.parametrize("split", ["fixed", "paragraph"])
def test_free_text_reuses_the_case_state_and_decodes_like_a_cold_context(warm: LlamaCppBackend, split: str) -> None:
    warm.set_split(split)
    ds = load_dataset("ddxplus8")
    agent = DiagnosticAgent(warm, ds.labels)
    case = ds.cases[3].text
    warm.forget()
    warm.score_options(agent.messages(case), letters(8))
    cue_msgs = agent.cue_messages(case, ds.labels[0], ds.labels[1])
    options = GenerationOptions(max_tokens=12)
    reply = warm.generate(cue_msgs, options)
    assert warm.last_reused >= 192  # the category list and the case came from the classification's state
    assert 1 <= reply.completion_tokens <= 12 and reply.prompt_tokens == len(warm.prompt_tokens(cue_msgs))
    warm.forget()
    cold = warm.generate(cue_msgs, options)
    assert warm.last_reused == 0 and cold.text == reply.text  # greedy text identical with or without reuse
    after = warm.score_options(agent.messages(case), letters(8))  # the context is still sound afterwards
    warm.forget()
    assert warm.score_options(agent.messages(case), letters(8)).logprobs == after.logprobs
    warm.set_split("fixed")


@pytest.mark.slow
def test_paragraph_blocks_on_the_base_model_keep_the_case_and_give_the_cold_scores(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Gemma (no chat template: a plain transcript, "\\n\\n" a token of its own), the
    informative-panel grid's second model, under the clinical runner's split."""
    from runtime.registry import resolve

    monkeypatch.setenv("DCEM_MODEL_CACHE", str(tmp_path))
    gemma = LlamaCppBackend(resolve("gemma3-270m"), n_ctx=1024, n_threads=1, split="paragraph")
    ds = load_dataset("ddxplus8")
    agent = DiagnosticAgent(gemma, ds.labels)
    case = ds.cases[0].text
    gemma.score_options(agent.messages(case), letters(8))
    noted = agent.messages(case, continue_note(ds.labels[0], ds.labels[1]))
    warm = gemma.score_options(noted, letters(8)).logprobs
    tokens, kept = gemma.prompt_tokens(noted), gemma.last_reused
    assert gemma.llm.detokenize(tokens[:kept], special=True).endswith(b"\n\n")
    assert gemma.llm.detokenize(tokens[kept:], special=True).startswith(b"Note from the mediator")
    gemma.forget()
    assert gemma.score_options(noted, letters(8)).logprobs == warm and gemma.last_reused == 0
