"""The SAG seed's training objectives: Eq. 4's advantages, Eqs. 2-3's GRPO loss and Eqs. 5-6's
counterfactual advantages, checked against hand computations and against sampling."""
from __future__ import annotations

import math

import pytest
import torch

from training.advantages import expected_advantages, group_advantages
from training.ctde import Critic, counterfactual_advantages, critic_loss, policy_loss
from training.grpo import exact_kl, exact_loss, sampled_loss


def test_group_advantages_follow_eq4() -> None:
    rewards = torch.tensor([1.0, -1.0, -1.0, 1.0, 1.0])
    mean, std = 0.2, math.sqrt(sum((r - 0.2) ** 2 for r in [1, -1, -1, 1, 1]) / 5)
    assert torch.allclose(group_advantages(rewards), (rewards - mean) / std)


def test_a_group_with_equal_rewards_carries_no_signal() -> None:
    assert torch.equal(group_advantages(torch.tensor([-1.0, -1.0, -1.0])), torch.zeros(3))
    assert torch.equal(expected_advantages(torch.tensor([1.0, 1.0]), torch.tensor([0.3, 0.7])), torch.zeros(2))
    with pytest.raises(ValueError, match="two rollouts"):
        group_advantages(torch.tensor([1.0]))


def test_expected_advantages_are_the_limit_of_sampled_groups() -> None:
    gen = torch.Generator().manual_seed(0)
    probs = torch.tensor([0.5, 0.2, 0.2, 0.1])
    rewards = torch.tensor([-1.0, 1.0, -1.0, -1.0])
    exact = expected_advantages(rewards, probs)
    draws = torch.multinomial(probs, 200_000, replacement=True, generator=gen)
    sampled = group_advantages(rewards[draws])
    for option in range(4):
        assert float(sampled[draws == option].mean()) == pytest.approx(float(exact[option]), abs=0.01)


def _policy(logits: list[float]) -> torch.Tensor:
    return torch.log_softmax(torch.tensor([logits], requires_grad=True), dim=-1)


def test_an_exact_grpo_step_raises_the_right_answer_and_starts_from_zero_surrogate() -> None:
    logits = torch.tensor([[2.0, 0.5, 0.0, -1.0]], requires_grad=True)
    logp = torch.log_softmax(logits, dim=-1)
    rewards = torch.tensor([[-1.0, 1.0, -1.0, -1.0]])  # B is right, A is the favourite
    parts = exact_loss(logp, logp.detach(), logp.detach(), rewards, eps=0.2, beta=0.04)
    assert parts.surrogate == pytest.approx(0.0, abs=1e-7) and parts.kl == pytest.approx(0.0, abs=1e-7)
    parts.loss.backward()
    assert logits.grad is not None
    moved = torch.softmax(logits.detach() - 0.5 * logits.grad, dim=-1)
    before = torch.softmax(logits.detach(), dim=-1)
    assert moved[0, 1] > before[0, 1] and moved[0, 0] < before[0, 0]


def test_the_clip_stops_the_gain_beyond_one_plus_eps() -> None:
    old = torch.log_softmax(torch.tensor([[0.0, 0.0]]), dim=-1)
    logits = torch.tensor([[0.0, 2.0]], requires_grad=True)  # option 1 now far above its old 0.5
    logp = torch.log_softmax(logits, dim=-1)
    rewards = torch.tensor([[-1.0, 1.0]])
    parts = exact_loss(logp, old, old, rewards, eps=0.2, beta=0.0)
    parts.loss.backward()
    assert logits.grad is not None and torch.allclose(logits.grad, torch.zeros(1, 2), atol=1e-7)
    assert parts.clipped_share == pytest.approx(1.0)


def test_the_kl_term_pulls_back_to_the_reference() -> None:
    ref = torch.log_softmax(torch.tensor([[0.0, 0.0, 0.0]]), dim=-1)
    logits = torch.tensor([[1.0, 0.0, -1.0]], requires_grad=True)
    logp = torch.log_softmax(logits, dim=-1)
    assert float(exact_kl(logp, ref).detach()) > 0
    parts = exact_loss(logp, logp.detach(), ref, torch.zeros(1, 3), eps=0.2, beta=1.0)
    parts.loss.backward()
    assert logits.grad is not None and logits.grad[0, 0] > 0 > logits.grad[0, 2]


def test_sampled_and_exact_grpo_give_the_same_gradient_in_expectation() -> None:
    logits = torch.tensor([[1.0, 0.2, -0.3, 0.0]], requires_grad=True)
    rewards = torch.tensor([[-1.0, 1.0, -1.0, -1.0]])
    logp = torch.log_softmax(logits, dim=-1)
    exact_loss(logp, logp.detach(), logp.detach(), rewards, eps=0.2, beta=0.0).loss.backward()
    assert logits.grad is not None
    exact_grad = logits.grad.clone()
    logits.grad = None
    gen = torch.Generator().manual_seed(1)
    logp = torch.log_softmax(logits, dim=-1)
    actions = torch.multinomial(logp.detach().exp(), 100_000, replacement=True, generator=gen)
    got = rewards.gather(1, actions)
    taken = logp.gather(1, actions)
    sampled_loss(taken, taken.detach(), taken.detach(), group_advantages(got), eps=0.2, beta=0.0).loss.backward()
    assert torch.allclose(logits.grad, exact_grad, atol=0.01)


class _CountCritic(Critic):
    """Q = the number of agents that answered option 0 (the right one), exactly."""

    def forward(self, state: torch.Tensor, joint: torch.Tensor) -> torch.Tensor:
        return (joint == 0).sum(dim=-1).float()


def test_counterfactual_advantage_is_own_contribution_minus_its_expectation() -> None:
    critic = _CountCritic(state_dim=1, n_agents=3, n_options=4)
    joint = torch.tensor([[0, 2, 0]])
    policies = torch.tensor([[[0.7, 0.1, 0.1, 0.1], [0.25, 0.25, 0.25, 0.25], [0.1, 0.3, 0.3, 0.3]]])
    adv = counterfactual_advantages(critic, torch.zeros(1, 1), joint, policies)
    # A_i = 1[a_i = 0] - pi_i(0): the others' answers cancel out
    assert torch.allclose(adv, torch.tensor([[1 - 0.7, 0 - 0.25, 1 - 0.1]]))


def test_the_policy_loss_weighs_each_agents_log_probability_by_its_own_advantage() -> None:
    taken = torch.tensor([[-0.5, -1.0]], requires_grad=True)
    parts = policy_loss(taken, torch.tensor([[2.0, -1.0]]))
    parts.loss.backward()
    assert taken.grad is not None and torch.allclose(taken.grad, torch.tensor([[-2.0, 1.0]]))


def test_the_critic_learns_returns() -> None:
    torch.manual_seed(0)
    critic = Critic(state_dim=2, n_agents=2, n_options=3, hidden=16)
    joint = torch.tensor([[a, b] for a in range(3) for b in range(3)])
    state = torch.zeros(len(joint), 2)
    returns = (joint == 1).sum(dim=1).float()
    opt = torch.optim.Adam(critic.parameters(), lr=0.02)
    first = float(critic_loss(critic, state, joint, returns))
    for _ in range(300):
        opt.zero_grad()
        loss = critic_loss(critic, state, joint, returns)
        loss.backward()
        opt.step()
    assert float(loss) < 0.01 < first
