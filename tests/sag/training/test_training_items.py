"""``sag.training.single_agent.build_single_items`` on DDXPlus-8's eight-option questions (SmolLM2-135M,
prompts tokenized only: nothing is generated)."""
from __future__ import annotations

import numpy as np
import pytest

from clinical.training_split import heldout_items, train_items
from runtime.llama_backend import LlamaCppBackend
from runtime.registry import resolve
from sag.training.single_agent import TRAINABLE_BENCHMARKS, build_single_items, single_turn_tokens
from training.config import RewardWeights


@pytest.fixture(scope="module")
def backend() -> LlamaCppBackend:
    return LlamaCppBackend(resolve("smollm2-135m"), n_ctx=2048, n_threads=1, kv_cache_mb=0)


def test_two_ddxplus_items_give_eight_option_tokens(backend: LlamaCppBackend) -> None:
    assert "ddxplus8" in TRAINABLE_BENCHMARKS
    two = list(train_items("ddxplus8")[:2])
    got = build_single_items(backend, two, max_tokens=1024, rewards=RewardWeights())
    assert got.option_names == tuple("ABCDEFGH")
    assert got.option_ids == tuple(backend.option_token(n) for n in "ABCDEFGH") and len(set(got.option_ids)) == 8
    assert got.ids == tuple(it.item_id for it in two)
    assert got.tokens == tuple(single_turn_tokens(backend, it) for it in two)
    assert got.right.tolist() == [it.answer_index for it in two]
    assert got.offered is not None and got.offered.all() and got.rewards.shape == (2, 8)
    assert np.array_equal(got.rewards.argmax(axis=1), got.right)
    prompt = backend.llm.detokenize(list(got.tokens[0])).decode("utf-8")
    assert all(f"{letter}. {text}" in prompt for letter, text in two[0].options)


def test_with_fewer_option_questions_only_their_letters_are_offered(backend: LlamaCppBackend) -> None:
    mixed = [heldout_items("ddxplus8")[0], heldout_items("pubmedqa")[0]]
    got = build_single_items(backend, mixed, max_tokens=2048, rewards=RewardWeights())
    assert got.option_names == tuple("ABCDEFGH") and got.offered is not None
    assert got.offered.tolist() == [[True] * 8, [True] * 3 + [False] * 5]
    shortest = min(len(t) for t in got.tokens)
    kept = build_single_items(backend, mixed, max_tokens=shortest, rewards=RewardWeights())
    assert len(kept.ids) == 1 and kept.tokens[0] == min(got.tokens, key=len)
