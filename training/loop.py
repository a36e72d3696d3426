"""The resumable training loop shared by every experiment, on the one runner.

The experiment supplies one function that performs optimiser step ``k`` and returns its
:class:`~training.store.StepRow`, and one that writes a checkpoint.  Each optimiser step
is a unit of :func:`common.work.run_units`, computed in this process (a step needs the
weights the step before it left, so a run's steps never spread over workers); the sink
records each step as it is done, checkpoints every ``every`` steps and at the end, and
reports progress; the runner stops cleanly between steps when asked (the checkpoint then
covers every recorded step).  A step that raises stops the run with its own error (the
steps after it would start from weights it never made).  After kill -9 a rerun resumes
from the last checkpoint: the caller restores it, drops the later step rows
(:meth:`TrainingStore.forget_after`) and calls the loop with ``start`` = the
checkpoint's step.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from common.errors import ConfigError
from common.work import Failure, InProcess, Unit, run_units
from training.store import StepRow

__all__ = ["LoopResult", "run_loop"]


@dataclass(frozen=True)
class LoopResult:
    last_step: int
    stopped: bool


class _Steps:
    """The job (in process only) whose units are optimiser steps; keeps a step's own error."""

    key = "training steps"

    def __init__(self, step: Callable[[int], StepRow]) -> None:
        self.step, self.error = step, None

    def open(self, here: Any = None) -> "_Steps":
        return self

    def compute_unit(self, k: int, tick: Callable[[], None]) -> StepRow:
        try:
            return self.step(k)
        except Exception as exc:
            self.error = exc
            raise


class _StepSink:
    """Records each step, checkpoints every ``every`` steps and at the last, reports progress."""

    def __init__(self, job: _Steps, total: int, start: int, record: Callable[[StepRow], None],
                 checkpoint: Callable[[int], None], every: int,
                 progress: Callable[[int, int, StepRow | None], None] | None) -> None:
        self.job, self.total, self.done, self.record = job, total, start, record
        self.checkpoint, self.every, self.progress = checkpoint, every, progress

    def save(self, unit: Unit, row: StepRow) -> None:
        k = int(unit.payload)
        self.record(row)
        self.done = k
        if k % self.every == 0 or k == self.total:
            self.checkpoint(k)
        if self.progress is not None:
            self.progress(k, self.total, row)

    def fail(self, unit: Unit, failure: Failure) -> None:
        raise self.job.error if self.job.error is not None else RuntimeError(failure.message)


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
    if progress is not None and start > 0:
        progress(start, total, None)
    if start == total:
        return LoopResult(start, False)
    job = _Steps(step)
    sink = _StepSink(job, total, start, record, checkpoint, every, progress)
    units = [Unit(f"step {k}", f"step {k}", k) for k in range(start + 1, total + 1)]
    summary = run_units(sink, units, job, run_id="training", executor=InProcess(), cancel=should_stop)
    if summary.complete:
        return LoopResult(total, False)
    if sink.done > start:  # stopped between steps: the checkpoint covers every recorded step
        sink.checkpoint(sink.done)
    return LoopResult(sink.done, True)
