"""A resumable SAG run: one group config on a set of items of one benchmark, into the store.

The run id is a hash of the benchmark, the chosen item ids, the group config and the
seed, so the same command finds the same run: items already answered are skipped, and
every model call of an interrupted item is answered from the call log, so a finished run
re-runs with zero model calls.  Models and retrieval indexes are built only when an item
needs them.  An item whose model call failed gets no answer (:mod:`sag.group.failures`): it is
stored apart with its reason, the run is marked failed, not finished, and the same command
retries it.
"""
from __future__ import annotations

import hashlib
import json
import logging
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from clinical.questions import BENCHMARKS, QuestionItem, is_file, load_benchmark, load_jsonl_items, sample_items
from clinical.training_split import drop_train
from common.errors import ConfigError
from common.fields import Field, Spec, Whole
from common.work import Executor, Failure, InProcess, Progress, Unit, WorkSummary, run_units
from runtime.call_shipping import logged_calls
from runtime.turns import TurnRunner
from sag.group.config import AgentRole, GroupConfig
from sag.debate.hybrid import Searcher
from sag.debate.answer import Calibration, CalibrationFailed, check_fixed_options
from sag.runs.item_job import CALIBRATION_UNIT, ItemJob, ItemSink, item_units
from sag.debate.results import ItemResult
from sag.store.tables import SagStore

__all__ = ["SagRunSpec", "run_sag", "run_items", "load_items", "HELDOUT_PREFIX", "default_runners", "default_retrievers",
           "Progress", "corpora_of"]

log = logging.getLogger(__name__)


# A run stops when this many items in a row got no answer (a server that is down, a model
# whose context no prompt fits): the rest would fail the same way.
STOP_AFTER_FAILURES = 3


HELDOUT_PREFIX = "heldout:"
"""``heldout:<benchmark>`` names the HELD-OUT part of a training benchmark
(:mod:`clinical.training_split`): the items trained and untrained agents are compared on."""


FOLD_BENCHMARKS = {"ddxplus8-cal": "cal", "ddxplus8-twins": "test"}
"""Named parts of DDXPlus-8 HELD-OUT (:mod:`clinical.group_folds`): ``ddxplus8-cal``, the
130 cases a view group's fitted parts are fitted on (the other 200 are what ``ddxplus8``
with ``--items 200 --seed 0`` draws); ``ddxplus8-twins``, the counterfactual twins of those
200 (sex swapped, age moved: :func:`sag.group.member_views.twin_items`, 400 items) for CDR."""


def load_items(benchmark: str) -> tuple[QuestionItem, ...]:
    """A shipped benchmark by name, the HELD-OUT part of a training benchmark
    (``heldout:medqa``), a named part of DDXPlus-8 HELD-OUT (``ddxplus8-cal``), or a JSONL
    question file by path."""
    if benchmark in BENCHMARKS:
        return load_benchmark(benchmark)
    if benchmark in FOLD_BENCHMARKS:
        from sag.group.member_views import twin_items
        from clinical.group_folds import fold_items

        items = fold_items(FOLD_BENCHMARKS[benchmark])
        return twin_items(items) if benchmark.endswith("twins") else items
    if benchmark.startswith(HELDOUT_PREFIX):
        from clinical.training_split import BENCHMARKS as TRAINED, heldout_items

        name = benchmark[len(HELDOUT_PREFIX):]
        if name not in TRAINED:
            raise ConfigError("benchmark", f"no HELD-OUT part for {name!r}; use heldout: with one of "
                                           f"{', '.join(TRAINED)}")
        return heldout_items(name)
    path = Path(benchmark)
    if path.suffix.lower() in (".jsonl", ".json") or is_file(path):
        return load_jsonl_items(path, benchmark=path.stem or "custom")
    raise ConfigError("benchmark", f"unknown benchmark {benchmark!r}; use one of {', '.join(BENCHMARKS)} "
                                   "or a path to a .jsonl question file")


_RUN_SPEC = Spec({"n_items": Field((Whole(1),), label="items"), "seed": Whole(0)})


