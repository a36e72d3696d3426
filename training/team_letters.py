"""Several agents, one adapter each, answering one option letter per turn: the SAG seed's
CTDE (Eqs. 5-6) with an exact counterfactual over each agent's letters.

Every agent has its own :class:`~training.letter_task.LetterItems` over the same questions
(row r of each is the same question: each agent's own prompt of it).  A step draws a batch
of questions; each agent's policy over the letters is computed under its adapter; the
joint answer is every agent's most probable letter (as the runtime answers at
temperature 0).  A central critic, given by the experiment, returns for each agent the
value of every letter it could have given with the others' answers held fixed,
Q(S, [a'_i, a_-i]) (shape (agents, batch, letters)); the critic may use what the agents
cannot (the right answer, everybody's answers).  Each agent is then updated with the
exact expectation over its letters of the clipped surrogate of Eq. 3, whose advantage
Q(S, [a', a_-i]) - sum_a'' pi_i(a'') Q(S, [a'', a_-i]) (normalised as in Eq. 4) is Eq. 6's
counterfactual advantage, and the exact KL to the base.  An agent may also rehearse its
earlier items (``rehearsal``: items with their own rewards), so what it learned before
is kept.  At execution each agent sees only its own prompt.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from training.config import TrainSettings
from training.letter_task import LetterItems, class_weights, offered_policy
from training.store import StepRow

__all__ = ["Critic", "TeamStep"]

Critic = Callable[[Sequence[int], np.ndarray, np.ndarray], np.ndarray]
"""(question rows (B,), joint answers (N, B), probabilities (N, B, K)) -> values (N, B, K)."""


@dataclass
class _Agent:
    name: str
    items: LetterItems
    rehearsal: LetterItems | None


class TeamStep:
    """One optimiser step for every agent (see the module docstring).

    ``agents``: adapter name -> its items (same questions in the same rows for all);
    ``rehearsal``: adapter name -> items it keeps practising (optional).
    """

    def __init__(self, model: Any, agents: Mapping[str, LetterItems], critic: Critic, settings: TrainSettings,
                 optimizer: Any, rng: np.random.Generator, scorer: Any,
                 rehearsal: Mapping[str, LetterItems] | None = None) -> None:
        rows = {len(items.ids) for items in agents.values()}
        if len(rows) != 1 or not rows.pop():
            raise ValueError("every agent needs items over the same, non-empty set of questions")
        first = next(iter(agents.values()))
        if any(items.ids != first.ids for items in agents.values()):
            raise ValueError("the agents' items must list the same questions in the same order")
        self.model, self.critic, self.settings, self.optimizer = model, critic, settings, optimizer
        self.rng, self.scorer = rng, scorer
        self.agents = [_Agent(n, items, (rehearsal or {}).get(n)) for n, items in agents.items()]
        self.right = first.right
        self._ref: dict[tuple[str, str, int], Any] = {}
        self._weights = class_weights(first.right) if settings.sampling == "balanced" else None

    def _use(self, name: str) -> None:
        from training.base_model import use_adapter

        use_adapter(self.model, name)

    def _policy(self, name: str, items: LetterItems, rows: Sequence[int]) -> Any:
        self._use(name)
        return offered_policy(self.scorer, items, rows)

    def _reference(self, name: str, tag: str, items: LetterItems, rows: Sequence[int]) -> Any:
        import torch

        from training.base_model import reference_mode

        missing = [i for i in rows if (name, tag, i) not in self._ref]
        if missing:
            with torch.no_grad(), reference_mode(self.model):
                for i, row in zip(missing, offered_policy(self.scorer, items, missing)):
                    self._ref[(name, tag, i)] = row
        return torch.stack([self._ref[(name, tag, i)] for i in rows])

    def _draw(self, n: int, weights: np.ndarray | None) -> list[int]:
        return [int(i) for i in self.rng.choice(n, size=min(self.settings.batch_size, n), replace=False, p=weights)]

    def __call__(self, step: int) -> StepRow:
        import torch

        from training.grpo import exact_loss

        start = time.perf_counter()
        s = self.settings
        rows = self._draw(len(self.right), self._weights)
        with torch.no_grad():
            probs = np.stack([self._policy(a.name, a.items, rows).exp().numpy() for a in self.agents])
        joint = probs.argmax(axis=2)
        values = torch.as_tensor(self.critic(rows, joint, probs), dtype=torch.float32)
        practice = {a.name: self._draw(len(a.rehearsal.ids), class_weights(a.rehearsal.right)
                                       if s.sampling == "balanced" else None)
                    for a in self.agents if a.rehearsal is not None}
        refs = {a.name: self._reference(a.name, "team", a.items, rows) for a in self.agents}
        rehearsed = {a.name: self._reference(a.name, "rehearsal", a.rehearsal, practice[a.name])
                     for a in self.agents if a.rehearsal is not None}
        olds: dict[str, Any] = {}
        loss = kl = clipped = 0.0
        for _ in range(s.updates_per_batch):
            self.optimizer.zero_grad()
            loss = kl = clipped = 0.0
            for index, agent in enumerate(self.agents):
                parts = [(agent.items, rows, values[index], refs[agent.name], "team")]
                if agent.rehearsal is not None:
                    table = torch.as_tensor(agent.rehearsal.rewards[practice[agent.name]], dtype=torch.float32)
                    parts.append((agent.rehearsal, practice[agent.name], table, rehearsed[agent.name], "rehearsal"))
                for items, chosen, rewards, ref, tag in parts:
                    logp = self._policy(agent.name, items, chosen)
                    old = olds.setdefault(f"{agent.name}|{tag}", logp.detach())
                    got = exact_loss(logp, old, ref, rewards, eps=s.grpo.eps, beta=s.grpo.beta)
                    got.loss.backward()
                    loss, kl, clipped = loss + float(got.loss.detach()), kl + got.kl, clipped + got.clipped_share
            self.optimizer.step()
        n_parts = sum(2 if a.rehearsal is not None else 1 for a in self.agents)
        right = self.right[rows]
        accuracy = float((joint == right[None, :]).mean())
        reward = float((probs * values.numpy()).sum(axis=2).mean())
        tokens = sum(len(a.items.tokens[i]) for a in self.agents for i in rows)
        return StepRow(step, loss / n_parts, reward, accuracy, kl / n_parts, clipped / n_parts, len(rows), tokens,
                       time.perf_counter() - start)
