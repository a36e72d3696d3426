"""``python -m dcem_clinical train``: a resumable GRPO run for a DDXPlus-8 diagnostician.

One run = settings + base model + training data; its id is a hash of the three.  The run
folder (``--out``, default ``runs/train``, outside git) holds the checkpoint; the store
holds the record (settings, data hash, one row per step, held-out accuracy before and
after).  At the end the adapter is written as a llama.cpp GGUF LoRA file
(``<out>/<run id>/adapter.gguf``), usable as ``smollm2-135m+lora:file:<that path>``.
kill -9 at any moment loses at most the steps since the last checkpoint; the same
command resumes.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from clinical.datasets import ClinicalCase, load_dataset
from common.errors import ConfigError
from training.config import TrainSettings
from training.store import StepRow, TrainingStore

__all__ = ["DiagnosticianRun", "TrainSummary", "train_diagnostician", "training_cases", "KIND"]

log = logging.getLogger(__name__)

KIND = "diagnostician"


@dataclass(frozen=True)
class DiagnosticianRun:
    """What to train: dataset, base model key, settings, and where the run folder goes."""

    out: Path
    settings: TrainSettings = TrainSettings()
    dataset: str = "ddxplus8"
    base_model: str = "smollm2-135m"
    heldout: int = 200

    def __post_init__(self) -> None:
        if self.dataset != "ddxplus8":
            raise ConfigError("dataset", f"diagnosticians are trained on ddxplus8 only, got {self.dataset!r}")
        if isinstance(self.heldout, bool) or not isinstance(self.heldout, int) or not 0 <= self.heldout <= 10_000:
            raise ConfigError("heldout", f"must be a whole number from 0 to 10,000, got {self.heldout!r}")


@dataclass(frozen=True)
class TrainSummary:
    run_id: str
    steps_done: int
    stopped: bool
    resumed_from: int
    base_accuracy: float | None
    trained_accuracy: float | None
    adapter: Path | None


def training_cases(dataset: str, heldout: int) -> tuple[list[ClinicalCase], list[ClinicalCase], str]:
    """(TRAIN cases, the first ``heldout`` HELD-OUT cases, the split's hash)."""
    from clinical.training_split import training_split

    split = training_split(dataset)
    by_id = {c.source_id: c for c in load_dataset(dataset).cases}
    train = [by_id[i] for i in split.train_ids]
    held = [by_id[i] for i in split.heldout_ids][:heldout]
    return train, held, split.split_hash


def train_diagnostician(store: TrainingStore, run: DiagnosticianRun, *,
                        progress: Callable[[int, int, StepRow], None] | None = None,
                        should_stop: Callable[[], bool] | None = None,
                        eval_progress: Callable[[int], None] | None = None) -> TrainSummary:
    import torch

    from dcem_clinical.diagnostician import build_items, data_hash
    from runtime.llama_backend import LlamaCppBackend, file_sha256
    from runtime.registry import resolve
    from training.base_model import add_lora, load_base, set_threads
    from training.checkpoint import load_checkpoint, restore, save_checkpoint
    from training.letter_task import LetterStep, greedy_answers
    from training.loop import run_loop

    s = run.settings
    if s.method != "grpo":
        raise ConfigError("method", "a single diagnostician is trained with grpo (ctde needs a panel)")
    train, held, split_hash = training_cases(run.dataset, run.heldout)
    labels = load_dataset(run.dataset).labels
    path = resolve(run.base_model)
    run_id = s.digest(run.base_model, file_sha256(path), data_hash(train))
    run_dir = run.out / run_id
    backend = LlamaCppBackend(path, n_ctx=max(2048, s.max_prompt_tokens + 8), n_threads=1, kv_cache_mb=0)
    items = build_items(backend, labels, train, max_tokens=s.max_prompt_tokens, rewards=s.rewards)
    held_items = build_items(backend, labels, held, max_tokens=s.max_prompt_tokens, rewards=s.rewards) if held else None
    del backend
    store.start_run(run_id, kind=KIND, method=s.method, base_model=run.base_model, settings=s.to_dict(),
                    data_name=f"{run.dataset}:train:{split_hash[:12]}", data_hash=data_hash(train),
                    n_train=len(train))
    set_threads(s.threads)
    torch.manual_seed(s.seed)
    model = add_lora(load_base(path), s.lora)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=s.learning_rate)
    rng = np.random.default_rng(s.seed)
    start = 0
    found = load_checkpoint(run_dir)
    if found is not None:
        restore(found, model, optimizer)
        rng.bit_generator.state = found.state["rng"]
        start = found.step
        store.forget_after(run_id, start)
        log.info("resuming %s from step %d", run_id, start)
    base_acc = None
    if held_items is not None and start == 0 and store.evals(run_id).empty:
        base = greedy_answers(model, held_items, reference=True, progress=eval_progress)
        letter, share = base.top_letter
        store.add_eval(run_id, 0, "heldout", base.n_items, base.n_correct, letter, share)
        base_acc = base.accuracy
    step = LetterStep(model, items, s, optimizer, rng)

    def checkpoint(k: int) -> None:
        save_checkpoint(run_dir, k, model, optimizer, {"rng": rng.bit_generator.state})

    result = run_loop(start=start, total=s.steps, step=step, record=lambda row: store.add_step(run_id, row),
                      checkpoint=checkpoint, every=s.checkpoint_every, progress=progress, should_stop=should_stop)
    if result.stopped:
        store.finish(run_id, "stopped")
        return TrainSummary(run_id, result.last_step, True, start, base_acc, None, None)
    trained_acc = None
    if held_items is not None:
        done = greedy_answers(model, held_items, progress=eval_progress)
        letter, share = done.top_letter
        store.add_eval(run_id, s.steps, "heldout", done.n_items, done.n_correct, letter, share)
        trained_acc = done.accuracy
    adapter = _export(model, path, run_dir / "adapter.gguf", s.lora.alpha)
    store.finish(run_id, "finished", str(adapter), file_sha256(adapter))
    return TrainSummary(run_id, result.last_step, False, start, base_acc, trained_acc, adapter)


def _export(model: object, base: Path, out: Path, alpha: float) -> Path:
    from training.gguf_lora import export_lora_gguf

    return export_lora_gguf(model, base, out, alpha=alpha)
