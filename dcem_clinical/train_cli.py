"""The ``train`` command of ``python -m dcem_clinical``: a DDXPlus-8 diagnostician with GRPO.

Needs the training extra (``make train`` installs requirements-train.txt); without it the
command says so in one line (status 2).  The same command resumes a run after an
interruption or kill -9 from its last checkpoint.
"""
from __future__ import annotations

import argparse
from pathlib import Path


__all__ = ["add_train_command"]


def _cmd_train(args: argparse.Namespace) -> int:
    from training.cli import require_training_libraries

    require_training_libraries()
    from dcem_clinical.train_run import DiagnosticianRun, train_diagnostician
    from training.cli import measure_note, print_result, settings_from, step_bar
    from training.store import TrainingRecorder

    run = DiagnosticianRun(out=Path(args.out), settings=settings_from(args), base_model=args.model,
                           heldout=args.heldout)
    bar, progress = step_bar(run.settings.steps, args.quiet)
    try:  # a case longer than --max-prompt-tokens is a ConfigError, found before anything is recorded
        result = train_diagnostician(TrainingRecorder(args.db), run, progress=progress,
                                     on_measure=measure_note(args.quiet))
    finally:
        bar.close()
    print_result(result, run.settings.steps, args.model)
    return 0


def add_train_command(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    from training.cli import add_training_flags

    p = sub.add_parser("train", help="train a DDXPlus-8 diagnostician (LoRA, GRPO) on the training split")
    p.add_argument("--sampling", choices=("uniform", "balanced"), default="uniform",
                   help="how a step draws its batch: uniform over the cases, or balanced (every diagnosis "
                        "equally often, so rare ones such as Myocarditis are seen as often as common ones)")
    add_training_flags(p)
    p.set_defaults(func=_cmd_train)
