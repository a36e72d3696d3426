"""Run a clinical LLM experiment into the store, resumably.

A run is a :class:`dcem_clinical.spec.ClinicalSpec` (one dataset, scenarios and seeds, the
panel's members and the protocol settings), whose id hashes that specification (not the
machine settings such as GPU offload or threads), so the same command resumes: finished
(scenario, seed) cells are skipped and the call log answers every agent call an
interrupted cell already made.

In-process models evaluate prompts in paragraph-aligned blocks (:data:`SPLIT`, see
:mod:`runtime.blocks`): a round's prompt differs from the previous round's from the
mediator's note on, a paragraph of its own, so the whole case before it is kept.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from clinical.datasets import ClinicalDataset, load_dataset, use_dataset
from common.db import StoreError
from common.errors import ConfigError
from common.work import Executor, InProcess, Unit, WorkSummary
from dcem.store.database import Store
from dcem.store.grid import CellSink, GridPlan, Progress, run_grid
from dcem_clinical.cell import Member, run_clinical_cell, turns_per_cell
from dcem_clinical.spec import DEFAULT_AGENTS, MAX_AGENTS, ClinicalSpec
from dcem_clinical.stat_agent import is_stat_key, stat_key_help, stat_member
from dcem_clinical.stat_views import split_view
from runtime.backends import Backend, BackendError
from runtime.call_shipping import NewCalls, append_calls, logged_calls, memory_log
from runtime.factory import check_load_options, check_model_keys, make_backend

__all__ = ["ClinicalSpec", "ClinicalJob", "run_clinical", "check_members", "check_case_file", "turns_in_cell", "make_backend", "DEFAULT_AGENTS",
           "MAX_AGENTS", "SPLIT"]

SPLIT = "paragraph"  # evaluation blocks of in-process models (module docstring)


@dataclass(frozen=True, eq=False)
class ClinicalJob:
    """The clinical grid's computation: a cell per unit, with the members loaded once per worker.

    backends : members given by the caller (else built from ``spec.agents`` when a cell
    needs them); calls : the run's logged calls, shipped to a remote worker, which computes
    against an in-memory store and returns each cell with the calls it made
    (:mod:`runtime.call_shipping`).
    """

    spec: ClinicalSpec
    n_gpu_layers: int | None = None
    n_threads: int | None = None
    backends: tuple[Member, ...] | None = None
    calls: object = None  # a pandas frame of logged calls, for a remote worker
    dataset: ClinicalDataset | None = None  # a case file's cases, for a worker in another process

    @property
    def key(self) -> str:
        return self.spec.run_id()

    def open(self, here: Store | None = None) -> "_ClinicalWorker":
        return _ClinicalWorker(self, here)


class _ClinicalWorker:
    def __init__(self, job: ClinicalJob, here: Store | None) -> None:
        self.job, self.remote = job, here is None
        self.store = here if here is not None else memory_log(job.calls, Store)  # type: ignore[arg-type]
        self.new = NewCalls(self.store) if self.remote else None
        self.dataset = use_dataset(job.dataset) if job.dataset is not None else load_dataset(job.spec.dataset)
        # opened when the first cell needs the members: a model that cannot load stops the run
        self.loaded: list[Member] = (list(job.backends) if job.backends is not None else
                                     _build_backends(job.spec, n_gpu_layers=job.n_gpu_layers, n_threads=job.n_threads))

    def compute_unit(self, payload: tuple[str, int], tick: Callable[[], None]) -> object:
        spec = self.job.spec
        result = run_clinical_cell(self.store, spec.run_id(), self.dataset, payload[0], payload[1], self.loaded,
                                   spec, tick)
        return (result, self.new.take()) if self.new is not None else result


class _ClinicalSink(CellSink):
    """A remote cell comes with the calls it made: they are appended before the cell."""

    def write(self, cur: Any, unit: Unit, result: object) -> None:
        if isinstance(result, tuple):
            append_calls(self.store, result[1])  # the call log only adds what it lacks: safe before the cell
            result = result[0]
        super().write(cur, unit, result)  # type: ignore[arg-type]


def run_clinical(store: Store, spec: ClinicalSpec, *, backends: Sequence[Member] | None = None,
                 n_gpu_layers: int | None = None, n_threads: int | None = None,
                 progress: Progress | None = None, cancel: Callable[[], bool] | None = None,
                 executor: Executor | None = None) -> WorkSummary:
    """Run every (scenario, seed) cell of ``spec`` not yet stored (see :mod:`dcem.store.grid`).

    backends : one member per ``spec.agents`` entry, an LLM backend or a
    :class:`~dcem_clinical.stat_agent.StatMember` (default: built from ``spec.agents`` when a
    cell needs them; the same key twice shares one loaded model).  progress(done_turns,
    total_turns, label) is called after every agent turn in process (after every cell on
    Ray); cancel() is polled between cells; executor : where the cells run (this process
    by default).
    """
    if backends is not None and len(backends) != len(spec.agents):
        raise ConfigError("agents", f"{len(backends)} backends for {len(spec.agents)} members")
    check_load_options(n_ctx=spec.n_ctx, n_gpu_layers=n_gpu_layers, n_threads=n_threads)  # before anything is stored
    if backends is None:
        check_members(spec)
    dataset = load_dataset(spec.dataset)
    if spec.case_file is not None:
        if dataset.sha256 != spec.case_file.sha256:  # another file of that name was read since the spec was made
            raise ConfigError("dataset", f"the case file {spec.case_file.file} in use is not the one this run was set "
                                         "up with (its sha256 differs); read it again")
        check_case_file(store, spec)
    n_cal, n_test = dataset.default_sizes
    per_cell = turns_per_cell(spec.n_cal or n_cal, spec.n_test or n_test, len(spec.agents),
                              spec.base_config.t_max, spec.free_rounds)
    plan = GridPlan(run_id=spec.run_id(), kind="clinical", spec=spec.to_dict(), config=spec.base_config,
                    seeds=spec.seeds, cells=tuple((s, k) for s in spec.scenarios for k in spec.seeds),
                    units_per_cell=per_cell, label=f"{spec.dataset} ")
    remote = executor is not None and not isinstance(executor, InProcess)
    job = ClinicalJob(spec, n_gpu_layers, n_threads, tuple(backends) if backends is not None else None,
                      logged_calls(store, run_ids=[plan.run_id]) if remote else None,
                      dataset if spec.case_file is not None else None)
    if executor is None and _is_new(store, plan.run_id):  # a model that will not load: the run is not stored
        executor = InProcess(worker=job.open(store))
    executor = executor or InProcess(opener=lambda j: j.open(store))
    return run_grid(store, plan, job, executor=executor, sink=_ClinicalSink(store, plan.run_id),
                    progress=progress, cancel=cancel)


def check_members(spec: ClinicalSpec) -> None:
    """Refuse, before anything is stored or loaded, a member whose model key names no usable
    model (unknown key, a file or adapter that is missing or does not fit, a malformed
    ``openai:`` key): :func:`runtime.factory.check_model_keys` on the LLM members' models
    (statistical members and views are checked by the spec)."""
    models = [split_view(key, spec.dataset)[0] for key in spec.agents if not is_stat_key(key)]
    try:
        check_model_keys(models)
    except BackendError as exc:
        if not str(exc).startswith("unknown model key"):
            raise
        raise BackendError(f"{exc}; statistical agents: {stat_key_help()}") from None


def turns_in_cell(spec: ClinicalSpec) -> int:
    """The progress bar's agent turns per cell of ``spec`` (:func:`turns_per_cell` with the
    dataset's CAL/TEST sizes when the spec leaves them to it)."""
    n_cal, n_test = load_dataset(spec.dataset).default_sizes
    return turns_per_cell(spec.n_cal or n_cal, spec.n_test or n_test, len(spec.agents), spec.base_config.t_max,
                          spec.free_rounds)


