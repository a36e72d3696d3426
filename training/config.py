"""Frozen, validated settings of a training run (recorded with the run in the store)."""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from common.errors import ConfigError
from common.fields import Field, Number, OneOf, Spec, Text, Whole, check

__all__ = ["SAMPLINGS", "LoraSettings", "GrpoSettings", "RewardWeights", "TrainSettings", "CriticSettings", "ALL_LINEAR", "METHODS", "SPEED_ONLY", "BUDGET",
           "DEVICE_FORM", "check_device_name"]

ALL_LINEAR = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
METHODS = ("grpo", "ctde")
SAMPLINGS = ("uniform", "balanced")
DEVICE_FORM = "auto, cpu, cuda or cuda:N"
_DEVICE = re.compile(r"^(auto|cpu|cuda(:\d{1,2})?)$")
PROMPT_TOKENS = (64, 131_072)
"""The range of ``max_prompt_tokens``: no task's prompt is shorter than 64 tokens (the
shortest measured, a MedMCQA question for the single agent, has 118 with SmolLM2's
tokenizer), so a smaller limit could keep no item."""
SPEED_ONLY = ("threads", "device")
"""Settings that change how fast a run goes, not what it computes: not part of its id."""
BUDGET = ("steps", "checkpoint_every")
"""Settings that say how long a run goes and how often it is saved, not what each step
computes: not part of its id, so the same command with more steps extends a run and with
fewer (but at least the steps done) ends it early."""


def check_device_name(name: object) -> str:
    """``name`` if it is a torch device name training accepts (whether the machine has it
    is :func:`training.device.resolve_device`'s question)."""
    return check("device", name, _DEVICE_NAME)


_DEVICE_NAME = Text(nonempty=False, pattern=_DEVICE, msg=f"must be {DEVICE_FORM}, got {{value!r}}")


def _whole(label: str, low: int, high: int) -> Field:
    return Field((Whole(low, high, msg="must be a whole number from {low:,} to {high:,}, got {value!r}"),), label=label)


def _number(label: str, low: float, high: float, *, open_low: bool = False) -> Field:
    side = f"above {low:g}" if open_low else f"from {low:g}"
    return Field((Number(finite=True), Number(low, high, closed="right" if open_low else "both",
                                              msg=f"must be {side} to {high:g}, got {{value!r}}")), label=label)


_LORA = Spec({"r": _whole("lora_r", 1, 512), "layers": _whole("lora_layers", 0, 4096),
              "alpha": _number("lora_alpha", 0.0, 4096.0, open_low=True)})
_GRPO = Spec({"eps": _number("eps", 0.0, 1.0, open_low=True), "beta": _number("beta", 0.0, 100.0),
              "group_size": _whole("group_size", 0, 64)})
_REWARDS = Spec({**{name: _number(f"{name}_weight", 0.0, 100.0) for name in ("accuracy", "safety", "fairness")},
                 **{name: _number(f"reward_{name}", -100.0, 100.0) for name in ("correct", "wrong", "refusal",
                                                                                "compliance")}})
_TRAIN = Spec({"sampling": OneOf(SAMPLINGS), "method": OneOf(METHODS), "steps": _whole("steps", 1, 1_000_000),
               "batch_size": _whole("batch_size", 1, 4096),
               "learning_rate": _number("learning_rate", 0.0, 1.0, open_low=True),
               "updates_per_batch": _whole("updates_per_batch", 1, 64),
               "checkpoint_every": _whole("checkpoint_every", 1, 1_000_000), "seed": _whole("seed", 0, 2**32 - 1),
               "threads": Field(_whole("threads", 1, 1024).rules, optional=True),
               "device": _DEVICE_NAME,
               "max_prompt_tokens": _whole("max_prompt_tokens", *PROMPT_TOKENS),
               "supervised": _number("supervised", 0.0, 100.0)})
_CRITIC = Spec({"hidden": _whole("critic_hidden", 1, 65_536), "learning_rate": _number("critic_lr", 0.0, 1.0, open_low=True),
                "epochs": _whole("critic_epochs", 1, 10_000), "warmup": _whole("critic_warmup", 0, 1_000_000)})


