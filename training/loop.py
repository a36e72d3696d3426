"""The resumable training loop shared by every experiment.

The experiment supplies one function that performs optimiser step ``k`` and returns its
:class:`~training.store.StepRow`, and one that writes a checkpoint.  The loop records
each step as it is done, checkpoints every ``every`` steps and at the end, reports
progress, and stops cleanly between steps when asked (the checkpoint then covers every
recorded step).  After kill -9 a rerun resumes from the last checkpoint: the caller
restores it, drops the later step rows (:meth:`TrainingStore.forget_after`) and calls
the loop with ``start`` = the checkpoint's step.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from common.errors import ConfigError
from training.store import StepRow

__all__ = ["LoopResult", "run_loop"]


@dataclass(frozen=True)
class LoopResult:
    last_step: int
    stopped: bool


def run_loop(*, start: int, total: int, step: Callable[[int], StepRow], record: Callable[[StepRow], None],
             checkpoint: Callable[[int], None], every: int,
             progress: Callable[[int, int, StepRow | None], None] | None = None,
             should_stop: Callable[[], bool] | None = None) -> LoopResult:
    """Steps ``start + 1`` .. ``total``; returns the last step done and whether it stopped early.

    ``progress(done, total, row)`` after each step, and once with no row before the first
    step of a resumed run (so a progress bar starts at the steps already done)."""
    if start < 0:
        raise ValueError(f"cannot resume at step {start}")
    if start > total:
        raise ConfigError("steps", f"the run has already done {start} steps; ask for at least {start} "
                          "(more steps extend it, the same number ends it with what it has)")
    done = start
    if progress is not None and start > 0:
        progress(start, total, None)
    for k in range(start + 1, total + 1):
        if should_stop is not None and should_stop():
            if done > start:
                checkpoint(done)
            return LoopResult(done, True)
        row = step(k)
        record(row)
        done = k
        if k % every == 0 or k == total:
            checkpoint(k)
        if progress is not None:
            progress(k, total, row)
    return LoopResult(done, False)