def check_case_file(store: Store, spec: ClinicalSpec) -> None:
    """Refuse to resume a run on a case file whose bytes changed since the run started
    (the run id names the file, its labels and loss; the sha256 is compared here)."""
    import json

    ref = spec.case_file
    assert ref is not None
    runs = store.runs()
    mine = runs[runs["run_id"] == spec.run_id()]
    if mine.empty:
        return
    stored = (json.loads(str(mine["spec_json"].iloc[0])).get("case_file") or {}).get("sha256")
    if stored != ref.sha256:
        raise ConfigError("dataset", f"{ref.file} changed since run {spec.run_id()} started (sha256 "
                                     f"{str(stored)[:12]} stored, {ref.sha256[:12]} now); nothing was written: put "
                                     "the file back as it was, or give the changed file another name to start a "
                                     "new run")


def _is_new(store: Store, run_id: str) -> bool:
    try:
        store.check_run(run_id)
    except StoreError:
        return True
    return False


def _build_backends(spec: ClinicalSpec, *, n_gpu_layers: int | None, n_threads: int | None) -> list[Member]:
    built: dict[str, Member] = {}
    for key in spec.agents:
        if key in built:
            continue
        if is_stat_key(key):
            built[key] = stat_member(key, spec.dataset)
            continue
        model = split_view(key, spec.dataset)[0]  # members that read different views share one model
        if model in built:
            built[key] = built[model]
            continue
        try:
            built[key] = built[model] = make_backend(model, n_ctx=spec.n_ctx, n_gpu_layers=n_gpu_layers,
                                                     n_threads=n_threads, split=SPLIT)
        except BackendError as exc:
            if not str(exc).startswith("unknown model key"):
                raise
            raise BackendError(f"{exc}; statistical agents: {stat_key_help()}") from None
    return [built[key] for key in spec.agents]
