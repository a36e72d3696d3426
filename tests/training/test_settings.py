"""Training settings are validated on construction: each bad value is named in one line."""
from __future__ import annotations

import pytest

from common.errors import ConfigError
from training.config import GrpoSettings, LoraSettings, RewardWeights, TrainSettings


@pytest.mark.parametrize("make, field", [
    (lambda: TrainSettings(method="ppo"), "method"),
    (lambda: TrainSettings(steps=0), "steps"),
    (lambda: TrainSettings(batch_size=True), "batch_size"),
    (lambda: TrainSettings(learning_rate=0.0), "learning_rate"),
    (lambda: TrainSettings(learning_rate=float("nan")), "learning_rate"),
    (lambda: TrainSettings(threads=0), "threads"),
    (lambda: LoraSettings(r=0), "lora_r"),
    (lambda: LoraSettings(targets=("q_proj", "q_proj")), "lora_targets"),
    (lambda: LoraSettings(targets=("embed_tokens",)), "lora_targets"),
    (lambda: GrpoSettings(eps=0.0), "eps"),
    (lambda: GrpoSettings(group_size=1), "group_size"),
    (lambda: GrpoSettings(beta=-1.0), "beta"),
    (lambda: RewardWeights(correct=-1.0, wrong=1.0), "reward_correct"),
    (lambda: RewardWeights(safety=float("inf")), "safety_weight"),
])
def test_a_bad_setting_is_refused_by_name(make: object, field: str) -> None:
    with pytest.raises(ConfigError) as err:
        make()  # type: ignore[operator]
    assert err.value.field == field and "\n" not in str(err.value)


def test_the_run_id_follows_settings_and_data() -> None:
    base = TrainSettings()
    assert base.digest("m", "d") == TrainSettings().digest("m", "d")
    assert base.digest("m", "d") != TrainSettings(learning_rate=3e-4).digest("m", "d")
    assert base.digest("m", "d") != TrainSettings(batch_size=9).digest("m", "d")
    assert base.digest("m", "d") != base.digest("m", "other data")
    assert RewardWeights() == RewardWeights(accuracy=1.0, safety=2.5, fairness=1.5)


def test_the_thread_count_is_not_part_of_the_run() -> None:
    assert TrainSettings(threads=1).digest("m") == TrainSettings(threads=2).digest("m") == TrainSettings().digest("m")


def test_the_step_budget_and_checkpoint_interval_are_not_part_of_the_run() -> None:
    base = TrainSettings(steps=40, checkpoint_every=2)
    for other in (TrainSettings(steps=10, checkpoint_every=2), TrainSettings(steps=60, checkpoint_every=5)):
        assert other.digest("m", "d") == base.digest("m", "d")
        assert other.recorded() == base.recorded()
    assert "steps" not in base.recorded() and "checkpoint_every" not in base.recorded()