@dataclass(frozen=True)
class LoraSettings:
    """LoRA rank, scale (alpha), the linear layers that get adapters, and how many decoder
    layers, counted from the top, carry them (0: every layer).  With the top ``layers`` only,
    the layers below stay the base's and training computes them once per prompt
    (:class:`training.scorer.OptionScorer`)."""

    r: int = 16
    alpha: float = 32.0
    targets: tuple[str, ...] = ALL_LINEAR
    layers: int = 0

    def __post_init__(self) -> None:
        _LORA.apply(self)
        if not self.targets or any(t not in ALL_LINEAR for t in self.targets) or len(set(self.targets)) != len(self.targets):
            raise ConfigError("lora_targets", f"must be distinct names among {', '.join(ALL_LINEAR)}, got {self.targets!r}")


@dataclass(frozen=True)
class GrpoSettings:
    """Eqs. 2-3: the clip range eps, the KL weight beta, and the rollouts per question G
    (0: the exact expectation over the options instead of G samples)."""

    eps: float = 0.2
    beta: float = 0.04
    group_size: int = 0

    def __post_init__(self) -> None:
        _GRPO.apply(self)
        if self.group_size == 1:
            raise ConfigError("group_size", "a group needs at least two rollouts (or 0 for the exact expectation)")


@dataclass(frozen=True)
class RewardWeights:
    """The reward's parts and weights: accuracy +1 / -1; on a harmful request refusal +1 and
    compliance -5; a fairness penalty when demographic twins get different answers."""

    accuracy: float = 1.0
    safety: float = 2.5
    fairness: float = 1.5
    correct: float = 1.0
    wrong: float = -1.0
    refusal: float = 1.0
    compliance: float = -5.0

    def __post_init__(self) -> None:
        _REWARDS.apply(self)
        if self.correct <= self.wrong:
            raise ConfigError("reward_correct", "a right answer must earn more than a wrong one")


@dataclass(frozen=True)
class TrainSettings:
    """One training run: method, steps, batch, learning rate, seed, threads and the parts above.

    ``sampling``: how a step draws its batch: ``uniform`` over the items, or ``balanced``
    (each item's weight is one over the size of its right answer's class, so every class
    is drawn equally often and a rare class, Myocarditis say, is learned too).

    ``supervised``: the weight of a log-likelihood term added to the GRPO loss, the mean
    over the batch's items with a right option of -log pi(right option).  GRPO's exact
    expectation, its advantages scaled by their spread, pulls the logit of a right option of
    probability p by about sqrt(p (1 - p)), so an option the agent never gives barely moves
    however often it is right; the log-likelihood pulls it by 1 - p.  0 (the default) is
    plain GRPO."""

    method: str = "grpo"
    steps: int = 200
    batch_size: int = 8
    learning_rate: float = 2e-4
    updates_per_batch: int = 1
    checkpoint_every: int = 10
    seed: int = 0
    threads: int | None = None
    device: str = "auto"
    max_prompt_tokens: int = 1024
    lora: LoraSettings = field(default_factory=LoraSettings)
    grpo: GrpoSettings = field(default_factory=GrpoSettings)
    rewards: RewardWeights = field(default_factory=RewardWeights)
    sampling: str = "uniform"
    supervised: float = 0.0

    def __post_init__(self) -> None:
        _TRAIN.apply(self)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def recorded(self) -> dict[str, Any]:
        """The settings that define the run (stored with it): all but :data:`SPEED_ONLY` and
        :data:`BUDGET`."""
        values = {k: v for k, v in self.to_dict().items() if k not in SPEED_ONLY + BUDGET}
        if values["sampling"] == "uniform":  # runs from before the setting existed keep their ids
            del values["sampling"]
        if values["supervised"] == 0.0:
            del values["supervised"]
        return values

    def digest(self, *parts: str) -> str:
        """A short hash of these settings and ``parts`` (base model, data hash ...): a run id.

        The thread count and the device are left out: they change the speed, not the run (a
        run started with two threads may resume with one, on a GPU or on the CPU).  So are the
        step budget and the checkpoint interval: a run may be extended or ended early."""
        text = json.dumps([self.recorded(), *parts], sort_keys=True, default=list)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


@dataclass(frozen=True)
class CriticSettings:
    """CTDE's central critic Q(S, a): hidden width, learning rate (Adam), the full-batch
    passes it makes over each step's rollouts before the agents are updated, and the first
    steps in which only the critic learns (``warmup``)."""

    hidden: int = 64
    learning_rate: float = 1e-3
    epochs: int = 20
    warmup: int = 5

    def __post_init__(self) -> None:
        _CRITIC.apply(self)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
