"""Centralised training, decentralised execution (the SAG seed's Eqs. 5-6).

A central critic Q_phi(S, a) sees the debate state S (a feature vector the experiment
builds from everything said: messages, evidence, proposals) and the joint answer a (one
option per agent).  Each agent i is updated with the counterfactual advantage of Eq. 6,

    A_i(S, a) = Q(S, a) - sum_{a'_i} pi_i(a'_i | o_i) Q(S, [a'_i, a_-i]),

the value of what it said minus what it would have earned on average had it answered
otherwise, the others' answers held fixed.  The answer space is the option letters, so
the sum is exact.  Eq. 5's policy gradient then weighs log pi_i(a_i | o_i) by A_i.  At
execution every agent still sees only its own prompt: the critic exists only here.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

__all__ = ["Critic", "counterfactual_advantages", "policy_loss", "critic_loss", "CtdeParts"]


class Critic(nn.Module):
    """Q_phi(S, a): a small network over the state features and the one-hot joint answer."""

    def __init__(self, state_dim: int, n_agents: int, n_options: int, hidden: int = 64) -> None:
        super().__init__()
        if state_dim < 0 or n_agents < 1 or n_options < 2 or hidden < 1:
            raise ValueError("a critic needs state_dim >= 0, at least one agent, two options and a hidden layer")
        self.n_agents, self.n_options = n_agents, n_options
        self.net = nn.Sequential(nn.Linear(state_dim + n_agents * n_options, hidden), nn.Tanh(),
                                 nn.Linear(hidden, hidden), nn.Tanh(), nn.Linear(hidden, 1))

    def forward(self, state: torch.Tensor, joint: torch.Tensor) -> torch.Tensor:
        """Q for states (B, D) and joint answers (B, N) of option indices -> (B,)."""
        onehot = nn.functional.one_hot(joint.long(), self.n_options).float().flatten(start_dim=-2)
        return self.net(torch.cat([state.float(), onehot], dim=-1)).squeeze(-1)


def counterfactual_advantages(critic: Critic, state: torch.Tensor, joint: torch.Tensor,
                              policies: torch.Tensor) -> torch.Tensor:
    """Eq. 6 for every agent: shape (B, N).

    ``policies`` (B, N, K) are the agents' option probabilities (treated as constants);
    the sum over each agent's K alternatives is exact (K critic calls per agent).
    """
    batch, n_agents = joint.shape
    k = critic.n_options
    with torch.no_grad():
        q = critic(state, joint)
        out = torch.empty(batch, n_agents)
        for i in range(n_agents):
            alternatives = joint.unsqueeze(1).repeat(1, k, 1)  # (B, K, N)
            alternatives[:, :, i] = torch.arange(k)
            q_alt = critic(state.unsqueeze(1).expand(-1, k, -1).reshape(batch * k, -1),
                           alternatives.reshape(batch * k, n_agents)).reshape(batch, k)
            out[:, i] = q - (policies[:, i, :].detach() * q_alt).sum(dim=-1)
    return out


@dataclass(frozen=True)
class CtdeParts:
    loss: torch.Tensor
    advantage: float
    kl: float


def policy_loss(logp_taken: torch.Tensor, advantages: torch.Tensor, kl: torch.Tensor | None = None,
                beta: float = 0.0) -> CtdeParts:
    """Eq. 5 as a loss: -mean_i log pi_i(a_i) A_i (+ beta KL to the reference, if given).

    ``logp_taken`` (B, N): each agent's log-probability of the answer it gave.
    """
    surrogate = (logp_taken * advantages.detach()).sum(dim=-1).mean()
    kl_mean = kl.mean() if kl is not None else torch.zeros(())
    return CtdeParts(-(surrogate - beta * kl_mean), float(advantages.mean().detach()), float(kl_mean.detach()))


def critic_loss(critic: Critic, state: torch.Tensor, joint: torch.Tensor, returns: torch.Tensor) -> torch.Tensor:
    """Mean squared error of Q against the observed returns of the rollouts."""
    return nn.functional.mse_loss(critic(state, joint), returns.float())
