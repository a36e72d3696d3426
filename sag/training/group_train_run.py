"""A whole group training run: GRPO over debates or CTDE with per-role adapters.

Every step: the current adapters are written as GGUF LoRA files and loaded by llama.cpp
on the base model; ``batch_size`` training items are drawn; each is debated ``G`` times
(``settings.grpo.group_size``) by the group with sampled letters, t_max = ``play.rounds``
(and its demographic twin as often, when the fairness weight is above 0); the plays become
rollouts (:mod:`sag.training.group_training`) and one step of :mod:`training.group_step` updates
the adapters in torch.  Checkpoints (adapters, optimiser, critic, random state) survive
kill -9; the same call resumes.  At the end each adapter is written beside a group file
(``group.json``) whose backbones carry them, which ``python -m sag run --group`` plays.
"""
from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from clinical.questions import QuestionItem
from common.errors import ConfigError
from common.fields import Flag, Number, Spec, Whole
from sag.group.config import AgentRole, GroupConfig
from sag.training.group_training import (GROUP_METHODS, Tokenizer, adapter_names_for, play_reward, play_rollouts,
                                state_size, to_rollout, twin_of)
from training.config import CriticSettings, TrainSettings
from training.store import StepRow, TrainingRecorder, TrainingStore

__all__ = ["GroupPlay", "GroupRun", "GroupResult", "run_group_training", "GROUP_FILE"]

log = logging.getLogger(__name__)

GROUP_FILE = "group.json"


_FROM_TO = "must be a whole number from {low} to {high}, got {value!r}"
_PLAY = Spec({
    "rounds": Whole(1, 10, msg=_FROM_TO), "rationale_tokens": Whole(1, 512, msg=_FROM_TO),
    "temperature": Number(0.0, 5.0, closed="right", msg="rollouts need sampled letters: a temperature above 0 and "
                                                        "at most 5, got {value!r}"),
    "rationale_actions": Flag(),
})


@dataclass(frozen=True)
class GroupPlay:
    """How rollouts are played: debate rounds after round 0, the letters' sampling
    temperature, the rationale budget per turn, and whether the rationales' tokens are
    actions too (GRPO's rationale path, :mod:`sag.training.group_training`)."""

    rounds: int = 1
    temperature: float = 1.0
    rationale_tokens: int = 48
    rationale_actions: bool = False

    def identity(self) -> dict[str, Any]:
        """What names the run: every field, ``rationale_actions`` only when on (runs made
        before the setting existed keep their ids)."""
        values = dict(self.__dict__)
        if not self.rationale_actions:
            values.pop("rationale_actions")
        return values

    def __post_init__(self) -> None:
        _PLAY.apply(self)


@dataclass(frozen=True)
class GroupRun:
    """What one group run trains (see the module docstring)."""

    kind: str
    group: GroupConfig
    base_model: str
    base_path: Path
    base_sha256: str
    settings: TrainSettings
    play: GroupPlay
    critic: CriticSettings
    items: tuple[QuestionItem, ...]
    data_name: str
    data_hash: str
    out: Path

    def __post_init__(self) -> None:
        if self.group.method not in GROUP_METHODS:
            raise ConfigError("group", f"method {self.group.method!r} does not train as a group; choose a group "
                                       f"of method {', '.join(GROUP_METHODS)}")
        if self.settings.grpo.group_size < 2:
            raise ConfigError("group_size", "a group run needs at least two rollouts per item (--group-size)")
        if not self.items:
            raise ConfigError("benchmarks", "no training item")
        if self.settings.supervised:
            raise ConfigError("supervised", "a group run trains sampled debates, which have no log-likelihood "
                                            "term; leave --supervised at 0")

    @property
    def run_id(self) -> str:
        extra = json.dumps([self.group.to_dict(), self.play.identity(), self.critic.to_dict()], sort_keys=True,
                           default=list)
        return self.settings.digest(self.kind, self.base_model, self.base_sha256, self.data_hash, extra)

    def recorded(self) -> dict[str, Any]:
        """The settings stored with the run: the same fields as its id (a run made before a
        field existed stores, and resumes with, the settings it was made with)."""
        return {**self.settings.recorded(), "group": self.group.to_dict(), "play": self.play.identity(),
                "critic": self.critic.to_dict() if self.settings.method == "ctde" else None}

    @property
    def n_slots(self) -> int:
        return max(len(i.options) for i in self.items) + 1


@dataclass(frozen=True)
class GroupResult:
    run_id: str
    steps_done: int
    stopped: bool
    resumed_from: int
    group_file: Path | None
    dropped: int


