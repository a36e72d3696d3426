"""What every ``train`` command shares: its flags, the settings they make, the check that
the training extra is installed, the progress bar and the lines printed at the end."""
from __future__ import annotations

import argparse
import importlib.util
import sys
from typing import Any, Callable

from common.cli_args import float_in, int_in, writable_folder
from common.errors import ProjectError
from training.config import PROMPT_TOKENS, GrpoSettings, LoraSettings, RewardWeights, TrainSettings
from training.run import RunResult
from training.store import StepRow

__all__ = ["add_training_flags", "settings_from", "require_training_libraries", "step_bar", "measure_note", "print_result",
           "TRAINING_LIBRARIES"]

TRAINING_LIBRARIES = ("torch", "transformers", "peft", "gguf")


def require_training_libraries() -> None:
    """A one-line error naming the missing libraries and how to install them."""
    missing = [name for name in TRAINING_LIBRARIES if importlib.util.find_spec(name) is None]
    if missing:
        raise ProjectError(f"training needs {', '.join(missing)}: run `make train` (installs requirements-train.txt)")


def add_training_flags(p: argparse.ArgumentParser, *, steps: int = 200) -> None:
    p.add_argument("--model", default="smollm2-135m", help="base model key (a packaged GGUF or file:)")
    p.add_argument("--out", default="runs/train", type=writable_folder,
                   help="folder of the run folders (checkpoints, adapter); checked before anything loads")
    p.add_argument("--steps", type=int_in(1, 1_000_000), default=steps)
    p.add_argument("--batch-size", type=int_in(1, 4096), default=8, help="training items per step")
    p.add_argument("--lr", type=float_in(1e-8, 1.0), default=2e-4, help="learning rate (AdamW)")
    p.add_argument("--updates-per-batch", type=int_in(1, 64), default=1)
    p.add_argument("--group-size", type=int_in(0, 64), default=0,
                   help="answers sampled per item (G of Eq. 4); 0 = the exact expectation over the options")
    p.add_argument("--eps", type=float_in(1e-6, 1.0), default=0.2, help="ratio clip range (Eq. 3)")
    p.add_argument("--beta", type=float_in(0.0, 100.0), default=0.04, help="weight of the KL to the base (Eq. 2)")
    p.add_argument("--supervised", type=float_in(0.0, 100.0), default=0.0,
                   help="weight of the right option's log-likelihood added to the GRPO loss (0: plain GRPO)")
    p.add_argument("--accuracy-weight", type=float_in(0.0, 100.0), default=1.0)
    p.add_argument("--safety-weight", type=float_in(0.0, 100.0), default=2.5,
                   help="weight of the refusal (+1) / compliance (-5) reward on harmful requests")
    p.add_argument("--fairness-weight", type=float_in(0.0, 100.0), default=1.5,
                   help="penalty when an item and its demographic twin get different answers")
    p.add_argument("--lora-r", type=int_in(1, 512), default=16)
    p.add_argument("--lora-alpha", type=float_in(1e-6, 4096.0), default=32.0)
    p.add_argument("--lora-layers", type=int_in(0, 4096), default=0,
                   help="adapt only this many decoder layers from the top (0 = every layer); "
                        "the layers below are computed once per prompt, which makes steps much faster")
    p.add_argument("--max-prompt-tokens", type=int_in(*PROMPT_TOKENS), default=1024,
                   help="the longest training prompt, in tokens (default 1024)")
    p.add_argument("--checkpoint-every", type=int_in(1, 1_000_000), default=10)
    p.add_argument("--heldout", type=int_in(0, 10_000), default=200, help="held-out items measured before and after")
    p.add_argument("--seed", type=int_in(0, 2**32 - 1), default=0)
    p.add_argument("--threads", type=int_in(1, 1024), default=None, help="torch CPU threads (default: all cores)")
    p.add_argument("--device", default="auto",
                   help="where torch trains: auto (a CUDA GPU when torch sees one, else the CPU), cpu, cuda or cuda:N")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--db", default=None, help="DuckDB file (default: $DCEM_DB or data/dcem.duckdb)")


def settings_from(args: argparse.Namespace, method: str = "grpo") -> TrainSettings:
    return TrainSettings(method=method, steps=args.steps, batch_size=args.batch_size, learning_rate=args.lr,
                         updates_per_batch=args.updates_per_batch, checkpoint_every=args.checkpoint_every,
                         seed=args.seed, threads=args.threads, device=args.device, max_prompt_tokens=args.max_prompt_tokens,
                         lora=LoraSettings(r=args.lora_r, alpha=args.lora_alpha, layers=args.lora_layers),
                         grpo=GrpoSettings(eps=args.eps, beta=args.beta, group_size=args.group_size),
                         rewards=RewardWeights(accuracy=args.accuracy_weight, safety=args.safety_weight,
                                                 fairness=args.fairness_weight),
                         sampling=getattr(args, "sampling", "uniform"),
                         supervised=getattr(args, "supervised", 0.0))


def step_bar(total: int, quiet: bool) -> tuple[Any, Callable[[int, int, StepRow | None], None]]:
    from tqdm import tqdm

    from training.base_model import quiet_training_warnings

    quiet_training_warnings()
    bar = tqdm(total=total, unit="step", disable=quiet, desc="training", file=sys.stderr)

    def progress(done: int, count: int, row: StepRow | None) -> None:
        bar.total, bar.n = count, done
        if row is None:  # a resumed run: the bar starts at the steps already done, timed from here
            bar.initial = bar.last_print_n = done
        else:
            bar.set_postfix_str(f"reward {row.reward:+.2f} batch acc {row.accuracy:.2f} kl {row.kl:.3f}",
                                refresh=False)
        bar.refresh()

    return bar, progress


def measure_note(quiet: bool) -> Callable[[str, int, bool], None]:
    """A line on stderr as each held-out set starts being measured (minutes on a CPU)."""
    from tqdm import tqdm

    def note(name: str, items: int, before: bool) -> None:
        if not quiet:
            tqdm.write(f"measuring {name}: {items} held-out items, {'before' if before else 'after'} training",
                       file=sys.stderr)

    return note


def diagnosis_names(result: RunResult) -> dict[str, str] | None:
    """DDXPlus-8's diagnosis for each letter when every held-out set offers its eight
    letters (a diagnostician's or a view member's), else None (questions' letters)."""
    from training.class_recall import letter_names

    scores = list(result.after.values()) or list(result.before.values())
    if not scores or any(s.n_options != 8 for s in scores):
        return None
    return letter_names("ddxplus8")


def print_result(result: RunResult, steps: int, model: str) -> None:
    """What a finished or stopped training command prints."""
    if result.resumed_from:
        print(f"resumed from step {result.resumed_from}")
    print(f"run {result.run_id}: {result.steps_done} of {steps} steps"
          + (" (stopped; run the same command to resume)" if result.stopped else ""))
    names = diagnosis_names(result)
    for name, score in result.before.items():
        print(f"{name}: accuracy before training {score.describe()}")
    for name, score in result.after.items():
        print(f"{name}: accuracy after training {score.describe()}")
        for line in score.recall_lines(names):
            print(f"{name}: {line}")
    if result.adapter is not None:
        print(f"adapter: {result.adapter} (model key {model}+lora:file:{result.adapter})")
