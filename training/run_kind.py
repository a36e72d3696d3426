"""The ``training`` kind of run (:mod:`common.run_kinds`): a LoRA adapter (or a group's
adapters) trained on a base model (``python -m dcem_clinical train``, ``python -m sag train``,
``python -m sag train-views``), its steps and held-out measurements."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from common.run_kinds import RunKind, register
from training.export import FORMAT
from training.merge_checks import training_store_checks
from training.store import TrainingStore

__all__ = ["TRAINING", "TRAINING_TABLES"]

TRAINING_TABLES = ("train_runs", "train_steps", "train_evals", "train_answers")


def _load(folder: Path, raw: Path, progress: Any) -> None:
    """A training export (``training-run-export/1``) into the new store ``raw``."""
    from training.import_export import import_training_export

    with TrainingStore(raw) as store:
        import_training_export(store, folder)


def _describe(spec: Mapping[str, Any]) -> str:
    return f"{spec.get('kind', '?')} by {spec.get('method', '?')} on {spec.get('base_model', '?')}"


def _report(path: Path, run_id: str) -> str:
    from training.report import export_markdown
    from training.stored_record import stored_export

    with TrainingStore(path, read_only=True) as store:
        return export_markdown(stored_export(store, run_id))


TRAINING = register(RunKind(
    "training", "a LoRA adapter, or a group's adapters, trained on a base model", "Models", TRAINING_TABLES,
    TrainingStore, training_store_checks, _report, describe=_describe, imports={FORMAT: _load}))