class _Policy:
    """The torch side: base + adapters, scorer, optimiser, critic."""

    def __init__(self, run: GroupRun, names: Sequence[str], device: str = "cpu") -> None:
        import torch

        from training.base_model import add_lora, adapter_parameters, frozen_layers, load_base, use_adapter
        from training.ctde import Critic
        from training.rollouts import ActionScorer
        from training.scorer import OptionScorer

        s = run.settings
        self.model = add_lora(load_base(run.base_path, device), s.lora, names)
        self.names = tuple(names)
        self.optimizer = torch.optim.AdamW(adapter_parameters(self.model), lr=s.learning_rate)
        option_scorer = OptionScorer(self.model, frozen_layers=frozen_layers(self.model, s.lora))
        self.scorer = ActionScorer(option_scorer, use_adapter=lambda name: use_adapter(self.model, name))
        self.critic = self.critic_optimizer = None
        if s.method == "ctde":
            self.critic = Critic(state_size(run.n_slots), run.group.size, run.n_slots, run.critic.hidden)
            self.critic_optimizer = torch.optim.Adam(self.critic.parameters(), lr=run.critic.learning_rate)

    def extra(self) -> dict[str, Any] | None:
        if self.critic is None:
            return None
        return {"critic": self.critic.state_dict(), "critic_optimizer": self.critic_optimizer.state_dict()}

    def load_extra(self, extra: dict[str, Any] | None) -> None:
        if self.critic is not None and extra is not None:
            self.critic.load_state_dict(extra["critic"])
            self.critic_optimizer.load_state_dict(extra["critic_optimizer"])

    def export(self, folder: Path, base_path: Path, alpha: float) -> dict[str, Path]:
        from training.base_model import use_adapter
        from training.gguf_lora import export_lora_gguf

        out = {}
        for name in self.names:
            use_adapter(self.model, name)
            out[name] = export_lora_gguf(self.model, base_path, folder / f"adapter-{name}.gguf", alpha=alpha)
        return out


def _runners(run: GroupRun, files: dict[str, Path], adapters: dict[AgentRole, str],
             threads: int | None) -> tuple[GroupConfig, dict[str, Any]]:
    """The group as played this step: each role's backbone is the base with its adapter file."""
    from runtime.factory import load_gguf
    from sag.debate.runners import DEFAULT_N_CTX, batch_width, runner_for

    keys = {name: f"{run.base_model}+lora:file:{path}" for name, path in files.items()}
    backbones = tuple(keys[adapters[role]] if role in adapters else run.base_model for role in AgentRole)
    cfg = run.group.with_changes(backbones=backbones, t_max=run.play.rounds, temperature=run.play.temperature,
                                 rationale_tokens=run.play.rationale_tokens)
    runners = {}
    for name, key in keys.items():
        if key in cfg.models():
            backend = load_gguf(run.base_path, n_ctx=DEFAULT_N_CTX, n_threads=threads, kv_cache_mb=0,
                                sha256=run.base_sha256, lora_path=files[name])
            runners[key] = runner_for(backend, width=batch_width(cfg))
    return cfg, runners


def _tokenizer(run: GroupRun) -> Tokenizer:
    from runtime.factory import load_gguf

    backend = load_gguf(run.base_path, n_ctx=512, n_threads=1, kv_cache_mb=0, sha256=run.base_sha256)
    return Tokenizer(backend.prompt_tokens, backend.option_token)


class _Step:
    def __init__(self, run: GroupRun, policy: _Policy, rng: np.random.Generator, retrievers: Any,
                 tokenizer: Tokenizer) -> None:
        self.run, self.policy, self.rng, self.retrievers, self.tokenizer = run, policy, rng, retrievers, tokenizer
        self.adapters = adapter_names_for(run.settings.method, run.group)
        self.dropped = 0

    def _rollouts(self, cfg: GroupConfig, runners: dict[str, Any], rows: Sequence[int],
                  seeds: np.ndarray) -> list[Any]:
        run, weights = self.run, self.run.settings.rewards
        out, group = [], 0
        for row, item_seeds in zip(rows, seeds):
            item = run.items[row]
            twin = twin_of(item) if weights.fairness > 0 else None
            plays, failed = play_rollouts(item, cfg, runners, self.retrievers, item_seeds)
            twin_plays, twin_failed = (play_rollouts(twin, cfg, runners, self.retrievers, item_seeds)
                                       if twin is not None else ([], 0))
            self.dropped += failed + twin_failed
            answers = {p.seed: p.answer for p in twin_plays}
            own = {p.seed: p.answer for p in plays}
            for members, other in ((plays, answers), (twin_plays, own)):
                for play in members:
                    reward, right = play_reward(play.item, play.answer, weights)
                    if play.seed in other and other[play.seed] != play.answer:
                        reward -= weights.fairness
                    out.append(to_rollout(play, group, reward, right, cfg, self.tokenizer, self.adapters,
                                          run.n_slots, rationales=run.play.rationale_actions))
                group += 1
        return out

    def __call__(self, k: int) -> StepRow:
        import torch

        from training.base_model import reference_mode
        from training.group_step import ctde_step, grpo_update, unit_logps

        start = time.perf_counter()
        run, s, policy = self.run, self.run.settings, self.policy
        rows = [int(i) for i in self.rng.choice(len(run.items), size=min(s.batch_size, len(run.items)), replace=False)]
        seeds = self.rng.integers(0, 2**31 - 1, size=(len(rows), s.grpo.group_size))
        folder = run.out / run.run_id / "live"
        files = policy.export(folder, run.base_path, s.lora.alpha)
        cfg, runners = _runners(run, files, self.adapters, s.threads)
        rollouts = self._rollouts(cfg, runners, rows, seeds)
        del runners
        if not rollouts:
            raise RuntimeError(f"step {k}: every rollout failed; see the log for the model errors")
        actions = [a for r in rollouts for a in r.actions]
        with torch.no_grad(), reference_mode(policy.model):
            ref = unit_logps(policy.scorer, rollouts)
        old, parts = None, None
        if policy.critic is not None:
            parts = ctde_step(policy.scorer, policy.optimizer, policy.critic, policy.critic_optimizer, rollouts,
                              ref=ref, beta=s.grpo.beta, epochs=run.critic.epochs, updates=s.updates_per_batch,
                              warm_up=k <= run.critic.warmup)
        else:
            for _ in range(s.updates_per_batch):
                parts, old = grpo_update(policy.scorer, policy.optimizer, rollouts, ref=ref, old=old, eps=s.grpo.eps,
                                         beta=s.grpo.beta)
        assert parts is not None
        reward = float(np.mean([r.reward for r in rollouts]))
        accuracy = float(np.mean([r.correct for r in rollouts]))
        tokens = sum(len(a.tokens) for a in actions)
        return StepRow(k, parts.loss, reward, accuracy, parts.kl, parts.clipped_share, len(rows), tokens,
                       time.perf_counter() - start)


