"""Training a diagnostician: one agent of D-CEM's clinical panels, taught with GRPO.

The agent is the scored-mode :class:`~dcem_clinical.agent.DiagnosticAgent` with the
neutral role, prompted exactly as a panel member is in round 1 (the runtime renders
the prompt and gives its token ids, so the trained adapter meets the same tokens in
llama.cpp).  Its action is one category letter.  With ``group_size`` 0 the GRPO
objective (Eqs. 2-4) takes the exact expectation over the letters instead of G sampled
answers (:func:`training.grpo.exact_loss`); with G >= 2 it samples G answers per case
(:func:`training.grpo.sampled_loss`).  The reward is accuracy only (+1 right, -1 wrong,
times the accuracy weight): a diagnosis case has no harmful request and no demographic
twin.  Data: the training split of DDXPlus-8 (:mod:`clinical.training_split`), never a
case the panels' CAL/TEST splits can draw.
"""
from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from clinical.datasets import ClinicalCase
from dcem_clinical.agent import DiagnosticAgent
from dcem_clinical.prompts import ROLE_NEUTRAL, letters
from runtime.llama_backend import LlamaCppBackend
from training.config import TrainSettings
from training.store import StepRow

__all__ = ["PromptSet", "build_prompts", "data_hash", "DiagnosticianStep", "evaluate", "HeldOut"]


@dataclass(frozen=True)
class PromptSet:
    """Cases as token ids of the panel's round-1 prompt, their labels and the option tokens."""

    case_ids: tuple[str, ...]
    tokens: tuple[tuple[int, ...], ...]
    labels: np.ndarray
    option_ids: tuple[int, ...]
    letters: tuple[str, ...]


def build_prompts(backend: LlamaCppBackend, labels: Sequence[str], cases: Sequence[ClinicalCase], *,
                  max_tokens: int) -> PromptSet:
    """Render each case as a panel member's round-1 prompt (neutral role, two-agent panel)."""
    agent = DiagnosticAgent(backend, labels, role=ROLE_NEUTRAL)
    tokens = []
    for case in cases:
        ids = tuple(backend.prompt_tokens(agent.messages(case.text)))
        if len(ids) > max_tokens:
            raise ValueError(f"case {case.source_id} has a prompt of {len(ids)} tokens, above max_prompt_tokens "
                             f"{max_tokens}")
        tokens.append(ids)
    tags = tuple(letters(len(labels)))
    return PromptSet(tuple(c.source_id for c in cases), tuple(tokens), np.array([c.label for c in cases]),
                     tuple(backend.option_token(t) for t in tags), tags)


def data_hash(cases: Sequence[ClinicalCase]) -> str:
    """sha256 over the sorted case ids with their labels and texts (what training read)."""
    digest = hashlib.sha256()
    for case in sorted(cases, key=lambda c: c.source_id):
        digest.update(f"{case.source_id}\t{case.label}\t{case.text}\n".encode("utf-8"))
    return digest.hexdigest()


class DiagnosticianStep:
    """One optimiser step of GRPO on a batch of training cases (see the module docstring)."""

    def __init__(self, model: Any, prompts: PromptSet, settings: TrainSettings, optimizer: Any,
                 rng: np.random.Generator) -> None:
        self.model, self.prompts, self.settings, self.optimizer, self.rng = model, prompts, settings, optimizer, rng
        self._ref: dict[int, Any] = {}

    def _logprobs(self, rows: Sequence[int]) -> Any:
        from training.letters import option_logprobs, policy_logprobs

        return policy_logprobs(option_logprobs(self.model, [self.prompts.tokens[i] for i in rows],
                                               self.prompts.option_ids))

    def _reference(self, rows: Sequence[int]) -> Any:
        import torch

        from training.base_model import reference_mode

        missing = [i for i in rows if i not in self._ref]
        if missing:
            with torch.no_grad(), reference_mode(self.model):
                for i, row in zip(missing, self._logprobs(missing)):
                    self._ref[i] = row
        return torch.stack([self._ref[i] for i in rows])

    def __call__(self, step: int) -> StepRow:
        import torch

        from training.advantages import group_advantages
        from training.grpo import exact_loss, sampled_loss

        start = time.perf_counter()
        s = self.settings
        rows = [int(i) for i in self.rng.choice(len(self.prompts.tokens), size=min(s.batch_size, len(self.prompts.tokens)),
                                                replace=False)]
        ref = self._reference(rows)
        labels = torch.as_tensor(self.prompts.labels[rows])
        k = len(self.prompts.option_ids)
        right = torch.nn.functional.one_hot(labels, k).bool()
        weight = s.rewards.accuracy
        rewards = torch.where(right, s.rewards.correct * weight, s.rewards.wrong * weight)
        old = None
        sample_seed = int(self.rng.integers(2**62))
        for _ in range(s.updates_per_batch):
            logp = self._logprobs(rows)
            if old is None:
                old = logp.detach()
            if s.grpo.group_size == 0:
                parts = exact_loss(logp, old, ref, rewards, eps=s.grpo.eps, beta=s.grpo.beta)
            else:
                gen = torch.Generator().manual_seed(sample_seed)
                actions = torch.multinomial(old.exp(), s.grpo.group_size, replacement=True, generator=gen)
                got = rewards.gather(1, actions)
                parts = sampled_loss(logp.gather(1, actions), old.gather(1, actions), ref.gather(1, actions),
                                     group_advantages(got), eps=s.grpo.eps, beta=s.grpo.beta)
            self.optimizer.zero_grad()
            parts.loss.backward()
            self.optimizer.step()
        assert old is not None
        accuracy = float((old.argmax(dim=1) == labels).float().mean())
        reward = float((old.exp() * rewards).sum(dim=1).mean())
        tokens = sum(len(self.prompts.tokens[i]) for i in rows)
        return StepRow(step, float(parts.loss.detach()), reward, accuracy, parts.kl, parts.clipped_share, len(rows),
                       tokens, time.perf_counter() - start)


@dataclass(frozen=True)
class HeldOut:
    """Accuracy on held-out cases and the answer distribution beside it."""

    n_items: int
    n_correct: int
    answers: tuple[int, ...]
    letters: tuple[str, ...]

    @property
    def accuracy(self) -> float:
        return self.n_correct / self.n_items if self.n_items else float("nan")

    @property
    def top_letter(self) -> tuple[str, float]:
        counts = np.bincount(np.array(self.answers, dtype=int), minlength=len(self.letters))
        top = int(counts.argmax())
        return self.letters[top], float(counts[top] / max(1, len(self.answers)))


def evaluate(model: Any, prompts: PromptSet, *, reference: bool = False, batch: int = 8,
             progress: Callable[[int], None] | None = None) -> HeldOut:
    """Greedy answers (the most probable letter, as the runtime answers) on ``prompts``."""
    import torch

    from training.base_model import reference_mode
    from training.letters import option_logprobs

    answers: list[int] = []
    with torch.no_grad():
        for lo in range(0, len(prompts.tokens), batch):
            chunk = prompts.tokens[lo:lo + batch]
            if reference:
                with reference_mode(model):
                    scores = option_logprobs(model, chunk, prompts.option_ids)
            else:
                scores = option_logprobs(model, chunk, prompts.option_ids)
            answers.extend(int(a) for a in scores.argmax(dim=1))
            if progress is not None:
                progress(len(chunk))
    right = int((np.array(answers) == prompts.labels).sum())
    return HeldOut(len(answers), right, tuple(answers), prompts.letters)