@dataclass(frozen=True)
class SagRunSpec:
    """What to run: ``n_items`` items of ``benchmark`` drawn with ``seed``, with the group ``cfg``.

    The D-CEM variant also draws ``cfg.n_cal`` calibration items from the rest of the
    benchmark (a disjoint split, same seed); a view group's D-CEM variant draws its
    evaluation items as every other group does and its calibration items from those
    left, so it answers the same items as the view group without D-CEM.  On a shipped benchmark with a training split
    (:mod:`clinical.training_split`: MedQA, MedMCQA, PubMedQA, DDXPlus-8) the draw leaves
    out the TRAIN items, so a run never asks what a trained model has seen.
    """

    benchmark: str
    cfg: GroupConfig
    n_items: int = 20
    seed: int = 0

    def __post_init__(self) -> None:
        _RUN_SPEC.apply(self)

    def split(self, items: tuple[QuestionItem, ...]) -> tuple[tuple[QuestionItem, ...], tuple[QuestionItem, ...]]:
        """(evaluation items, calibration items) drawn from ``items`` outside TRAIN; calibration
        only for the dcem method."""
        n_cal = self.cfg.n_cal if self.cfg.method == "dcem" else 0
        every = len(items)
        if self.benchmark in BENCHMARKS:
            items = drop_train(self.benchmark, items, lambda it: it.item_id)
        if self.n_items + n_cal > len(items):
            kept = f" ({every - len(items)} more are kept for training)" if every > len(items) else ""
            raise ConfigError("items", f"{self.benchmark} has {len(items)} items{kept}; asked for {self.n_items}"
                                       + (f" plus {n_cal} calibration items" if n_cal else ""))
        if self.cfg.views and n_cal:  # a view group: evaluated on the usual draw, calibrated on what it leaves
            evaluation = sample_items(items, self.n_items, np.random.default_rng(self.seed))
            taken = {it.item_id for it in evaluation}
            rest = tuple(it for it in items if it.item_id not in taken)
            return evaluation, sample_items(rest, n_cal, np.random.default_rng([self.seed, 1]))
        chosen = sample_items(items, self.n_items + n_cal, np.random.default_rng(self.seed))
        rng = np.random.default_rng([self.seed, 1])
        cal_ids = {it.item_id for it in sample_items(chosen, n_cal, rng)} if n_cal else set()
        return (tuple(it for it in chosen if it.item_id not in cal_ids),
                tuple(it for it in chosen if it.item_id in cal_ids))

    def prepare(self) -> tuple[tuple[QuestionItem, ...], tuple[QuestionItem, ...]]:
        """Read and check the benchmark's items and draw (evaluation, calibration): every
        input of the run is checked before a store is opened or anything is stored."""
        evaluation, calibration = self.split(load_items(self.benchmark))
        if self.cfg.views:
            from sag.group.member_views import check_view_items

            check_view_items(evaluation + calibration)
        if self.cfg.method == "dcem":
            check_fixed_options(evaluation + calibration)
        return evaluation, calibration

    def to_dict(self, items: tuple[QuestionItem, ...] | None = None) -> dict[str, Any]:
        """The run's identity: benchmark, the drawn item ids, group config and seed."""
        chosen = items if items is not None else self.prepare()[0]
        return {"benchmark": self.benchmark, "items": [it.item_id for it in chosen], "config": self.cfg.to_dict(),
                "seed": self.seed}

    def run_id(self, items: tuple[QuestionItem, ...] | None = None) -> str:
        """A hash of :meth:`to_dict`; ``items``: the evaluation items already drawn (else drawn here)."""
        blob = json.dumps(self.to_dict(items), sort_keys=True)
        digest = hashlib.sha256(blob.encode("utf-8")).hexdigest()[:10]
        name = Path(self.benchmark).stem if self.benchmark not in BENCHMARKS else self.benchmark
        return f"sag-{name}-{self.cfg.name}-{digest}"


RunnerFactory = Callable[[GroupConfig], Mapping[str, TurnRunner]]  # the group's runners, by model key
RetrieverFactory = Callable[[tuple[str, ...]], Mapping[str, Searcher]]


def corpora_of(cfg: GroupConfig) -> tuple[str, ...]:
    return tuple(dict.fromkeys(a.corpus for a in cfg.agents() if a.role is AgentRole.KNOWLEDGE and a.corpus))


def default_runners(cfg: GroupConfig) -> Mapping[str, TurnRunner]:
    from sag.debate.runners import batch_width, build_runners

    return build_runners(cfg.models(), width=batch_width(cfg))


def default_retrievers(names: tuple[str, ...]) -> Mapping[str, Searcher]:
    from sag.retrieval import retrievers

    return retrievers(names)


