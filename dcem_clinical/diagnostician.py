"""Training items for a diagnostician: one agent of D-CEM's clinical panels.

The agent is the scored-mode :class:`~dcem_clinical.agent.DiagnosticAgent` with the
neutral role, prompted exactly as a panel member is in round 1 (the runtime renders the
prompt and gives its token ids, so the trained adapter meets the same tokens in
llama.cpp).  Its action is one category letter; the reward is accuracy only (+1 right,
-1 wrong, times the accuracy weight): a diagnosis case has no harmful request and no
demographic twin.  The optimiser step is the generic one of
:class:`training.letter_task.LetterStep`.
"""
from __future__ import annotations

import hashlib
from typing import Sequence

import numpy as np

from clinical.datasets import ClinicalCase
from common.errors import ConfigError
from dcem_clinical.agent import DiagnosticAgent
from dcem_clinical.prompts import ROLE_NEUTRAL, letters
from runtime.llama_backend import LlamaCppBackend
from training.config import RewardWeights
from training.letter_task import LetterItems

__all__ = ["build_items", "data_hash"]


def build_items(backend: LlamaCppBackend, labels: Sequence[str], cases: Sequence[ClinicalCase], *,
                max_tokens: int, rewards: RewardWeights) -> LetterItems:
    """Each case as a panel member's round-1 prompt (neutral role, two-agent panel)."""
    agent = DiagnosticAgent(backend, labels, role=ROLE_NEUTRAL)
    tokens = []
    for case in cases:
        ids = tuple(backend.prompt_tokens(agent.messages(case.text)))
        if len(ids) > max_tokens:
            raise ConfigError("max_prompt_tokens", f"case {case.source_id} has a prompt of {len(ids)} tokens, above "
                                                   f"{max_tokens}; every training case must fit: give a larger "
                                                   "--max-prompt-tokens")
        tokens.append(ids)
    tags = tuple(letters(len(labels)))
    right = np.array([c.label for c in cases], dtype=int)
    table = np.full((len(cases), len(tags)), rewards.wrong * rewards.accuracy)
    table[np.arange(len(cases)), right] = rewards.correct * rewards.accuracy
    return LetterItems(tuple(c.source_id for c in cases), tuple(tokens), tuple(backend.option_token(t) for t in tags),
                       tags, table, right)


def data_hash(cases: Sequence[ClinicalCase]) -> str:
    """sha256 over the sorted case ids with their labels and texts (what training read)."""
    digest = hashlib.sha256()
    for case in sorted(cases, key=lambda c: c.source_id):
        digest.update(f"{case.source_id}\t{case.label}\t{case.text}\n".encode("utf-8"))
    return digest.hexdigest()
