"""Training from played rollouts (tiny random llama model): the chunked gradient, GRPO over
whole plays, CTDE with per-role adapters and a critic, and their checkpoints."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")

from tests.training.tiny import OPTIONS, tiny_base, tiny_model  # noqa: E402
from training.base_model import adapter_parameters, reference_mode, use_adapter  # noqa: E402
from training.checkpoint import load_checkpoint, restore, save_checkpoint  # noqa: E402
from training.config import LoraSettings  # noqa: E402
from training.ctde import Critic  # noqa: E402
from training.group_step import ctde_step, group_advantages_of, grpo_update  # noqa: E402
from training.rollouts import Action, ActionScorer, Rollout, final_actions  # noqa: E402
from training.scorer import OptionScorer  # noqa: E402

SLOTS = (0, 1, 2, 3)


def _prompt(rng: np.random.Generator, answer: int) -> tuple[int, ...]:
    noise = [int(t) for t in rng.integers(20, 39, size=int(rng.integers(3, 7)))]
    return tuple([1, *noise, 10 + answer, 2])


def _scorer(model: object, chunk: int = 32) -> ActionScorer:
    return ActionScorer(OptionScorer(model), use_adapter=lambda name: use_adapter(model, name), chunk=chunk)


def _plays(scorer: ActionScorer, rng: np.random.Generator, questions: int, rollouts: int,
           adapters: tuple[str, ...]) -> list[Rollout]:
    """Each agent reads the cue and answers, its option drawn from its policy; a play earns
    +1 per right agent and -1 per wrong one.  Rollouts of one question share its cue."""
    prompts = {(q, i): _prompt(rng, q % 4) for q in range(questions) for i in range(len(adapters))}
    probes = [Action(adapters[i], prompts[q, i], OPTIONS, SLOTS, 0) for q in range(questions)
              for i in range(len(adapters))]
    _, dense = scorer.taken(probes, n_slots=4)
    probs = {key: dense[k].double().numpy() for k, key in enumerate(prompts)}
    out = []
    for q in range(questions):
        for _ in range(rollouts):
            actions = []
            for i, adapter in enumerate(adapters):
                p = probs[q, i]
                actions.append(Action(adapter, prompts[q, i], OPTIONS, SLOTS, int(rng.choice(4, p=p / p.sum()))))
            score = sum(1.0 if a.taken == q % 4 else -1.0 for a in actions)
            state = tuple(float(k == q % 4) for k in range(4))
            out.append(Rollout(q, tuple(actions), score, score == len(adapters), tuple(range(len(actions))), state))
    return out


def _right_share(model: object, scorer: ActionScorer, adapters: tuple[str, ...], n: int = 40) -> float:
    """Greedy accuracy of each adapter on fresh cue prompts."""
    rng = np.random.default_rng(99)
    total = 0.0
    for k in range(n):
        answer = k % 4
        for adapter in adapters:
            _, dense = scorer.taken([Action(adapter, _prompt(rng, answer), OPTIONS, SLOTS, 0)], n_slots=4)
            total += float(int(dense[0].argmax()) == answer)
    return total / (n * len(adapters))


def test_the_chunked_gradient_equals_the_gradient_of_one_pass() -> None:
    torch.set_num_threads(1)
    model = tiny_model(1, lora=LoraSettings(r=4, alpha=8.0))
    torch.nn.init.normal_(next(p for n, p in model.named_parameters() if "lora_B" in n), std=0.1)
    rng = np.random.default_rng(0)
    actions = [Action("default", _prompt(rng, k % 4), OPTIONS, SLOTS, (k * 3) % 4) for k in range(7)]
    weights = torch.tensor(rng.normal(size=7), dtype=torch.float32)
    params = adapter_parameters(model)

    scorer = _scorer(model, chunk=3)
    scorer.backward(actions, weights)
    chunked = [p.grad.clone() for p in params]
    for p in params:
        p.grad = None
    from training.letters import policy_logprobs

    logp = policy_logprobs(OptionScorer(model)([a.tokens for a in actions], OPTIONS))
    (logp[range(7), [a.taken for a in actions]] * weights).sum().backward()
    for got, want in zip(chunked, [p.grad for p in params]):
        assert torch.allclose(got, want, atol=1e-6)
    assert any(float(g.abs().sum()) > 0 for g in chunked)


def test_group_advantages_are_normalised_within_each_question() -> None:
    rollouts = [Rollout(g, (Action("default", (1, 2), OPTIONS, SLOTS, 0),), r, r > 0, (0,), ())
                for g, r in ((0, 1.0), (0, -1.0), (1, 5.0), (1, 5.0), (2, 3.0))]
    adv = group_advantages_of(rollouts)
    assert adv.tolist() == [1.0, -1.0, 0.0, 0.0, 0.0]  # equal rewards and a lone rollout carry no signal


def test_grpo_over_plays_teaches_a_team_of_agents_sharing_an_adapter() -> None:
    model = tiny_model(2)
    scorer = _scorer(model)
    optimizer = torch.optim.AdamW(adapter_parameters(model), lr=2e-2)
    rng = np.random.default_rng(3)
    torch.set_num_threads(1)
    before = _right_share(model, scorer, ("default",))
    for _ in range(80):
        rollouts = _plays(scorer, rng, 8, 4, ("default", "default"))
        actions = [a for r in rollouts for a in r.actions]
        with torch.no_grad(), reference_mode(model):
            ref, _ = scorer.taken(actions)
        old = None
        for _ in range(2):
            parts, old = grpo_update(scorer, optimizer, rollouts, ref=ref, old=old, eps=0.2, beta=0.0)
    after = _right_share(model, scorer, ("default",))
    assert after > before + 0.3, (before, after)
    assert np.isfinite(parts.loss)


def test_ctde_trains_each_role_its_own_adapter_with_the_critic() -> None:
    from training.base_model import add_lora

    model = add_lora(tiny_base(2), LoraSettings(r=4, alpha=8.0), ("reasoning", "judge"))
    scorer = _scorer(model)
    optimizer = torch.optim.AdamW(adapter_parameters(model), lr=2e-2)
    critic = Critic(4, 2, 4, hidden=32)
    critic_opt = torch.optim.Adam(critic.parameters(), lr=1e-2)
    rng = np.random.default_rng(3)
    before = _right_share(model, scorer, ("reasoning", "judge"))
    start = {n: p.detach().clone() for n, p in model.named_parameters() if "lora_B" in n}
    torch.set_num_threads(1)
    for k in range(60):
        rollouts = _plays(scorer, rng, 8, 4, ("reasoning", "judge"))
        with torch.no_grad(), reference_mode(model):
            ref, _ = scorer.taken([a for r in rollouts for a in r.actions])
        parts = ctde_step(scorer, optimizer, critic, critic_opt, rollouts, ref=ref, beta=0.0, epochs=20, updates=1,
                          warm_up=k < 10)
        if k < 10:
            assert all(torch.equal(p, start[n]) for n, p in model.named_parameters() if "lora_B" in n)
    after = _right_share(model, scorer, ("reasoning", "judge"))
    assert after > before + 0.2, (before, after)
    moved = {n for n, p in model.named_parameters() if "lora_B" in n and not torch.equal(p, start[n])}
    assert any(".reasoning." in n for n in moved) and any(".judge." in n for n in moved)
    assert parts.critic_loss is not None and np.isfinite(parts.critic_loss)
    assert final_actions(rollouts[:2]).tolist() == [[0, 1], [2, 3]]


def test_the_reference_policy_is_the_base_whichever_adapter_is_active() -> None:
    from training.base_model import add_lora

    base = tiny_base(6)
    plain = OptionScorer(base)([(1, 5, 11, 2)], OPTIONS).detach()
    model = add_lora(base, LoraSettings(r=4, alpha=8.0), ("a", "b"))
    for n, p in model.named_parameters():
        if "lora_B" in n:
            torch.nn.init.normal_(p, std=0.5)
    scorer = _scorer(model)
    action = Action("b", (1, 5, 11, 2), OPTIONS, SLOTS, 1)
    with torch.no_grad(), reference_mode(model):
        ref, _ = scorer.taken([action])
    now, _ = scorer.taken([action])
    assert torch.allclose(ref[0], torch.log_softmax(plain[0], -1)[1], atol=1e-5)
    assert not torch.allclose(now[0], ref[0], atol=1e-3)


def test_a_checkpoint_keeps_every_adapter_and_the_critic(tmp_path: Path) -> None:
    from training.base_model import add_lora

    model = add_lora(tiny_base(7), LoraSettings(r=4, alpha=8.0), ("reasoning", "safety"))
    for n, p in model.named_parameters():
        if "lora_B" in n:
            torch.nn.init.normal_(p, std=0.3)
    optimizer = torch.optim.AdamW(adapter_parameters(model), lr=1e-3)
    critic = Critic(3, 2, 4)
    save_checkpoint(tmp_path, 4, model, optimizer, {"rng": 1}, extra={"critic": critic.state_dict()})
    fresh = add_lora(tiny_base(8), LoraSettings(r=4, alpha=8.0), ("reasoning", "safety"))
    fresh_opt = torch.optim.AdamW(adapter_parameters(fresh), lr=1e-3)
    found = load_checkpoint(tmp_path)
    assert found is not None and found.step == 4
    extra = restore(found, fresh, fresh_opt)
    want = {n: p for n, p in model.named_parameters() if "lora_" in n}
    got = {n: p for n, p in fresh.named_parameters() if "lora_" in n}
    assert want.keys() == got.keys() and any(".safety." in n for n in got)
    assert all(torch.equal(want[n], got[n]) for n in want)
    other = Critic(3, 2, 4)
    other.load_state_dict(extra["critic"])
    assert all(torch.equal(a, b) for a, b in zip(critic.state_dict().values(), other.state_dict().values()))


def test_bad_actions_and_rollouts_are_refused() -> None:
    with pytest.raises(ValueError, match="taken option"):
        Action("default", (1,), OPTIONS, SLOTS, 4)
    with pytest.raises(ValueError, match="distinct"):
        Action("default", (1,), OPTIONS, (0, 0, 1, 2), 0)
    with pytest.raises(ValueError, match="final answer"):
        Rollout(0, (Action("default", (1,), OPTIONS, SLOTS, 0),), 1.0, True, (1,), ())
    with pytest.raises(ValueError, match="finite"):
        Rollout(0, (Action("default", (1,), OPTIONS, SLOTS, 0),), float("nan"), True, (0,), ())