def run_sag(store: SagStore, spec: SagRunSpec, *, runners: RunnerFactory | Mapping[str, TurnRunner] | None = None,
            retrievers: RetrieverFactory | Mapping[str, Searcher] | None = None,
            progress: Progress | None = None, cancel: Callable[[], bool] | None = None,
            prepared: tuple[Sequence[QuestionItem], Sequence[QuestionItem]] | None = None,
            executor: Executor | None = None) -> WorkSummary:
    """Answer every item of the run not yet stored; see the module docstring.  ``prepared``:
    the items :meth:`SagRunSpec.prepare` drew (read again when not given)."""
    evaluation, calibration = prepared if prepared is not None else spec.prepare()
    return run_items(store, spec.run_id(evaluation), benchmark=spec.benchmark, cfg=spec.cfg, seed=spec.seed,
                     evaluation=evaluation, calibration=calibration, runners=runners, retrievers=retrievers,
                     progress=progress, cancel=cancel, executor=executor)


def run_items(store: SagStore, run_id: str, *, benchmark: str, cfg: GroupConfig, seed: int,
              evaluation: Sequence[QuestionItem], calibration: Sequence[QuestionItem] = (),
              runners: RunnerFactory | Mapping[str, TurnRunner] | None = None,
              retrievers: RetrieverFactory | Mapping[str, Searcher] | None = None,
              progress: Progress | None = None, cancel: Callable[[], bool] | None = None,
              calibration_cfg: GroupConfig | None = None, executor: Executor | None = None) -> WorkSummary:
    """Answer the items of run ``run_id`` not yet stored (the D-CEM method first calibrates
    on ``calibration``, played with ``calibration_cfg``, by default ``cfg``); a finished run
    answers nothing and loads no model.  executor : where the units run (this process by
    default; see :mod:`sag.runs.item_job`)."""
    start = time.perf_counter()
    evaluation, calibration = tuple(evaluation), tuple(calibration)
    if cfg.method == "dcem":
        check_fixed_options(evaluation + calibration)
    # other settings, or an item edited since the run began: refused before any model loads
    store.check_items(run_id, evaluation, benchmark=benchmark, cfg=cfg, seed=seed)
    ledger = store.ledger()
    done = ledger.done_keys(run_id)
    todo = [it for it in evaluation if it.item_id not in done]
    job = ItemJob(run_id, cfg, calibration_cfg or cfg, runners=runners, retrievers=retrievers)
    remote = executor is not None and not isinstance(executor, InProcess)
    if todo and not remote:  # models and indexes are built before anything is stored
        executor = InProcess(worker=job.open(store))
    store.ensure_run(run_id, benchmark=benchmark, cfg=cfg, items=evaluation, seed=seed)  # the run's items, for the pages
    sink, cal = ItemSink(store, run_id), None
    if todo and remote:
        job = replace(job, calls=logged_calls(store, run_ids=[run_id],
                                              case_ids=[it.item_id for it in calibration + tuple(todo)]))
    if todo and cfg.method == "dcem":
        cal = _calibrate(sink, job, calibration, executor, progress)
    summary = run_units(sink, item_units(evaluation, cal), job, run_id=run_id, executor=executor, progress=progress,
                        cancel=cancel, stop_after=STOP_AFTER_FAILURES, ledger=ledger, kind="sag",
                        spec=ledger_spec(benchmark, cfg, evaluation, seed))
    stopped = summary.stopped and summary.stopped.replace("units in a row failed", "items in a row got no "
                                                          "answer").replace("units not tried", "items not tried")
    return replace(summary, failed=tuple(sink.failed), stopped=stopped, seconds=time.perf_counter() - start,
                   model_calls=sink.calls, cached_calls=sink.cached)


def ledger_spec(benchmark: str, cfg: GroupConfig, items: Sequence[QuestionItem], seed: int) -> dict[str, Any]:
    """What the ledger keeps as a SAG run's spec: the benchmark, the item ids, the group
    config and the seed (:meth:`SagRunSpec.to_dict`, the form :mod:`common.ledger_adopt`
    gives the runs stored before the ledger)."""
    return {"benchmark": benchmark, "items": [it.item_id for it in items], "config": cfg.to_dict(), "seed": int(seed)}


def _calibrate(sink: ItemSink, job: ItemJob, items: tuple[QuestionItem, ...], executor: Executor | None,
               progress: Progress | None) -> Calibration:
    """The D-CEM variant's calibration, computed as one unit (answered from the call log when repeated)."""
    unit = Unit(CALIBRATION_UNIT, "calibration", (CALIBRATION_UNIT, items))
    if progress is not None:
        progress(0, len(items), "calibration")
    for _unit, result in (executor or InProcess()).run(job, [unit], lambda _u: None, None):
        if isinstance(result, Failure):
            raise CalibrationFailed("calibration", result.message)
        sink.save(unit, result)
    if sink.calibration is None:
        raise CalibrationFailed("calibration", "the calibration was not computed (the run was stopped)")
    return sink.calibration
