"""One experiment model: a run is a list of units, and one runner plays the units not yet stored.

Every experiment of the project runs this way (the synthetic and clinical D-CEM grids, a
Small Agent Group run, every part of a group evaluation):

* a **spec** (a frozen, validated dataclass) hashes to the run id, so the same command
  finds the same run; a run stored under an id resumes only with the settings it was
  stored with, else it is refused naming the first field that differs (:mod:`common.resume`);
* the run is a tuple of :class:`Unit` (a D-CEM (scenario, seed) cell, a SAG item, ...),
  each with a key unique in the run and a picklable payload;
* a :class:`Job` is the picklable recipe of the computation; ``job.open()`` builds, in
  the process that computes (this one, or a Ray worker), the :class:`Worker` that holds
  what is expensive to build (loaded models, retrieval indexes) and computes one unit;
* :func:`run_units` skips the units the store already has, hands the others to an
  executor (:class:`InProcess` by default, :class:`common.ray_work.RayExecutor` for
  ``--executor ray``), and writes each result through a :class:`Sink`, one transaction
  per unit, in this process only: DuckDB has one writer.

A unit whose computation raises is a failure, recorded with its message through
``sink.fail``, and the run goes on (a run stops early only after ``stop_after`` failures
in a row).  Progress is ``progress(done, total, label)`` in weighted units, called at the
start and after each unit (and on each ``tick`` a unit reports in process); ``cancel()``
is polled between units and stops the run cleanly.  A run killed at any moment keeps
every finished unit and no half of one, and the same command resumes it.

Given a ledger (:class:`common.ledger.Ledger`, with the run's ``kind`` and ``spec``),
:func:`run_units` also keeps the run's record itself: start (or refused resume), skip
the ledger's done units, each unit's rows and ledger row in one transaction (the sink is
then a :class:`LedgerSink`), failures with their messages, finished or failed at the end.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Mapping, NamedTuple, Protocol, Sequence, runtime_checkable

from common.errors import ConfigError, ProjectError

__all__ = ["Spec", "Unit", "Failure", "UnitFailure", "WorkSummary", "Job", "Worker", "Sink", "Executor", "InProcess", "run_units",
           "Progress", "Cancel", "failure_of", "check_units", "LedgerSink", "RunLedger"]

log = logging.getLogger(__name__)

Progress = Callable[[int, int, str], None]  # (done, total, label)
Cancel = Callable[[], bool]
Tick = Callable[[], None]


@runtime_checkable
class Spec(Protocol):
    """What a run is: a frozen dataclass, checked when made (a bad field is a
    :class:`common.errors.ConfigError` naming it), whose ``to_dict`` is stored with the run
    and whose ``run_id`` hashes it, so the same spec names the same run (and resumes it);
    other settings under a stored id are refused (:func:`common.resume.check_resume`)."""

    def to_dict(self) -> dict[str, Any]: ...

    def run_id(self) -> str: ...


@dataclass(frozen=True)
class Unit:
    """One piece of a run: ``key`` is unique in the run, ``payload`` is what the worker
    needs (picklable), ``weight`` the progress units it counts for (its turns, say)."""

    key: str
    label: str
    payload: Any
    weight: int = 1


@dataclass(frozen=True)
class Failure:
    """A unit that raised: its message, and ``detail`` (picklable) when the error carries one."""

    message: str
    detail: Any = None


class UnitFailure(NamedTuple):
    """A unit that failed this time: its key and message."""

    key: str
    message: str


@dataclass(frozen=True)
class WorkSummary:
    """What one run of a command or page did: the one summary of every kind of run.

    computed : units stored now; skipped : units the store had before; total : units of
    the run; complete : every unit is stored; failed : the units that failed this time,
    each a record with ``key`` and ``message`` (:class:`UnitFailure`, or the sink's own
    record such as a SAG item's :class:`sag.group.failures.FailedItem`); stopped : why the run
    stopped early (too many failures in a row), when it did; model_calls / cached_calls :
    turns that reached a model / were answered from the call log (runs of models).
    """

    run_id: str
    resumed: bool
    computed: int
    skipped: int
    total: int
    complete: bool
    failed: tuple[Any, ...] = ()
    stopped: str | None = None
    seconds: float = 0.0
    model_calls: int = 0
    cached_calls: int = 0


class Worker(Protocol):
    def compute_unit(self, payload: Any, tick: Tick) -> Any: ...


class Job(Protocol):
    """The picklable recipe of a run's computation.

    ``open(here)`` builds the worker where it runs: ``here`` is the driver's store when the
    worker runs in the driver's process (it may log model calls there directly), None in a
    remote worker.  ``key`` names the job: a worker process keeps one opened job per key.
    """

    @property
    def key(self) -> str: ...

    def open(self, here: Any = None) -> Worker: ...


class Sink(Protocol):
    """Where results go; every call is one transaction of the driver's store."""

    def save(self, unit: Unit, result: Any) -> None: ...

    def fail(self, unit: Unit, failure: Failure) -> None: ...


class LedgerSink(Protocol):
    """Where the results of a run kept in a ledger go: ``write`` puts a unit's rows on
    ``cur``, inside the transaction that also marks the unit done in the ledger."""

    def write(self, cur: Any, unit: Unit, result: Any) -> None: ...

    def fail(self, unit: Unit, failure: Failure) -> None: ...


class RunLedger(Protocol):
    """What :func:`run_units` asks of a ledger (:class:`common.ledger.Ledger`)."""

    def start(self, run_id: str, kind: str, spec: Mapping[str, Any]) -> bool: ...

    def done_keys(self, run_id: str) -> set[str]: ...

    def save_unit(self, run_id: str, key: str, write: Callable[[Any], None]) -> None: ...

    def unit_failed(self, run_id: str, key: str, message: str) -> None: ...

    def finish(self, run_id: str) -> None: ...

    def mark_failed(self, run_id: str) -> None: ...


class Executor(Protocol):
    """Computes units and yields each (unit, result or :class:`Failure`) as it finishes."""

    def run(self, job: Job, units: Sequence[Unit], tick: Callable[[Unit], None],
            cancel: Cancel | None) -> Iterator[tuple[Unit, Any]]: ...


def failure_of(exc: BaseException) -> Failure:
    """The failure a raising unit is recorded with: the message, and the error's
    ``unit_detail`` (a record the sink understands) when it has one."""
    message = str(exc).strip()
    if not isinstance(exc, ProjectError):  # the project's errors already say what is wrong where
        message = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    return Failure(message, getattr(exc, "unit_detail", None))


class InProcess:
    """Computes the units one after another in this process.  The worker is ``worker`` (opened
    already, when the caller built its models before storing anything), else ``opener(job)``
    on the first unit (the kind opens its job where it runs: on its own store, say), else
    ``job.open()``.  The runner never holds a store: only the kind hands its store to its job."""

    def __init__(self, *, worker: Worker | None = None, opener: Callable[[Job], Worker] | None = None) -> None:
        self.worker, self.opener = worker, opener

    def run(self, job: Job, units: Sequence[Unit], tick: Callable[[Unit], None],
            cancel: Cancel | None) -> Iterator[tuple[Unit, Any]]:
        for unit in units:
            if cancel is not None and cancel():
                return
            if self.worker is None:
                # an error here (a model that will not load) stops the run
                self.worker = self.opener(job) if self.opener is not None else job.open()
            try:
                result: Any = self.worker.compute_unit(unit.payload, lambda unit=unit: tick(unit))
            except Exception as exc:  # noqa: BLE001 - a unit that raises is recorded, not fatal
                log.info("unit %s failed: %s", unit.key, exc)
                result = failure_of(exc)
            yield unit, result


def check_units(units: Sequence[Unit]) -> None:
    if not units:
        raise ConfigError("units", "a run needs at least one unit")
    keys = [u.key for u in units]
    if len(set(keys)) != len(keys):
        twice = next(k for k in keys if keys.count(k) > 1)
        raise ConfigError("units", f"the unit {twice!r} is listed twice")
    bad = [u for u in units if isinstance(u.weight, bool) or not isinstance(u.weight, int) or u.weight < 1]
    if bad:
        raise ConfigError("units", f"unit {bad[0].key!r} has weight {bad[0].weight!r}; weights are whole numbers >= 1")


class _Counter:
    """Weighted progress: whole units done, plus the ticks of units under way."""

    def __init__(self, units: Sequence[Unit], done: set[str], progress: Progress | None) -> None:
        self.progress, self.total = progress, sum(u.weight for u in units)
        self.finished = sum(u.weight for u in units if u.key in done)
        self.partial: dict[str, int] = {}

    def report(self, label: str) -> None:
        if self.progress is not None:
            now = self.finished + sum(self.partial.values())
            self.progress(min(now, self.total), self.total, label)

    def tick(self, unit: Unit) -> None:
        self.partial[unit.key] = min(self.partial.get(unit.key, 0) + 1, unit.weight)
        self.report(unit.label)

    def unit_done(self, unit: Unit) -> None:
        self.partial.pop(unit.key, None)
        self.finished += unit.weight
        self.report(unit.label)


def run_units(sink: Sink | LedgerSink, units: Sequence[Unit], job: Job, *, run_id: str, done: Iterable[str] = (),
              resumed: bool = False, executor: Executor | None = None, progress: Progress | None = None,
              cancel: Cancel | None = None, stop_after: int | None = None, ledger: RunLedger | None = None,
              kind: str | None = None, spec: Spec | Mapping[str, Any] | None = None) -> WorkSummary:
    """Compute and store every unit whose key is not in ``done``; see the module docstring.

    With a ``ledger`` (:class:`common.ledger.Ledger`), ``kind`` and ``spec`` the run keeps
    its own record: the ledger starts the run (refusing a stored run of another kind or
    spec before anything is written; ``resumed`` is then the ledger's answer), its done
    units are skipped as well as ``done``, each unit's rows (``sink.write(cur, unit,
    result)``, a :class:`LedgerSink`) and its ledger row commit in one transaction, each
    failure is recorded with its message, and the run is marked finished when every unit
    is stored, failed when a unit failed."""
    start = time.perf_counter()
    check_units(units)
    if ledger is None:
        save, fail = sink.save, sink.fail  # type: ignore[union-attr]
    else:
        resumed, done, save, fail = _with_ledger(ledger, sink, units, run_id=run_id, done=done, kind=kind, spec=spec)
    done = {k for k in done if any(u.key == k for u in units)}
    todo = [u for u in units if u.key not in done]
    counter = _Counter(units, done, progress)
    counter.report("resuming" if done else "starting")
    computed, in_a_row, stopped = 0, 0, None
    failed: list[UnitFailure] = []
    results = (executor or InProcess()).run(job, todo, counter.tick, cancel)
    try:
        for unit, result in results:
            if isinstance(result, Failure):
                fail(unit, result)
                failed.append(UnitFailure(unit.key, result.message))
                in_a_row += 1
                left = len(todo) - computed - len(failed)
                if stop_after is not None and in_a_row >= stop_after and left > 0:
                    stopped = f"stopped after {in_a_row} units in a row failed; {left} units not tried"
                    break
            else:
                save(unit, result)
                computed, in_a_row = computed + 1, 0
            counter.unit_done(unit)
    finally:
        close = getattr(results, "close", None)
        if close is not None:
            close()
    complete = computed == len(todo)
    if ledger is not None and complete:
        ledger.finish(run_id)
    elif ledger is not None and failed:
        ledger.mark_failed(run_id)
    if not complete:
        log.info("run %s stopped with %d of %d units stored", run_id, len(done) + computed, len(units))
    return WorkSummary(run_id, resumed, computed, len(done), len(units), complete, tuple(failed), stopped,
                       time.perf_counter() - start)


def _with_ledger(ledger: RunLedger, sink: Sink | LedgerSink, units: Sequence[Unit], *, run_id: str,
                 done: Iterable[str], kind: str | None,
                 spec: Spec | Mapping[str, Any] | None) -> tuple[bool, set[str], Callable[[Unit, Any], None],
                                                               Callable[[Unit, Failure], None]]:
    """The run started in ``ledger``: (resumed, done keys, save, fail) for :func:`run_units`."""
    if not kind or spec is None:
        raise ConfigError("ledger", "a run kept in a ledger needs its kind and spec")
    if not hasattr(sink, "write"):
        raise ConfigError("ledger", f"{type(sink).__name__} has no write(cur, unit, result): a run kept in a "
                                    "ledger writes each unit in the ledger's transaction")
    given = spec.to_dict() if isinstance(spec, Spec) else dict(spec)
    resumed = ledger.start(run_id, kind, given)
    write = sink.write  # type: ignore[union-attr]

    def save(unit: Unit, result: Any) -> None:
        ledger.save_unit(run_id, unit.key, lambda cur: write(cur, unit, result))

    def fail(unit: Unit, failure: Failure) -> None:
        sink.fail(unit, failure)
        ledger.unit_failed(run_id, unit.key, failure.message)

    return resumed, set(done) | ledger.done_keys(run_id), save, fail
