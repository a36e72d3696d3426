"""A rationale's log-probability: the sum of its tokens' log-probabilities after the prompt
(whole-vocabulary softmax at the sampling temperature), the same in a padded batch as
alone and as the model's own logits give it, and the same numbers and adapter gradients
through the scorer that keeps the frozen lower layers."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from training.letters import continuation_logprobs  # noqa: E402
from training.scorer import OptionScorer  # noqa: E402
from training.config import LoraSettings  # noqa: E402

from .tiny import tiny_model  # noqa: E402

TOP = LoraSettings(r=4, alpha=8.0, layers=2)
PROMPTS = [[5, 9, 13, 2, 7], [3, 4], [11, 12, 13, 14, 15, 16, 17]]
RATIONALES = [[21, 22, 23], [8], [30, 31, 32, 33, 34]]


def _nudge(model: object, seed: int) -> None:
    gen = torch.Generator().manual_seed(seed)
    for name, p in model.named_parameters():  # type: ignore[attr-defined]
        if "lora_B" in name:
            p.data = torch.randn(p.shape, generator=gen) * 0.3


def _by_hand(model: object, prompt: list[int], cont: list[int], temperature: float) -> float:
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([prompt + cont])).logits[0].float()  # type: ignore[operator]
    logp = torch.log_softmax(logits / temperature, dim=-1)
    return float(sum(logp[len(prompt) - 1 + k, t] for k, t in enumerate(cont)))


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_a_continuation_scores_its_tokens_after_the_prompt(temperature: float) -> None:
    model = tiny_model(layers=3)
    _nudge(model, 1)
    with torch.no_grad():
        got = continuation_logprobs(model, PROMPTS, RATIONALES, temperature=temperature)
    assert got.shape == (3,) and got.device.type == "cpu"
    for row, (p, c) in enumerate(zip(PROMPTS, RATIONALES)):
        assert float(got[row]) == pytest.approx(_by_hand(model, p, c, temperature), abs=1e-4)
    alone = continuation_logprobs(model, PROMPTS[1:2], RATIONALES[1:2], temperature=temperature)
    assert float(alone[0]) == pytest.approx(float(got[1]), abs=1e-5)  # the padding of a batch changes nothing
    hotter = continuation_logprobs(model, PROMPTS, RATIONALES, temperature=temperature * 2)
    assert not torch.allclose(hotter, got)


def test_the_scorer_keeps_the_lower_layers_with_the_same_numbers_and_gradients() -> None:
    full_model, cached_model = tiny_model(layers=5, lora=TOP), tiny_model(layers=5, lora=TOP)
    for m in (full_model, cached_model):
        _nudge(m, 3)
    scorer = OptionScorer(cached_model, frozen_layers=3)
    full = continuation_logprobs(full_model, PROMPTS, RATIONALES, temperature=0.8)
    cached = scorer.continuations(PROMPTS, RATIONALES, temperature=0.8)
    assert scorer.cached_prompts == 3 and torch.allclose(full, cached, atol=1e-4)
    (full * torch.tensor([1.0, -2.0, 0.5])).sum().backward()
    (cached * torch.tensor([1.0, -2.0, 0.5])).sum().backward()
    grads = {n: p.grad for n, p in full_model.named_parameters() if p.requires_grad}
    compared = 0
    for n, p in cached_model.named_parameters():
        if p.requires_grad:
            assert p.grad is not None and torch.allclose(p.grad, grads[n], atol=1e-4), n
            compared += 1
    assert compared == 2 * 7 * 2
    plain = OptionScorer(full_model)  # adapters everywhere: the full forward
    assert torch.allclose(plain.continuations(PROMPTS, RATIONALES, temperature=0.8), full, atol=1e-6)


@pytest.mark.parametrize("prompts, conts, temperature, words", [
    ([[1, 2]], [[]], 1.0, "empty prompt or continuation"),
    ([[]], [[3]], 1.0, "empty prompt or continuation"),
    ([[1, 2]], [[3], [4]], 1.0, "one continuation per prompt"),
    ([[1, 2]], [[3]], 0.0, "temperature must be above 0"),
])
def test_bad_continuations_are_refused(prompts: list, conts: list, temperature: float, words: str) -> None:
    model = tiny_model(layers=3, lora=TOP)
    with pytest.raises(ValueError, match=words):
        continuation_logprobs(model, prompts, conts, temperature=temperature)
    with pytest.raises(ValueError, match=words):
        OptionScorer(model, frozen_layers=1).continuations(prompts, conts, temperature=temperature)
