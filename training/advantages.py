"""Group-normalised advantages (the SAG seed's Eq. 4) and their exact counterpart.

GRPO scores each of G rollouts of one question against the group: A_i = (R_i - mean R) /
std R.  When an agent's whole action is one option letter, the group can be the option
set itself: every possible answer a with its probability under the behaviour policy,
A(a) = (R(a) - E[R]) / std[R].  That is the limit of Eq. 4 for G -> infinity, computed
exactly instead of by sampling.  A group whose rewards are all equal carries no signal:
its advantages are zero (the seed's formula would divide by zero).
"""
from __future__ import annotations

import torch

__all__ = ["group_advantages", "expected_advantages", "STD_FLOOR"]

STD_FLOOR = 1e-6
"""Below this standard deviation a group's rewards count as equal (all advantages 0)."""


def group_advantages(rewards: torch.Tensor) -> torch.Tensor:
    """Eq. 4 over the last axis: rewards of G rollouts -> their normalised advantages."""
    if rewards.shape[-1] < 2:
        raise ValueError("a group needs at least two rollouts")
    mean = rewards.mean(dim=-1, keepdim=True)
    std = rewards.std(dim=-1, unbiased=False, keepdim=True)
    centred = rewards - mean
    return torch.where(std > STD_FLOOR, centred / std.clamp_min(STD_FLOOR), torch.zeros_like(centred))


def expected_advantages(rewards: torch.Tensor, probs: torch.Tensor) -> torch.Tensor:
    """Eq. 4 with the group replaced by the whole option set weighted by ``probs``.

    ``rewards`` and ``probs`` have shape (..., K); ``probs`` sums to 1 over the last axis
    and is treated as a constant (the behaviour policy).
    """
    probs = probs.detach()
    mean = (probs * rewards).sum(dim=-1, keepdim=True)
    var = (probs * (rewards - mean) ** 2).sum(dim=-1, keepdim=True)
    std = var.sqrt()
    centred = rewards - mean
    return torch.where(std > STD_FLOOR, centred / std.clamp_min(STD_FLOOR), torch.zeros_like(centred))
