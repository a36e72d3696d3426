"""``python -m dcem_clinical train``: a resumable GRPO run for a DDXPlus-8 diagnostician.

The items are the training split of DDXPlus-8 (:mod:`clinical.training_split`), each
case as a panel member's round-1 prompt (:mod:`dcem_clinical.diagnostician`); the
held-out measurement uses the split's HELD-OUT cases.  Everything else (record,
checkpoints, resume after kill -9, export of the adapter as a GGUF LoRA file usable as
``<model>+lora:file:<path>``) is :func:`training.run.run_letter_training`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from clinical.datasets import ClinicalCase, load_dataset
from common.errors import ConfigError
from common.fields import Whole, check
from training.config import TrainSettings
from training.run import RunResult
from training.store import StepRow, TrainingRecorder, TrainingStore

__all__ = ["DiagnosticianRun", "train_diagnostician", "training_cases", "KIND"]

KIND = "diagnostician"


@dataclass(frozen=True)
class DiagnosticianRun:
    """What to train: dataset, base model key, settings, held-out cases, runs folder."""

    out: Path
    settings: TrainSettings = field(default_factory=TrainSettings)
    dataset: str = "ddxplus8"
    base_model: str = "smollm2-135m"
    heldout: int = 200

    def __post_init__(self) -> None:
        if self.dataset != "ddxplus8":
            raise ConfigError("dataset", f"diagnosticians are trained on ddxplus8 only, got {self.dataset!r}")
        check("heldout", self.heldout, Whole(0, 10_000, msg="must be a whole number from 0 to 10,000, got {value!r}"))
        if self.settings.method != "grpo":
            raise ConfigError("method", "a single diagnostician is trained with grpo (ctde needs a panel)")


def training_cases(dataset: str, heldout: int) -> tuple[list[ClinicalCase], list[ClinicalCase], str]:
    """(TRAIN cases, the first ``heldout`` HELD-OUT cases, the split's hash)."""
    from clinical.training_split import training_split

    split = training_split(dataset)
    by_id = {c.source_id: c for c in load_dataset(dataset).cases}
    return ([by_id[i] for i in split.train_ids], [by_id[i] for i in split.heldout_ids][:heldout],
            split.split_hash)


def train_diagnostician(store: TrainingStore | TrainingRecorder, run: DiagnosticianRun, *,
                        progress: Callable[[int, int, StepRow | None], None] | None = None,
                        should_stop: Callable[[], bool] | None = None,
                        on_measure: Callable[[str, int, bool], None] | None = None) -> RunResult:
    from dcem_clinical.diagnostician import build_items, data_hash
    from runtime.factory import load_gguf
    from runtime.llama_backend import file_sha256
    from runtime.registry import resolve
    from training.run import LetterRun, run_letter_training

    s = run.settings
    train, held, split_hash = training_cases(run.dataset, run.heldout)
    labels = load_dataset(run.dataset).labels
    path = resolve(run.base_model)
    backend = load_gguf(path, n_ctx=max(2048, s.max_prompt_tokens + 8), n_threads=1, kv_cache_mb=0)
    items = build_items(backend, labels, train, max_tokens=s.max_prompt_tokens, rewards=s.rewards)
    heldout = {"heldout": build_items(backend, labels, held, max_tokens=s.max_prompt_tokens, rewards=s.rewards)
               } if held else {}
    del backend
    letter_run = LetterRun(KIND, run.base_model, path, file_sha256(path), s, items,
                           f"{run.dataset}:train:{split_hash[:12]}", data_hash(train), heldout, run.out)
    return run_letter_training(store, letter_run, progress=progress, should_stop=should_stop, on_measure=on_measure)
