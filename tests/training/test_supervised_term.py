"""The optional log-likelihood term added to GRPO (``TrainSettings.supervised``): its value
by hand, its pull on an option the agent never gives, its place in the run id, its bounds,
and a tiny model that learns with it."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from common.errors import ConfigError
from tests.training.tiny import cue_items, tiny_model
from training.config import TrainSettings
from training.grpo import exact_loss
from training.letter_task import LetterStep, greedy_answers, supervised_nll


def test_the_term_is_the_mean_negative_log_likelihood_of_the_right_option_over_items_that_have_one() -> None:
    logp = torch.log(torch.tensor([[0.5, 0.25, 0.25], [0.1, 0.2, 0.7], [0.3, 0.3, 0.4]]))
    got = supervised_nll(logp, np.array([0, 2, -1]))
    assert math.isclose(float(got), -(math.log(0.5) + math.log(0.7)) / 2, rel_tol=1e-6)
    assert float(supervised_nll(logp, np.array([-1, -1, -1]))) == 0.0


def test_an_option_never_given_barely_moves_under_grpo_and_is_pulled_by_the_term() -> None:
    """Exact GRPO, its advantages scaled by their spread, pulls the right option's logit by
    about sqrt(p (1 - p)): at p = 0.001 about 0.03; the log-likelihood's pull is 1 - p."""
    logits = torch.tensor([[8.0, 1.0, 1.0, math.log(0.001 * (math.exp(8) + 2 * math.e) / 0.999)]], requires_grad=True)
    rewards = torch.tensor([[-1.0, -1.0, -1.0, 1.0]])
    logp = torch.log_softmax(logits, dim=-1)
    p_right = float(logp[0, 3].exp())
    assert 0.0009 < p_right < 0.0011
    exact_loss(logp, logp.detach(), logp.detach(), rewards, eps=0.2, beta=0.0).loss.backward()
    grpo_pull = -float(logits.grad[0, 3])
    logits.grad = None
    supervised_nll(torch.log_softmax(logits, dim=-1), np.array([3])).backward()
    nll_pull = -float(logits.grad[0, 3])
    assert 0 < grpo_pull < 0.05
    assert math.isclose(nll_pull, 1 - p_right, rel_tol=1e-4)


def test_the_weight_names_a_new_run_only_when_it_is_used() -> None:
    assert "supervised" not in TrainSettings().recorded()  # runs from before the setting keep their ids
    assert TrainSettings(supervised=0.5).recorded()["supervised"] == 0.5
    assert TrainSettings(supervised=0.5).digest("m") != TrainSettings().digest("m")


@pytest.mark.parametrize("value", [-0.1, float("nan"), 101.0])
def test_a_weight_out_of_range_is_refused(value: float) -> None:
    with pytest.raises(ConfigError) as info:
        TrainSettings(supervised=value)
    assert info.value.field == "supervised"


def test_with_the_term_the_tiny_model_learns_the_cue_and_the_step_records_the_whole_loss() -> None:
    torch.set_num_threads(1)
    items, held = cue_items(64, seed=1), cue_items(64, seed=2)
    settings = TrainSettings(steps=60, batch_size=16, learning_rate=0.02, seed=0, supervised=1.0)
    model = tiny_model()
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=settings.learning_rate)
    step = LetterStep(model, items, settings, opt, np.random.default_rng(0))
    before = greedy_answers(model, held).accuracy
    rows = [step(k) for k in range(1, settings.steps + 1)]
    after = greedy_answers(model, held).accuracy
    assert before < 0.5 and after > 0.8, (before, after)
    assert all(r.loss > 0 for r in rows[:5])  # the log-likelihood term (> 0) is in the recorded loss


def test_a_records_report_names_the_log_likelihood_weight_only_when_the_run_had_one() -> None:
    from training.report import export_markdown
    from training.shipped import read_shipped

    assert ", log-likelihood weight 1, LoRA" in export_markdown(read_shipped("ddx-views2-r1")).splitlines()[0]
    assert "log-likelihood" not in export_markdown(read_shipped("ddx-views-r1"))
