"""GRPO for one agent whose action is one option: items as prompt token ids with a reward
per option, the optimiser step, and greedy evaluation.

The experiments build :class:`LetterItems` (a D-CEM diagnostician's category letters, a
SAG agent's answer letters plus REFUSE, each option with its reward) and hand them to
:class:`LetterStep`.  With ``group_size`` 0 the step takes the exact expectation over the
options (:func:`training.grpo.exact_loss`: the group of Eq. 4 is every option, weighted
by the behaviour policy) instead of G sampled answers (:func:`training.grpo.sampled_loss`).
The reference policy (the base, adapters off) of each item is computed once and kept.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from training.config import TrainSettings
from training.store import StepRow

__all__ = ["class_weights", "supervised_nll", "LetterItems", "LetterStep", "Greedy", "greedy_answers", "offered_policy", "UNOFFERED"]


@dataclass(frozen=True)
class LetterItems:
    """Items over one option list: ids, prompt token ids, option tokens and names, the reward
    of every option per item (n, K), the right option per item (-1: none is right) and
    which options each item offers (n, K; None: all).  An option an item does not offer
    (a three-option question among four-option ones) gets no probability."""

    ids: tuple[str, ...]
    tokens: tuple[tuple[int, ...], ...]
    option_ids: tuple[int, ...]
    option_names: tuple[str, ...]
    rewards: np.ndarray
    right: np.ndarray
    offered: np.ndarray | None = None

    def __post_init__(self) -> None:
        n, k = len(self.ids), len(self.option_ids)
        if len(self.tokens) != n or self.rewards.shape != (n, k) or self.right.shape != (n,):
            raise ValueError("items, token lists, rewards and right answers must line up")
        if self.offered is not None and (self.offered.shape != (n, k) or not self.offered.any(axis=1).all()
                                         or (self.offered.sum(axis=1) < 2).any()):
            raise ValueError("every item must offer at least two of the options")
        if len(self.option_names) != k or k < 2:
            raise ValueError("at least two named options are needed")
        if not np.all(np.isfinite(self.rewards)):
            raise ValueError("every reward must be finite")


def class_weights(right: np.ndarray) -> np.ndarray:
    """Sampling probabilities that draw every class (right answer) equally often: one over
    the class's size, normalised; an item without a right answer (-1) counts as a class."""
    _, inverse, counts = np.unique(right, return_inverse=True, return_counts=True)
    weights = 1.0 / counts[inverse]
    return weights / weights.sum()


UNOFFERED = -1e4
"""The log-score an option an item does not offer gets before the policy's softmax (its
probability underflows to 0 while ratios and KL stay finite)."""


def supervised_nll(logp: Any, right: np.ndarray) -> Any:
    """Mean of -log pi(right option) over the rows of ``logp`` (B, K) that have a right
    option (``right`` >= 0); 0 when none has (a refusal item's reward has no one right letter)."""
    import torch

    right = np.asarray(right)
    keep = np.flatnonzero(right >= 0)
    if keep.size == 0:
        return logp.sum() * 0.0
    rows = torch.as_tensor(keep)
    return -logp[rows, torch.as_tensor(right[keep])].mean()


def offered_policy(scorer: Callable[..., Any], items: LetterItems, rows: Sequence[int]) -> Any:
    """The policy's log-probabilities over the options each of ``rows`` offers, shape (B, K);
    ``scorer`` is a :class:`training.scorer.OptionScorer` (or a model: its full forward)."""
    import torch

    from training.letters import policy_logprobs
    from training.scorer import OptionScorer

    if not isinstance(scorer, OptionScorer):
        scorer = OptionScorer(scorer)
    scores = scorer([items.tokens[i] for i in rows], items.option_ids)
    if items.offered is not None:
        scores = scores.masked_fill(~torch.as_tensor(items.offered[list(rows)]), UNOFFERED)
    return policy_logprobs(scores)