def _group_file(run: GroupRun, files: dict[str, Path], adapters: dict[AgentRole, str], folder: Path) -> Path:
    """A group file whose backbones carry the trained adapters (``sag run --group`` reads it)."""
    backbones = [f"{run.base_model}+lora:file:{files[adapters[role]].resolve()}" if role in adapters
                 else run.base_model for role in AgentRole]
    values = run.group.with_changes(name=f"{run.group.name}-{run.settings.method}-{run.run_id}",
                                    backbones=tuple(backbones)).to_dict()
    path = folder / GROUP_FILE
    path.write_text(json.dumps(values, indent=2, default=list) + "\n", encoding="utf-8")
    return path


def run_group_training(store: TrainingStore | TrainingRecorder, run: GroupRun, *, retrievers: Any,
                       progress: Callable[[int, int, StepRow | None], None] | None = None,
                       should_stop: Callable[[], bool] | None = None) -> GroupResult:
    import torch

    from runtime.llama_backend import file_sha256
    from training.base_model import set_threads
    from training.device import resolve_device
    from training.checkpoint import load_checkpoint, restore, save_checkpoint
    from training.loop import run_loop
    from training.run import check_layers

    s, run_id = run.settings, run.run_id
    run_dir = run.out / run_id
    check_layers(run.base_path, s.lora.layers)
    store.check_start(run_id, kind=run.kind, method=s.method, base_model=run.base_model, settings=run.recorded(),
                      data_hash=run.data_hash)  # its id stored with other settings: refused before a model loads
    device = resolve_device(s.device)
    set_threads(s.threads)
    torch.manual_seed(s.seed)
    adapters = adapter_names_for(s.method, run.group)
    policy = _Policy(run, tuple(dict.fromkeys(adapters.values())), device)
    rng = np.random.default_rng(s.seed)
    start = 0
    found = load_checkpoint(run_dir)
    if found is not None:
        policy.load_extra(restore(found, policy.model, policy.optimizer))
        rng.bit_generator.state = found.state["rng"]
        start = found.step
    # recorded once the base is loaded and the checkpoint read: a failure before leaves no row
    store.start_run(run_id, kind=run.kind, method=s.method, base_model=run.base_model, settings=run.recorded(),
                    data_name=run.data_name, data_hash=run.data_hash, n_train=len(run.items))
    if found is not None:
        store.forget_after(run_id, start)
        log.info("resuming %s from step %d", run_id, start)
    step = _Step(run, policy, rng, retrievers, _tokenizer(run))

    def checkpoint(k: int) -> None:
        save_checkpoint(run_dir, k, policy.model, policy.optimizer, {"rng": rng.bit_generator.state},
                        extra=policy.extra())

    result = run_loop(start=start, total=s.steps, step=step, record=lambda row: store.add_step(run_id, row),
                      checkpoint=checkpoint, every=s.checkpoint_every, progress=progress, should_stop=should_stop)
    if result.stopped:
        store.finish(run_id, "stopped")
        return GroupResult(run_id, result.last_step, True, start, None, step.dropped)
    files = policy.export(run_dir, run.base_path, s.lora.alpha)
    group_file = _group_file(run, files, adapters, run_dir)
    store.finish(run_id, "finished", str(group_file), file_sha256(group_file))
    return GroupResult(run_id, result.last_step, False, start, group_file, step.dropped)
