"""Training items for SAG agents: a single agent's answer turn, taught with GRPO.

The agent answers as the ``single`` group's agent does (:func:`sag.debate.baselines.play_single`):
the shared transcript of the question alone and the alone-instruction, rendered by the
runtime so the adapter meets the same tokens in llama.cpp.  Its action is one answer
letter; a question with fewer options than the longest one offers only its own letters
(:attr:`training.letter_task.LetterItems.offered`).  Reward: accuracy, +1 right and -1
wrong times the accuracy weight.  Data: the TRAIN part of each benchmark
(:mod:`clinical.training_split`), measured on its HELD-OUT part.
"""
from __future__ import annotations

import hashlib
from typing import Sequence

import numpy as np

from clinical.questions import QuestionItem
from common.errors import ConfigError
from runtime.llama_backend import LlamaCppBackend
from sag.group.config import AgentRole, GroupConfig
from sag.debate.hybrid import Debate
from training.config import RewardWeights
from training.letter_task import LetterItems

__all__ = ["single_turn_tokens", "build_single_items", "items_hash", "TRAINABLE_BENCHMARKS"]

TRAINABLE_BENCHMARKS = ("medqa", "medmcqa", "pubmedqa", "ddxplus8")
"""Benchmarks a single agent trains on (DDXPlus-8 as eight-option diagnosis questions;
MedSafetyBench needs REFUSE, which only safety agents and judges can answer: group training)."""


def single_turn_tokens(backend: LlamaCppBackend, item: QuestionItem) -> tuple[int, ...]:
    """Token ids of the single agent's answer turn on ``item``."""
    cfg = GroupConfig(name="single", method="single")
    debate = Debate(item, cfg, engine=None, retrievers={})  # type: ignore[arg-type]  # no turn is played
    (index, agent), = debate.of_role(AgentRole.REASONING)
    turn = debate.turn(index, agent, 0, "answer", alone=True)
    return tuple(backend.prompt_tokens(list(turn.messages)))


def build_single_items(backend: LlamaCppBackend, items: Sequence[QuestionItem], *, max_tokens: int,
                       rewards: RewardWeights) -> LetterItems:
    """Items over the letters A.. of the longest option list; each offers its own letters.

    An item whose prompt exceeds ``max_tokens`` is left out (a PubMedQA abstract can be
    long); the caller reports how many.  A :class:`ConfigError` when none is left."""
    width = max(len(i.options) for i in items)
    names = tuple(chr(ord("A") + k) for k in range(width))
    kept, tokens, shortest = [], [], None
    for item in items:
        ids = single_turn_tokens(backend, item)
        shortest = len(ids) if shortest is None else min(shortest, len(ids))
        if len(ids) <= max_tokens:
            kept.append(item)
            tokens.append(ids)
    if not kept:
        raise ConfigError("max_prompt_tokens", f"no item's prompt fits in {max_tokens} tokens (the shortest of "
                                               f"{len(items)} has {shortest}); give a larger --max-prompt-tokens")
    right = np.array([names.index(i.answer) for i in kept])
    offered = np.array([[k < len(i.options) for k in range(width)] for i in kept])
    table = np.full((len(kept), width), rewards.wrong * rewards.accuracy)
    table[np.arange(len(kept)), right] = rewards.correct * rewards.accuracy
    return LetterItems(tuple(i.item_id for i in kept), tuple(tokens), tuple(backend.option_token(n) for n in names),
                       names, table, right, offered)


def items_hash(items: Sequence[QuestionItem]) -> str:
    """sha256 over the sorted items' ids, questions, options, answers and contexts."""
    digest = hashlib.sha256()
    for item in sorted(items, key=lambda i: (i.benchmark, i.item_id)):
        digest.update(repr((item.benchmark, item.item_id, item.question, item.options, item.answer,
                            item.context)).encode("utf-8"))
    return digest.hexdigest()