class LetterStep:
    """One optimiser step on a random batch (see the module docstring)."""

    def __init__(self, model: Any, items: LetterItems, settings: TrainSettings, optimizer: Any,
                 rng: np.random.Generator, scorer: Any = None) -> None:
        from training.base_model import frozen_layers
        from training.scorer import OptionScorer

        if not items.ids:
            raise ValueError("no training item")
        self.model, self.items, self.settings, self.optimizer, self.rng = model, items, settings, optimizer, rng
        self.scorer = scorer if scorer is not None else OptionScorer(
            model, frozen_layers=frozen_layers(model, settings.lora))
        self._ref: dict[int, Any] = {}
        self._weights = class_weights(items.right) if settings.sampling == "balanced" else None

    def logprobs(self, rows: Sequence[int]) -> Any:
        return offered_policy(self.scorer, self.items, rows)

    def reference(self, rows: Sequence[int]) -> Any:
        import torch

        from training.base_model import reference_mode

        missing = [i for i in rows if i not in self._ref]
        if missing:
            with torch.no_grad(), reference_mode(self.model):
                for i, row in zip(missing, self.logprobs(missing)):
                    self._ref[i] = row
        return torch.stack([self._ref[i] for i in rows])

    def __call__(self, step: int) -> StepRow:
        import torch

        from training.advantages import group_advantages
        from training.grpo import exact_loss, sampled_loss

        start = time.perf_counter()
        s, n = self.settings, len(self.items.ids)
        rows = [int(i) for i in self.rng.choice(n, size=min(s.batch_size, n), replace=False, p=self._weights)]
        sample_seed = int(self.rng.integers(2**62))
        ref = self.reference(rows)
        rewards = torch.as_tensor(self.items.rewards[rows], dtype=torch.float32)
        old = None
        for _ in range(s.updates_per_batch):
            logp = self.logprobs(rows)
            if old is None:
                old = logp.detach()
            if s.grpo.group_size == 0:
                parts = exact_loss(logp, old, ref, rewards, eps=s.grpo.eps, beta=s.grpo.beta)
            else:
                gen = torch.Generator().manual_seed(sample_seed)
                actions = torch.multinomial(old.exp(), s.grpo.group_size, replacement=True, generator=gen)
                parts = sampled_loss(logp.gather(1, actions), old.gather(1, actions), ref.gather(1, actions),
                                     group_advantages(rewards.gather(1, actions)), eps=s.grpo.eps, beta=s.grpo.beta)
            loss = parts.loss + s.supervised * supervised_nll(logp, self.items.right[rows]) if s.supervised else parts.loss
            self.optimizer.zero_grad()
            loss.backward()
            self.optimizer.step()
        assert old is not None
        right = torch.as_tensor(self.items.right[rows])
        accuracy = float((old.argmax(dim=1) == right).float().mean())
        reward = float((old.exp() * rewards).sum(dim=1).mean())
        tokens = sum(len(self.items.tokens[i]) for i in rows)
        return StepRow(step, float(loss.detach()), reward, accuracy, parts.kl, parts.clipped_share, len(rows),
                       tokens, time.perf_counter() - start)


@dataclass(frozen=True)
class Greedy:
    """Greedy answers on items (the most probable option, as the runtime answers),
    their accuracy and the answer distribution beside it."""

    answers: tuple[int, ...]
    right: tuple[int, ...]
    option_names: tuple[str, ...]

    @property
    def n_items(self) -> int:
        return len(self.answers)

    @property
    def n_correct(self) -> int:
        return sum(a == r for a, r in zip(self.answers, self.right))

    @property
    def accuracy(self) -> float:
        return self.n_correct / self.n_items if self.n_items else float("nan")

    @property
    def top_letter(self) -> tuple[str, float]:
        counts = np.bincount(np.array(self.answers, dtype=int), minlength=len(self.option_names))
        top = int(counts.argmax())
        return self.option_names[top], float(counts[top] / max(1, self.n_items))


def greedy_answers(model: Any, items: LetterItems, *, reference: bool = False, batch: int = 8,
                   progress: Callable[[int], None] | None = None, scorer: Any = None) -> Greedy:
    """The model's greedy answers on ``items`` (the base's with ``reference``); ``scorer``
    (an :class:`training.scorer.OptionScorer` of ``model``) reuses its cached lower layers."""
    import contextlib

    import torch

    from training.base_model import reference_mode

    answers: list[int] = []
    with torch.no_grad(), (reference_mode(model) if reference else contextlib.nullcontext()):
        for lo in range(0, len(items.tokens), batch):
            rows = list(range(lo, min(lo + batch, len(items.tokens))))
            answers.extend(int(a) for a in offered_policy(scorer if scorer is not None else model, items,
                                                          rows).argmax(dim=1))
            if progress is not None:
                progress(len(rows))
    return Greedy(tuple(answers), tuple(int(r) for r in items.right), items.option_names)
