"""Training items for the members of a view group (``docs/group_views.md``).

Stage ``members``: a reasoning agent learns its own view.  Each item is the agent's
round-0 turn exactly as the debate renders it (the question without the case, the
options, what the agent read, its instruction), tokenized by the runtime so the adapter
meets the same tokens in llama.cpp; the action is one option letter, rewarded +1 right
and -1 wrong (times the accuracy weight).  The items are the DDXPlus-8 cases of one fold
of :mod:`clinical.group_folds`.
"""
from __future__ import annotations

import hashlib
from typing import Any, Sequence

import numpy as np

from clinical.group_folds import fold_items
from clinical.questions import QuestionItem
from common.errors import ConfigError
from sag.group.config import GroupConfig
from sag.debate.hybrid import Debate
from training.config import RewardWeights
from training.letter_task import LetterItems

__all__ = ["round0_tokens", "member_items", "fold_items", "member_data_hash"]


def _agent(debate: Debate, agent_id: str) -> tuple[int, Any]:
    for index, agent in enumerate(debate.agents):
        if agent.agent_id == agent_id:
            return index, agent
    raise ValueError(f"the group has no agent {agent_id!r}")


def round0_tokens(backend: Any, cfg: GroupConfig, agent_id: str, item: QuestionItem) -> tuple[int, ...]:
    """Token ids of ``agent_id``'s round-0 turn on ``item`` (the prompt it answers from)."""
    debate = Debate(item, cfg, engine=None, retrievers={})  # type: ignore[arg-type]  # no turn is played
    index, agent = _agent(debate, agent_id)
    turn = debate.turn(index, agent, 0, "propose", shared=debate.transcript.text())
    return tuple(backend.prompt_tokens(list(turn.messages)))


def member_items(backend: Any, cfg: GroupConfig, agent_id: str, items: Sequence[QuestionItem], *,
                 max_tokens: int, rewards: RewardWeights) -> LetterItems:
    """``items`` as ``agent_id``'s round-0 turns over the letters A..H."""
    names = tuple(letter for letter, _ in items[0].options)
    tokens = []
    for item in items:
        ids = round0_tokens(backend, cfg, agent_id, item)
        if len(ids) > max_tokens:
            raise ConfigError("max_prompt_tokens", f"item {item.item_id}: a prompt of {len(ids)} tokens, above "
                                                   f"{max_tokens}; give a larger --max-prompt-tokens")
        tokens.append(ids)
    right = np.array([names.index(i.answer) for i in items])
    table = np.full((len(items), len(names)), rewards.wrong * rewards.accuracy)
    table[np.arange(len(items)), right] = rewards.correct * rewards.accuracy
    return LetterItems(tuple(i.item_id for i in items), tuple(tokens), tuple(backend.option_token(n) for n in names),
                       names, table, right)


def member_data_hash(cfg: GroupConfig, agent_id: str, items: Sequence[QuestionItem]) -> str:
    """sha256 over what the agent reads of each item and the item's answer."""
    digest = hashlib.sha256(f"{agent_id}|{cfg.view_of(agent_id)}\n".encode("utf-8"))
    for item in sorted(items, key=lambda i: i.item_id):
        debate = Debate(item, cfg, engine=None, retrievers={})  # type: ignore[arg-type]
        digest.update(f"{item.item_id}\t{item.answer}\t{debate.readings.get(agent_id, '')}\n".encode("utf-8"))
    return digest.hexdigest()
