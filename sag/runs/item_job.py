"""A SAG run on the one runner (:mod:`common.work`): an item is a unit, and so is the calibration.

The worker holds the group's turn runners and retrieval indexes, and a call log: the
driver's store when it runs in the driver's process, else an in-memory store loaded with
the calls the driver shipped (:mod:`runtime.call_shipping`); a remote worker returns each
result with the calls it made, and the driver appends them before it writes the item.
A worker process keeps its loaded models across jobs (the parts of an evaluation), keyed
by the group's model keys and batch width.

The D-CEM variant is calibrated first, as one unit of its own whose result (the fitted
panel) goes into the item job; every item then is one unit.  An item whose model call
failed (:class:`sag.group.failures.ItemFailed`) is a failed unit carrying its
:class:`~sag.group.failures.FailedItem`; any other error is a failed unit with its message.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

from clinical.questions import QuestionItem
from common.work import Failure, Unit
from runtime.call_log import CallLog
from runtime.call_shipping import NewCalls, append_calls, memory_log
from runtime.turns import TurnRunner
from sag.group.config import GroupConfig
from sag.debate.hybrid import Searcher
from sag.group.failures import FailedItem
from sag.debate.answer import Calibration, answer_item, calibrate
from sag.debate.results import ItemResult
from sag.store.tables import SagStore, write_item

__all__ = ["ItemJob", "ItemSink", "CALIBRATION_UNIT", "Built"]

CALIBRATION_UNIT = "calibration"

# Models and indexes a worker process has built, reused by the next job that asks for the
# same ones (one evaluation part after another on a Ray actor).
_BUILT: dict[Any, Any] = {}


@dataclass(frozen=True)
class Built:
    """Runners and retrievers given by the caller (in process: already loaded, or factories)."""

    runners: Any
    retrievers: Any


def _built(key: Any, make: Callable[[], Any]) -> Any:
    if key not in _BUILT:
        _BUILT[key] = make()
    return _BUILT[key]


@dataclass(frozen=True, eq=False)
class ItemJob:
    """One SAG run's computation.  cfg : the group as the run plays it; calibration_cfg : the
    group that calibrates (the D-CEM variant); runners / retrievers : what the caller gave
    (a mapping, a factory or None for the defaults); calls : logged calls shipped to a
    remote worker.  A unit's payload is ``("calibration", items)`` or ``("item", item,
    calibration)``."""

    run_id: str
    cfg: GroupConfig
    calibration_cfg: GroupConfig
    runners: Any = None
    retrievers: Any = None
    calls: Any = None

    @property
    def key(self) -> str:
        return self.run_id

    def open(self, here: SagStore | None = None) -> "ItemWorker":
        return ItemWorker(self, here)


def _runners(job: ItemJob, remote: bool) -> Mapping[str, TurnRunner]:
    from sag.runs.run import default_runners
    from sag.debate.runners import RunnerRecipe, batch_width

    if isinstance(job.runners, Mapping):
        return job.runners
    make = job.runners if job.runners is not None else default_runners
    if not remote:  # the driver's process (a dashboard) does not keep models past the run
        return make(job.cfg)  # type: ignore[no-any-return]
    recipe = job.runners if isinstance(job.runners, RunnerRecipe) else None  # hashable: kept per worker
    if job.runners is not None and recipe is None:
        return make(job.cfg)  # type: ignore[no-any-return]
    return _built(("runners", recipe, tuple(job.cfg.models()), batch_width(job.cfg)), lambda: make(job.cfg))


def _retrievers(job: ItemJob, remote: bool) -> Mapping[str, Searcher]:
    from sag.runs.run import corpora_of, default_retrievers

    if isinstance(job.retrievers, Mapping):
        return job.retrievers
    names = corpora_of(job.cfg)
    if job.retrievers is not None:
        return job.retrievers(names)  # type: ignore[no-any-return]
    return _built(("retrievers", names), lambda: default_retrievers(names)) if remote else default_retrievers(names)


class ItemWorker:
    """Plays a run's units (the calibration, or one item) with the group."""

    def __init__(self, job: ItemJob, here: SagStore | None) -> None:
        self.job = job
        remote = here is None
        self.runners, self.corpora = _runners(job, remote), _retrievers(job, remote)  # before anything is stored
        store = here if here is not None else memory_log(job.calls, SagStore)
        self.log = CallLog(store)
        self.new = NewCalls(store) if here is None else None

    def compute_unit(self, payload: Any, tick: Callable[[], None]) -> Any:
        job = self.job
        if payload[0] == CALIBRATION_UNIT:
            result: Any = calibrate(payload[1], job.calibration_cfg, self.runners, self.corpora, log=self.log,
                                    run_id=job.run_id)
        else:
            result = answer_item(payload[1], job.cfg, self.runners, self.corpora, log=self.log, run_id=job.run_id,
                                 calibration=payload[2])
        return (result, self.new.take()) if self.new is not None else result


class ItemSink:
    """Writes answered items, failed items and the calibration; counts the model calls."""

    def __init__(self, store: SagStore, run_id: str) -> None:
        self.store, self.run_id = store, run_id
        self.failed: list[FailedItem] = []
        self.calls = self.cached = 0
        self.calibration: Calibration | None = None
        self.answered: Callable[[Unit], None] | None = None

    def save(self, unit: Unit, result: Any) -> None:
        """The calibration unit (played before the items, outside the ledger's units)."""
        result = self._calls_of(result)
        assert isinstance(result, Calibration)
        self.store.set_calibration(self.run_id, result.to_dict())
        self.calibration = result
        self._count(result)

    def write(self, cur: Any, unit: Unit, result: Any) -> None:
        """An answered item's rows, on the ledger's transaction (:func:`common.work.run_units`)."""
        result = self._calls_of(result)
        assert isinstance(result, ItemResult)
        write_item(cur, self.run_id, result)
        self._count(result)

    def _calls_of(self, result: Any) -> Any:
        if isinstance(result, tuple):  # from a remote worker, with the calls it made
            append_calls(self.store, result[1])  # the call log adds only what it lacks: safe before the item
            result = result[0]
        return result

    def _count(self, result: Any) -> None:
        self.calls, self.cached = self.calls + result.model_calls, self.cached + result.cached_calls

    def fail(self, unit: Unit, failure: Failure) -> None:
        if unit.key == CALIBRATION_UNIT:
            return  # the caller raises: nothing can be answered without the calibration
        detail = failure.detail if isinstance(failure.detail, FailedItem) else FailedItem(unit.key, failure.message)
        self.store.save_failure(self.run_id, detail)
        self.failed.append(detail)
        self.calls, self.cached = self.calls + detail.model_calls, self.cached + detail.cached_calls


def item_units(items: tuple[QuestionItem, ...], calibration: Calibration | None) -> list[Unit]:
    return [Unit(it.item_id, it.item_id, ("item", it, calibration)) for it in items]
