"""The GRPO objective of the SAG seed (Eqs. 2-3), as a loss to minimise.

Eq. 2: J = E[ 1/G sum_i L_clip(theta, tau_i) - beta KL(pi_theta || pi_ref) ];
Eq. 3: L_clip = min(rho_i A_i, clip(rho_i, 1 - eps, 1 + eps) A_i), rho_i = pi_theta(tau_i) /
pi_old(tau_i).  Two forms:

- :func:`sampled_loss`: G sampled rollouts, each with its trajectory log-probability under
  the current and the behaviour policy (for a debate: the sum over the agents' answer
  turns), advantages from :func:`training.advantages.group_advantages`; the KL term is
  the usual unbiased per-sample estimator k3 = r - log r - 1 with r = pi_ref / pi_theta.
- :func:`exact_loss`: one agent answering one option letter: the expectation over the
  options under the behaviour policy replaces the sample mean, and the KL between the two
  option distributions is computed exactly.

Both return the loss (-J) and the parts for the training record.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from training.advantages import expected_advantages

__all__ = ["GrpoParts", "clipped_surrogate", "sampled_loss", "exact_loss", "exact_kl"]


@dataclass(frozen=True)
class GrpoParts:
    """One loss evaluation: the loss to minimise and its parts (floats, for the record)."""

    loss: torch.Tensor
    surrogate: float
    kl: float
    clipped_share: float


def clipped_surrogate(ratio: torch.Tensor, advantages: torch.Tensor, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Eq. 3 elementwise, and where the clip was the smaller term (for the record)."""
    plain = ratio * advantages
    clipped = torch.clamp(ratio, 1.0 - eps, 1.0 + eps) * advantages
    return torch.minimum(plain, clipped), (clipped < plain)


def sampled_loss(logp: torch.Tensor, logp_old: torch.Tensor, logp_ref: torch.Tensor,
                 advantages: torch.Tensor, *, eps: float, beta: float, kl: torch.Tensor | None = None) -> GrpoParts:
    """Eq. 2 over sampled rollouts (all tensors shaped (..., G)).  The KL to the reference
    is the k3 estimate on each rollout's log-probability, unless ``kl`` gives it per
    rollout (a long trajectory's sum of per-token estimates: k3 of a sum over hundreds of
    tokens is the exponential of a large number)."""
    ratio = torch.exp(logp - logp_old.detach())
    surrogate, clipped = clipped_surrogate(ratio, advantages.detach(), eps)
    if kl is None:
        log_r = logp_ref.detach() - logp
        kl = torch.exp(log_r) - log_r - 1.0
    objective = surrogate.mean() - beta * kl.mean()
    return GrpoParts(-objective, float(surrogate.mean().detach()), float(kl.mean().detach()),
                     float(clipped.float().mean()))


def exact_kl(logp: torch.Tensor, logp_ref: torch.Tensor) -> torch.Tensor:
    """KL(pi || pi_ref) between option distributions given as log-probabilities (..., K)."""
    return (logp.exp() * (logp - logp_ref)).sum(dim=-1)


def exact_loss(logp: torch.Tensor, logp_old: torch.Tensor, logp_ref: torch.Tensor, rewards: torch.Tensor,
               *, eps: float, beta: float) -> GrpoParts:
    """Eq. 2 for one option-letter answer per question, the expectation taken exactly.

    Shapes (B, K): the current, behaviour and reference policies over the K options (log),
    and the reward of each option.  Per question the surrogate is sum_a pi_old(a) L_clip(a)
    with the advantages of :func:`~training.advantages.expected_advantages`.
    """
    old = logp_old.detach().exp()
    advantages = expected_advantages(rewards, old)
    ratio = torch.exp(logp - logp_old.detach())
    surrogate, clipped = clipped_surrogate(ratio, advantages, eps)
    per_question = (old * surrogate).sum(dim=-1)
    kl = exact_kl(logp, logp_ref.detach())
    objective = per_question.mean() - beta * kl.mean()
    share = float((old * clipped.float()).sum(dim=-1).mean())
    return GrpoParts(-objective, float(per_question.mean().detach()), float(kl.mean().detach()), share)
