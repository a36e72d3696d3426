"""One optimiser step on played rollouts: GRPO over whole plays, or CTDE with a critic.

GRPO (the SAG seed's Eqs. 2-4, one adapter shared by every agent): a rollout's
log-probability is the sum over its answer turns of log pi(taken option), its advantage
is its reward normalised within its question's group (Eq. 4), and Eq. 2's clipped ratio
and KL (the k3 estimator against the base) are taken per rollout
(:func:`training.grpo.sampled_loss`).  A rollout that carries its rationales
(:class:`training.rollouts.Rationale`) adds their log-probabilities to its own, so the
ratio is the whole trajectory's (Eq. 3); its KL is then the sum of per-answer and
per-rationale k3 estimates.

The log-probabilities of a step are kept as one vector of *units*: every action of every
rollout, then every rationale (:func:`unit_logps`); ``ref`` and ``old`` are such vectors.

CTDE (Eqs. 5-6, one adapter per role): the critic Q(S, a) is first fitted to the
rollouts' rewards (``critic_epochs`` passes of mean squared error); during the critic's
warm-up steps only the critic learns (an unfitted critic's advantages are noise, and
measured on a tiny model they set the agents back for many steps after); each agent's
advantage is then Eq. 6's counterfactual, exact over its options
(:func:`training.ctde.counterfactual_advantages`), and Eq. 5's policy gradient weighs the
log-probability of the agent's final answer by it, with beta times the k3 estimate of
the KL to the base on the same answers.

Both take the gradient through :meth:`training.rollouts.ActionScorer.backward`, so a step
over many long prompts holds the activations of one chunk at a time.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from training.rollouts import ActionScorer, Rollout, final_actions, rationale_index, rollout_index

__all__ = ["StepParts", "group_advantages_of", "grpo_update", "ctde_update", "ctde_step", "fit_critic", "unit_logps"]


@dataclass(frozen=True)
class StepParts:
    """What one step did, for the training record."""

    loss: float
    kl: float
    clipped_share: float
    critic_loss: float | None = None


def group_advantages_of(rollouts: Sequence[Rollout]) -> Any:
    """Eq. 4 within each question's group of rollouts (a group of one gets 0)."""
    import torch

    from training.advantages import group_advantages

    rewards = torch.tensor([r.reward for r in rollouts], dtype=torch.float32)
    groups = np.array([r.group for r in rollouts])
    out = torch.zeros(len(rollouts))
    for g in np.unique(groups):
        rows = np.flatnonzero(groups == g)
        if rows.size >= 2:
            out[rows] = group_advantages(rewards[rows])
    return out


def unit_logps(scorer: ActionScorer, rollouts: Sequence[Rollout]) -> Any:
    """Without gradients: the log-probability of every action, then of every rationale, of
    ``rollouts`` (run it inside the reference mode for the reference policy's)."""
    import torch

    now, _ = scorer.taken([a for r in rollouts for a in r.actions])
    rationales = [x for r in rollouts for x in r.rationales]
    return torch.cat([now, scorer.rationales(rationales)]) if rationales else now


def _k3(logp: Any, ref: Any) -> Any:
    log_r = ref.detach() - logp
    return log_r.exp() - log_r - 1.0


def grpo_update(scorer: ActionScorer, optimizer: Any, rollouts: Sequence[Rollout], *, ref: Any, old: Any | None,
                eps: float, beta: float) -> tuple[StepParts, Any]:
    """One optimiser update of Eq. 2 over rollouts; ``ref`` and ``old`` are the actions'
    taken log-probabilities under the base and the behaviour policy (None: the current
    one, on the first update of a batch).  Returns the parts and ``old``."""
    import torch

    from training.grpo import sampled_loss

    actions = [a for r in rollouts for a in r.actions]
    rationales = [x for r in rollouts for x in r.rationales]
    index = torch.as_tensor(np.concatenate([rollout_index(rollouts), rationale_index(rollouts)]))
    now = unit_logps(scorer, rollouts)
    if len(ref) != len(now):
        raise ValueError(f"ref holds {len(ref)} log-probabilities for {len(now)} actions and rationales")
    if old is None:
        old = now.clone()
    leaf = now.clone().requires_grad_(True)

    def per_rollout(values: Any) -> Any:
        return torch.zeros(len(rollouts)).index_add(0, index, values)

    kl = per_rollout(_k3(leaf, ref)) if rationales else None
    parts = sampled_loss(per_rollout(leaf), per_rollout(old), per_rollout(ref), group_advantages_of(rollouts),
                         eps=eps, beta=beta, kl=kl)
    parts.loss.backward()
    optimizer.zero_grad()
    scorer.backward(actions, leaf.grad[:len(actions)])
    if rationales:
        scorer.backward_rationales(rationales, leaf.grad[len(actions):])
    optimizer.step()
    return StepParts(float(parts.loss.detach()), parts.kl, parts.clipped_share), old


def fit_critic(critic: Any, optimizer: Any, rollouts: Sequence[Rollout], *, epochs: int) -> float:
    """``epochs`` full-batch passes of the critic's squared error on the rollouts' rewards;
    the last pass's loss."""
    import torch

    from training.ctde import critic_loss

    state = torch.tensor([r.state for r in rollouts], dtype=torch.float32)
    joint = torch.tensor([r.joint for r in rollouts], dtype=torch.long)
    returns = torch.tensor([r.reward for r in rollouts], dtype=torch.float32)
    loss = torch.zeros(())
    for _ in range(max(1, epochs)):
        optimizer.zero_grad()
        loss = critic_loss(critic, state, joint, returns)
        loss.backward()
        optimizer.step()
    return float(loss.detach())


def ctde_update(scorer: ActionScorer, optimizer: Any, critic: Any, rollouts: Sequence[Rollout], *, ref: Any,
                beta: float, critic_loss_value: float) -> StepParts:
    """One optimiser update of Eq. 5 with Eq. 6's advantages (see the module docstring);
    ``ref`` are the actions' taken log-probabilities under the base."""
    import torch

    from training.ctde import counterfactual_advantages, policy_loss

    actions = [a for r in rollouts for a in r.actions]
    finals = torch.as_tensor(final_actions(rollouts))
    now, dense = scorer.taken(actions, n_slots=critic.n_options)
    state = torch.tensor([r.state for r in rollouts], dtype=torch.float32)
    joint = torch.tensor([r.joint for r in rollouts], dtype=torch.long)
    advantages = counterfactual_advantages(critic, state, joint, dense[finals])
    leaf = now.clone().requires_grad_(True)
    taken = leaf[finals]
    parts = policy_loss(taken, advantages, _k3(taken, ref[finals]), beta)
    parts.loss.backward()
    optimizer.zero_grad()
    scorer.backward(actions, leaf.grad)
    optimizer.step()
    return StepParts(float(parts.loss.detach()), parts.kl, 0.0, critic_loss_value)


def ctde_step(scorer: ActionScorer, optimizer: Any, critic: Any, critic_optimizer: Any, rollouts: Sequence[Rollout],
              *, ref: Any, beta: float, epochs: int, updates: int, warm_up: bool) -> StepParts:
    """Fit the critic, then (unless ``warm_up``) ``updates`` agent updates (:func:`ctde_update`)."""
    value = fit_critic(critic, critic_optimizer, rollouts, epochs=epochs)
    parts = StepParts(0.0, 0.0, 0.0, value)
    if not warm_up:
        for _ in range(updates):
            parts = ctde_update(scorer, optimizer, critic, rollouts, ref=ref, beta=beta, critic_loss_value=value)
    return parts
