"""Several agents, one adapter each, trained together with a central critic (tiny model)."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.training.tiny import OPTIONS, VOCAB, cue_items
from training.base_model import add_lora, adapter_parameters, use_adapter
from training.config import LoraSettings, TrainSettings
from training.letter_task import LetterItems, class_weights, greedy_answers
from training.scorer import OptionScorer
from training.team_letters import TeamStep


def _tiny_team(names: tuple[str, ...]) -> object:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    model = LlamaForCausalLM(config)
    for p in model.parameters():
        p.requires_grad_(False)
    return add_lora(model, LoraSettings(r=4, alpha=8.0), names)


def _hidden_cue(items: LetterItems) -> LetterItems:
    """The same questions with the cue token replaced by noise: an agent that cannot know."""
    tokens = tuple(tuple(25 if 10 <= t < 10 + len(OPTIONS) else t for t in row) for row in items.tokens)
    return LetterItems(items.ids, tokens, items.option_ids, items.option_names, items.rewards, items.right)


def test_agents_learn_from_a_central_critic_and_the_blind_one_follows_the_group_value() -> None:
    torch.set_num_threads(1)
    items = cue_items(48, seed=3)
    agents = {"seer": items, "blind": _hidden_cue(items)}
    model = _tiny_team(tuple(agents))
    right = items.right

    def critic(rows: list[int], joint: np.ndarray, probs: np.ndarray) -> np.ndarray:
        y = right[np.asarray(rows)]
        return np.stack([np.where(np.arange(len(OPTIONS))[None, :] == y[:, None], 1.0, -1.0)] * len(agents))

    settings = TrainSettings(steps=80, batch_size=16, learning_rate=0.02, sampling="balanced")
    scorer = OptionScorer(model)
    optimizer = torch.optim.AdamW(adapter_parameters(model), lr=settings.learning_rate)
    step = TeamStep(model, agents, critic, settings, optimizer, np.random.default_rng(0), scorer)
    rows = [step(k) for k in range(1, settings.steps + 1)]
    use_adapter(model, "seer")
    seer = greedy_answers(model, items, scorer=scorer)
    use_adapter(model, "blind")
    blind = greedy_answers(model, agents["blind"], scorer=scorer)
    assert seer.accuracy > 0.8, seer.accuracy
    assert blind.accuracy < 0.6, blind.accuracy  # nothing in its prompt tells it the answer
    assert np.mean([r.reward for r in rows[-10:]]) > np.mean([r.reward for r in rows[:10]])


def test_agents_must_share_their_questions() -> None:
    model = _tiny_team(("a", "b"))
    settings = TrainSettings()
    with pytest.raises(ValueError, match="the same"):
        TeamStep(model, {"a": cue_items(8, 1), "b": cue_items(9, 1)}, lambda *a: None, settings,  # type: ignore
                 None, np.random.default_rng(0), OptionScorer(model))


def test_balanced_sampling_draws_every_class_equally_often() -> None:
    right = np.array([0] * 90 + [1] * 10)
    weights = class_weights(right)
    assert abs(weights[right == 0].sum() - 0.5) < 1e-12 and abs(weights[right == 1].sum() - 0.5) < 1e-12
    assert TrainSettings(sampling="balanced").recorded()["sampling"] == "balanced"
    assert "sampling" not in TrainSettings().recorded()  # runs from before the setting keep their ids


def test_a_held_out_score_says_each_class_recall_and_names_a_class_never_diagnosed() -> None:
    from training.class_recall import letter_names
    from training.run import HeldoutScore

    score = HeldoutScore(4, 2, 8, "A", 0.5, ("A", "A", "B", "C"), ("A", "D", "B", "D"))
    lines = score.recall_lines(letter_names("ddxplus8"))
    assert lines[0] == "recall per class: Anaphylaxis 1.00, Pulmonary_embolism 1.00, Myocarditis 0.00"
    assert lines[1].startswith("Never diagnoses Myocarditis: 0 of its 2 held-out cases right")
