"""The ``train`` command of ``python -m dcem_clinical``: a DDXPlus-8 diagnostician with GRPO.

Needs the training extra (``make train`` installs requirements-train.txt); without it the
command says so in one line (status 2).  The same command resumes a run after an
interruption or kill -9 from its last checkpoint.
"""
from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

from typing import TYPE_CHECKING

from dcem.cli import float_in, int_in
from dcem.errors import DcemError

if TYPE_CHECKING:
    from training.run import RunResult

__all__ = ["add_train_command", "TRAINING_LIBRARIES", "print_result", "missing_training_libraries"]

TRAINING_LIBRARIES = ("torch", "transformers", "peft", "gguf")


def missing_training_libraries() -> list[str]:
    return [name for name in TRAINING_LIBRARIES if importlib.util.find_spec(name) is None]


def _settings(args: argparse.Namespace) -> object:
    from training.config import GrpoSettings, LoraSettings, RewardWeights, TrainSettings

    return TrainSettings(method="grpo", steps=args.steps, batch_size=args.batch_size, learning_rate=args.lr,
                         updates_per_batch=args.updates_per_batch, checkpoint_every=args.checkpoint_every,
                         seed=args.seed, threads=args.threads,
                         lora=LoraSettings(r=args.lora_r, alpha=args.lora_alpha),
                         grpo=GrpoSettings(eps=args.eps, beta=args.beta, group_size=args.group_size),
                         rewards=RewardWeights(accuracy=args.accuracy_weight))


def _cmd_train(args: argparse.Namespace) -> int:
    missing = missing_training_libraries()
    if missing:
        raise DcemError(f"training needs {', '.join(missing)}: run `make train` (installs requirements-train.txt)")
    from tqdm import tqdm

    from dcem_clinical.train_run import DiagnosticianRun, train_diagnostician
    from training.store import StepRow, TrainingStore

    run = DiagnosticianRun(out=Path(args.out), settings=_settings(args),  # type: ignore[arg-type]
                           base_model=args.model, heldout=args.heldout)
    bar = tqdm(total=run.settings.steps, unit="step", disable=args.quiet, desc="training")

    def progress(done: int, total: int, row: StepRow) -> None:
        bar.total, bar.n = total, done
        bar.set_postfix_str(f"reward {row.reward:+.2f} acc {row.accuracy:.2f} kl {row.kl:.3f}", refresh=False)
        bar.refresh()

    with TrainingStore(args.db) as store:
        summary = train_diagnostician(store, run, progress=progress)
    bar.close()
    print_result(summary, run.settings.steps, args.model)
    return 0


def print_result(summary: "RunResult", steps: int, model: str) -> None:
    """What a finished or stopped training command prints."""
    if summary.resumed_from:
        print(f"resumed from step {summary.resumed_from}")
    print(f"run {summary.run_id}: {summary.steps_done} of {steps} steps"
          + (" (stopped; run the same command to resume)" if summary.stopped else ""))
    for name, acc in summary.before.items():
        print(f"{name}: accuracy before training {acc:.3f}")
    for name, acc in summary.after.items():
        print(f"{name}: accuracy after training {acc:.3f}")
    if summary.adapter is not None:
        print(f"adapter: {summary.adapter} (model key {model}+lora:file:{summary.adapter})")


def add_train_command(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("train", help="train a DDXPlus-8 diagnostician (LoRA, GRPO) on the training split")
    p.add_argument("--model", default="smollm2-135m", help="base model key (a packaged GGUF or file:)")
    p.add_argument("--out", default="runs/train", help="folder of the run folders (checkpoints, adapter)")
    p.add_argument("--steps", type=int_in(1, 1_000_000), default=200)
    p.add_argument("--batch-size", type=int_in(1, 4096), default=8, help="training cases per step")
    p.add_argument("--lr", type=float_in(1e-8, 1.0), default=2e-4, help="learning rate (AdamW)")
    p.add_argument("--updates-per-batch", type=int_in(1, 64), default=1)
    p.add_argument("--group-size", type=int_in(0, 64), default=0,
                   help="answers sampled per case (G); 0 = the exact expectation over the letters")
    p.add_argument("--eps", type=float_in(1e-6, 1.0), default=0.2, help="ratio clip range")
    p.add_argument("--beta", type=float_in(0.0, 100.0), default=0.04, help="weight of the KL to the base")
    p.add_argument("--accuracy-weight", type=float_in(0.0, 100.0), default=1.0)
    p.add_argument("--lora-r", type=int_in(1, 512), default=16)
    p.add_argument("--lora-alpha", type=float_in(1e-6, 4096.0), default=32.0)
    p.add_argument("--checkpoint-every", type=int_in(1, 1_000_000), default=10)
    p.add_argument("--heldout", type=int_in(0, 10_000), default=200, help="held-out cases measured before and after")
    p.add_argument("--seed", type=int_in(0, 2**32 - 1), default=0)
    p.add_argument("--threads", type=int_in(1, 1024), default=None, help="torch CPU threads (default: all cores)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--db", default=None, help="DuckDB file (default: $DCEM_DB or data/dcem.duckdb)")
    p.set_defaults(func=_cmd_train)
