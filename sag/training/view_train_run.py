"""Training a view group, stage by stage (``python -m sag train-views``; ``docs/group_views.md``).

Stage ``members``: each reasoning agent learns its own view on the ``members`` fold of
DDXPlus-8 TRAIN (:mod:`clinical.group_folds`) with exact GRPO over the eight letters
(:mod:`sag.training.view_training`), every class drawn equally often; the ``debate`` fold, which
no member learns on, is measured before and after.  Each member is a run of its own
(:func:`training.run.run_letter_training`: recorded, checkpointed, resumed after any stop,
its adapter written as a llama.cpp GGUF LoRA file).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from sag.group.config import AgentRole, GroupConfig
from training.config import TrainSettings
from training.run import RunResult
from training.store import StepRow, TrainingRecorder, TrainingStore

__all__ = ["MEMBER_KIND", "MemberStage", "train_member", "reasoning_ids"]

MEMBER_KIND = "sag-view-member"


def reasoning_ids(cfg: GroupConfig) -> tuple[str, ...]:
    return tuple(a.agent_id for a in cfg.agents() if a.role is AgentRole.REASONING)


@dataclass(frozen=True)
class MemberStage:
    """One member's first stage: the group, the agent, its base model key, settings, runs folder."""

    cfg: GroupConfig
    agent_id: str
    base_model: str
    settings: TrainSettings
    out: Path
    fold_limit: int | None = None

    def __post_init__(self) -> None:
        from common.errors import ConfigError

        if not self.cfg.views:
            raise ConfigError("group", f"{self.cfg.name} gives its members no views; train-views trains view groups")
        if self.agent_id not in reasoning_ids(self.cfg):
            raise ConfigError("agent", f"{self.agent_id!r} is not a reasoning agent of {self.cfg.name} "
                                       f"({', '.join(reasoning_ids(self.cfg))})")


def train_member(store: TrainingStore | TrainingRecorder, stage: MemberStage, *,
                 progress: Callable[[int, int, StepRow | None], None] | None = None,
                 should_stop: Callable[[], bool] | None = None,
                 on_measure: Callable[[str, int, bool], None] | None = None) -> RunResult:
    """Train (or resume) one member on its view; see the module docstring."""
    from runtime.factory import load_gguf
    from runtime.llama_backend import file_sha256
    from runtime.registry import resolve
    from clinical.group_folds import fold_items
    from sag.training.view_training import member_data_hash, member_items
    from training.run import LetterRun, check_layers, run_letter_training

    s = stage.settings
    path = resolve(stage.base_model)
    check_layers(path, s.lora.layers)
    limit = stage.fold_limit
    train = fold_items("members")[:limit] if limit else fold_items("members")
    measured = fold_items("debate")[:limit] if limit else fold_items("debate")
    backend = load_gguf(path, n_ctx=max(2048, s.max_prompt_tokens + 8), n_threads=1, kv_cache_mb=0)
    items = member_items(backend, stage.cfg, stage.agent_id, train, max_tokens=s.max_prompt_tokens, rewards=s.rewards)
    heldout = {"debate-fold": member_items(backend, stage.cfg, stage.agent_id, measured,
                                           max_tokens=s.max_prompt_tokens, rewards=s.rewards)}
    del backend
    view = stage.cfg.view_of(stage.agent_id)
    run = LetterRun(MEMBER_KIND, stage.base_model, path, file_sha256(path), s, items,
                    f"ddxplus8:members:{stage.agent_id}@{view}", member_data_hash(stage.cfg, stage.agent_id, train),
                    heldout, stage.out)
    return run_letter_training(store, run, progress=progress, should_stop=should_stop, on_measure=on_measure)
