"""Played rollouts of a group of agents, as training sees them.

The experiment plays a question with its agents through the runtime (a SAG debate, for
instance) and hands each play over as a :class:`Rollout`: every answer turn of every agent
as an :class:`Action` (the prompt's token ids as the runtime rendered them, the option
tokens offered, the option taken and the adapter the agent runs with), the reward the
play earned, which action was each agent's final answer, and a feature vector of the
play's state for a central critic.  Rollouts of one question share a ``group`` number:
they form the group of GRPO's Eq. 4.

:class:`ActionScorer` computes, in torch, the log-probability of the option each action
took under the current adapters (or the base: the reference policy), and the whole
option distribution of chosen actions.  Its :meth:`ActionScorer.backward` takes the
gradient of any loss built from those log-probabilities in chunks of a few prompts, so a
step over many long debate prompts never holds all their activations at once: the loss
is first evaluated on detached log-probabilities, its derivative with respect to each
one is read off, and each chunk is then scored again with gradients and back-propagated
with those weights (the chain rule, exactly).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

__all__ = ["Action", "Rationale", "Rollout", "ActionScorer", "rollout_index", "rationale_index", "final_actions"]


@dataclass(frozen=True)
class Action:
    """One answer turn: the adapter (agent's weights), the prompt's token ids, the token of
    each offered option, each option's position in the joint answer space (``slots``),
    and the index (into ``option_ids``) of the option taken."""

    adapter: str
    tokens: tuple[int, ...]
    option_ids: tuple[int, ...]
    slots: tuple[int, ...]
    taken: int

    def __post_init__(self) -> None:
        if not self.tokens:
            raise ValueError("an action needs a prompt")
        if len(self.option_ids) < 2 or len(self.slots) != len(self.option_ids):
            raise ValueError("an action needs at least two options, each with a slot")
        if len(set(self.slots)) != len(self.slots) or min(self.slots) < 0:
            raise ValueError("the slots of an action's options must be distinct and non-negative")
        if not 0 <= self.taken < len(self.option_ids):
            raise ValueError(f"taken option {self.taken} is not among the {len(self.option_ids)} offered")


@dataclass(frozen=True)
class Rationale:
    """A generated rationale as an action (GRPO's optional rationale path): the adapter, the
    prompt's token ids, the generated token ids, and the temperature they were sampled at
    (their log-probability is read at that temperature)."""

    adapter: str
    tokens: tuple[int, ...]
    continuation: tuple[int, ...]
    temperature: float

    def __post_init__(self) -> None:
        if not self.tokens or not self.continuation:
            raise ValueError("a rationale needs a prompt and at least one generated token")
        if not self.temperature > 0:
            raise ValueError(f"a rationale is sampled at a temperature above 0, got {self.temperature!r}")


@dataclass(frozen=True)
class Rollout:
    """One play of a question (see the module docstring).  ``finals[i]`` is the index in
    ``actions`` of agent i's last answer (its part of the joint answer)."""

    group: int
    actions: tuple[Action, ...]
    reward: float
    correct: bool
    finals: tuple[int, ...]
    state: tuple[float, ...]
    rationales: tuple[Rationale, ...] = ()

    def __post_init__(self) -> None:
        if not self.actions:
            raise ValueError("a rollout needs at least one action")
        if not np.isfinite(self.reward):
            raise ValueError("a rollout's reward must be finite")
        if not self.finals or any(not 0 <= f < len(self.actions) for f in self.finals):
            raise ValueError("every agent's final answer must be one of the rollout's actions")

    @property
    def joint(self) -> tuple[int, ...]:
        """The joint answer: the slot of each agent's final option."""
        return tuple(self.actions[f].slots[self.actions[f].taken] for f in self.finals)


def rollout_index(rollouts: Sequence[Rollout]) -> np.ndarray:
    """For every action of ``rollouts`` (flattened in order), the index of its rollout."""
    return np.concatenate([np.full(len(r.actions), k) for k, r in enumerate(rollouts)]).astype(np.int64)


def rationale_index(rollouts: Sequence[Rollout]) -> np.ndarray:
    """For every rationale of ``rollouts`` (flattened in order), the index of its rollout."""
    parts = [np.full(len(r.rationales), k) for k, r in enumerate(rollouts)]
    return np.concatenate(parts).astype(np.int64) if parts else np.zeros(0, dtype=np.int64)


def final_actions(rollouts: Sequence[Rollout]) -> np.ndarray:
    """(R, N): the flat action index of each agent's final answer in each rollout."""
    starts = np.cumsum([0] + [len(r.actions) for r in rollouts[:-1]])
    if len({len(r.finals) for r in rollouts}) != 1:
        raise ValueError("every rollout must have the same agents")
    return np.array([[s + f for f in r.finals] for s, r in zip(starts, rollouts)], dtype=np.int64)


class ActionScorer:
    """Log-probabilities of the taken options of actions under the policy (see the module
    docstring).  ``scorer`` is a :class:`training.scorer.OptionScorer` (or any callable
    ``(prompts, option_ids) -> (B, K)`` vocabulary log-probabilities); ``use_adapter(name)``
    makes an adapter the active one (not called when every action names the same adapter
    and ``use_adapter`` is None)."""

    def __init__(self, scorer: Callable[..., Any], *, use_adapter: Callable[[str], None] | None = None,
                 chunk: int = 8) -> None:
        if chunk < 1:
            raise ValueError("chunk must be at least 1")
        self.scorer, self.use_adapter, self.chunk = scorer, use_adapter, chunk

    def _batches(self, actions: Sequence[Action]) -> list[list[int]]:
        """Indices of actions sharing adapter and options, in chunks."""
        by: dict[tuple[str, tuple[int, ...]], list[int]] = {}
        for i, a in enumerate(actions):
            by.setdefault((a.adapter, a.option_ids), []).append(i)
        out = []
        for rows in by.values():
            out += [rows[k:k + self.chunk] for k in range(0, len(rows), self.chunk)]
        return out

    def _policy(self, actions: Sequence[Action], rows: Sequence[int]) -> Any:
        from training.letters import policy_logprobs

        first = actions[rows[0]]
        if self.use_adapter is not None:
            self.use_adapter(first.adapter)
        return policy_logprobs(self.scorer([actions[i].tokens for i in rows], first.option_ids))

    def taken(self, actions: Sequence[Action], n_slots: int | None = None) -> tuple[Any, Any]:
        """Without gradients: the taken options' log-probabilities (n,) and, when
        ``n_slots`` is given, every action's option probabilities over the slots (n, S)."""
        import torch

        logp = torch.empty(len(actions))
        dense = torch.zeros(len(actions), n_slots) if n_slots is not None else None
        with torch.no_grad():
            for rows in self._batches(actions):
                policy = self._policy(actions, rows)
                for j, i in enumerate(rows):
                    logp[i] = policy[j, actions[i].taken]
                    if dense is not None:
                        dense[i, list(actions[i].slots)] = policy[j].exp()
        return logp, dense

    def _rationale_batches(self, rationales: Sequence[Rationale]) -> list[list[int]]:
        by: dict[tuple[str, float], list[int]] = {}
        for i, r in enumerate(rationales):
            by.setdefault((r.adapter, r.temperature), []).append(i)
        return [rows[k:k + self.chunk] for rows in by.values() for k in range(0, len(rows), self.chunk)]

    def _rationale_logps(self, rationales: Sequence[Rationale], rows: Sequence[int]) -> Any:
        first = rationales[rows[0]]
        if self.use_adapter is not None:
            self.use_adapter(first.adapter)
        scorer: Any = self.scorer
        return scorer.continuations([rationales[i].tokens for i in rows], [rationales[i].continuation for i in rows],
                                    temperature=first.temperature)

    def rationales(self, rationales: Sequence[Rationale]) -> Any:
        """Without gradients: each rationale's log-probability, (n,).  The scorer must be an
        :class:`training.scorer.OptionScorer` (it scores continuations)."""
        import torch

        out = torch.empty(len(rationales))
        with torch.no_grad():
            for rows in self._rationale_batches(rationales):
                out[rows] = self._rationale_logps(rationales, rows)
        return out

    def backward_rationales(self, rationales: Sequence[Rationale], weights: Any) -> None:
        """Accumulate the gradient of sum_i weights[i] * log pi(rationale_i) into the adapters."""
        for rows in self._rationale_batches(rationales):
            w = weights[rows]
            if bool(w.abs().sum() > 0):
                (self._rationale_logps(rationales, rows) * w.detach()).sum().backward()

    def backward(self, actions: Sequence[Action], weights: Any) -> None:
        """Accumulate the gradient of sum_i weights[i] * log pi(taken_i) into the adapters."""
        for rows in self._batches(actions):
            w = weights[rows]
            if not bool(w.abs().sum() > 0):
                continue
            policy = self._policy(actions, rows)
            taken = policy[range(len(rows)), [actions[i].taken for i in rows]]
            (taken * w.detach()).sum().backward()
