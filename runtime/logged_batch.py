"""Many logged model calls at once: each distinct call made once and logged once.

:func:`run_logged` is the pattern for a caller that sends several calls through the
call log (:class:`runtime.call_log.CallLog`) concurrently, e.g. a panel's turns of one
round on a :class:`runtime.http_fleet.FleetBackend`:

1. every key is looked up first; a logged reply answers its call (no model call);
2. the distinct keys still missing are called once each through ``mapper`` (for example
   :meth:`FleetBackend.map <runtime.http_fleet.FleetBackend.map>`, up to its concurrency
   at once); two calls with the same key in one batch make one model call (one after
   another, the second would be answered from the log when the first was logged as
   usable);
3. the outcomes are logged in the caller's thread, in the order of ``calls``, one row per
   model call whether it succeeded (after any retries inside the backend) or failed
   (unless its ``record`` returns None: the clinical cue calls, never logged when they
   fail, keep it so).

No row is written from a worker thread, so concurrent completions cannot write twice,
and a call that raised is still logged (by its ``record`` function) before the batch
returns.

:func:`run_logged_in_turn` gives what the same calls made one after another would give
when keys repeat: a repeated key is answered by the log only if the call before it was
logged as usable (a failed or unusable reply is asked again, as the log's lookup skips
it).  It runs the first call of every key as one batch, then the second ones, and so on
(one batch when no key repeats).
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Generic, Sequence, TypeVar

from runtime.call_log import CachedCall, CallContext, CallLog, CallRecord

__all__ = ["LoggedCall", "LoggedOutcome", "run_logged", "run_logged_in_turn"]

T = TypeVar("T")


@dataclass(frozen=True)
class LoggedCall(Generic[T]):
    """One call: its cache key, the model call, and the row for its outcome
    (``record(value, None)`` on success, ``record(None, exc)`` when it raised; None
    logs nothing)."""

    key: str
    call: Callable[[], T]
    record: Callable[[T | None, BaseException | None], CallRecord | None]
    context: CallContext = field(default_factory=CallContext)


@dataclass(frozen=True)
class LoggedOutcome(Generic[T]):
    """What a call gave: ``cached`` (a logged reply), else ``value`` or ``error``;
    ``shared`` when another call of the batch with the same key made the model call."""

    value: T | None = None
    error: BaseException | None = None
    cached: CachedCall | None = None
    shared: bool = False


def _attempt(call: Callable[[], T]) -> tuple[T | None, BaseException | None]:
    try:
        return call(), None
    except Exception as exc:  # noqa: BLE001 -- a failed call is an outcome, logged like a reply
        return None, exc


def _serial(fn: Callable[[LoggedCall[T]], tuple[T | None, BaseException | None]],
            items: Sequence[LoggedCall[T]]) -> list[tuple[T | None, BaseException | None]]:
    return [fn(x) for x in items]


def run_logged(log: CallLog, calls: Sequence[LoggedCall[T]],
               mapper: Callable[..., list[tuple[T | None, BaseException | None]]] = _serial
               ) -> list[LoggedOutcome[T]]:
    """Outcomes of ``calls`` in order (see the module docstring); ``mapper(fn, items)``
    must return ``[fn(x) for x in items]``, in any threads."""
    cached = {c.key: log.lookup(c.key) for c in calls}
    first: dict[str, int] = {}
    for i, c in enumerate(calls):
        if cached[c.key] is None:
            first.setdefault(c.key, i)
    todo = [calls[i] for i in first.values()]
    done = dict(zip(first, mapper(lambda c: _attempt(c.call), todo)))
    for key, i in first.items():  # the caller's thread, in order: one row per model call
        value, error = done[key]
        row = calls[i].record(value, error)
        if row is not None:
            log.record(row, calls[i].context)
    out: list[LoggedOutcome[T]] = []
    for i, c in enumerate(calls):
        if cached[c.key] is not None:
            out.append(LoggedOutcome(cached=cached[c.key]))
        else:
            value, error = done[c.key]
            out.append(LoggedOutcome(value=value, error=error, shared=first[c.key] != i))
    return out


def run_logged_in_turn(log: CallLog, calls: Sequence[LoggedCall[T]],
                       mapper: Callable[..., list[tuple[T | None, BaseException | None]]] = _serial
                       ) -> list[LoggedOutcome[T]]:
    """:func:`run_logged` with repeated keys answered as one call after another would
    answer them (see the module docstring); no outcome is ``shared``."""
    nth: Counter[str] = Counter()
    waves: list[list[int]] = []
    for i, c in enumerate(calls):
        if nth[c.key] == len(waves):
            waves.append([])
        waves[nth[c.key]].append(i)
        nth[c.key] += 1
    out: list[LoggedOutcome[T] | None] = [None] * len(calls)
    for wave in waves:
        for i, outcome in zip(wave, run_logged(log, [calls[i] for i in wave], mapper)):
            out[i] = outcome
    return [o for o in out if o is not None]
