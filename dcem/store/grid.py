"""The D-CEM grids (synthetic and clinical) on the one runner: a (scenario, seed) cell is a unit.

A run is identified by a hash of its specification, so repeating a command resumes it:
finished cells are skipped, never duplicated, and a finished run does nothing.  Each cell
is written in one transaction with its unit row of the run ledger (:mod:`common.ledger`:
:func:`common.work.run_units` starts, skips, finishes and fails the run), so a run killed
at any moment (``kill -9`` included) keeps every finished cell and no half of one.  A cell
that raises is recorded in ``cell_failures`` and the ledger with its message and the run
goes on; the run is then marked failed (not finished) and the same command retries the
missing cells.  A stored
run resumes only with the kind, spec, config and seeds it was stored with
(:meth:`Store.ensure_run`): a named run (``--run-id``) given other settings is refused,
naming the first field that differs, before anything is written.

Cells run in this process by default, or on Ray (``executor``): see :mod:`common.work`.
Progress is counted in units (one per cell, or one per agent turn when a cell reports
finer steps through its ``tick``).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from common.errors import ConfigError
from common.work import Cancel, Executor, Failure, InProcess, Job, Progress, Unit, WorkSummary, run_units
from dcem.core.config import MediatorConfig
from dcem.core.results import ScenarioResult
from dcem.store.database import Store, write_cell

__all__ = ["GridPlan", "run_grid", "Progress", "ComputeCell", "CellSink", "ClosureJob", "cell_units", "ledger_spec"]

log = logging.getLogger(__name__)

ComputeCell = Callable[[str, int, Callable[[], None]], ScenarioResult]


@dataclass(frozen=True)
class GridPlan:
    """A run's identity and its cells.

    run_id : the hash of the spec; kind : ``synthetic``, ``clinical`` ...; spec : the
    JSON-ready specification stored with the run; config : the base mediator settings;
    seeds : the run's seeds; cells : (scenario, seed) in run order; units_per_cell :
    progress units one cell reports; label : prefix of progress labels.
    """

    run_id: str
    kind: str
    spec: Mapping[str, Any]
    config: MediatorConfig
    seeds: tuple[int, ...]
    cells: tuple[tuple[str, int], ...]
    units_per_cell: int = 1
    label: str = ""

    def __post_init__(self) -> None:
        if not self.cells:
            raise ConfigError("cells", "a run needs at least one (scenario, seed) cell")
        if len(set(self.cells)) != len(self.cells):
            raise ConfigError("cells", "a (scenario, seed) cell is listed twice")
        if self.units_per_cell < 1:
            raise ConfigError("units_per_cell", f"must be >= 1, got {self.units_per_cell}")

    def cell_label(self, scenario: str, seed: int) -> str:
        return f"{self.label}{scenario} seed {seed}"


def cell_key(scenario: str, seed: int) -> str:
    return f"{scenario}/seed {seed}"


def cell_units(plan: GridPlan) -> list[Unit]:
    return [Unit(cell_key(s, k), plan.cell_label(s, k), (s, k), plan.units_per_cell) for s, k in plan.cells]


class CellSink:
    """Writes a finished cell (on the ledger's transaction) or a cell's failure into the store."""

    def __init__(self, store: Store, run_id: str) -> None:
        self.store, self.run_id = store, run_id

    def write(self, cur: Any, unit: Unit, result: ScenarioResult) -> None:
        write_cell(cur, self.run_id, result)

    def fail(self, unit: Unit, failure: Failure) -> None:
        scenario, seed = unit.payload
        log.warning("cell %s of run %s failed: %s", unit.key, self.run_id, failure.message)
        self.store.save_cell_failure(self.run_id, scenario, seed, failure.message)


@dataclass(frozen=True)
class ClosureJob:
    """A job from a function of this process (``compute(scenario, seed, tick)``): runs in process only."""

    compute: ComputeCell

    @property
    def key(self) -> str:
        return repr(self.compute)

    def open(self, here: Any = None) -> "ClosureJob":
        return self

    def compute_unit(self, payload: tuple[str, int], tick: Callable[[], None]) -> ScenarioResult:
        return self.compute(payload[0], payload[1], tick)


def run_grid(store: Store, plan: GridPlan, job: Job | ComputeCell, *, executor: Executor | None = None,
             sink: CellSink | None = None, progress: Progress | None = None,
             cancel: Cancel | None = None) -> WorkSummary:
    """Compute and store every cell of ``plan`` not yet stored under its run id.

    job : a picklable :class:`common.work.Job` whose worker computes a ``(scenario, seed)``
    payload (required for Ray), or a function ``compute(scenario, seed, tick)`` run in
    process.  Returns the run's :class:`common.work.WorkSummary`.
    """
    if not hasattr(job, "open"):
        job = ClosureJob(job)  # type: ignore[arg-type]
    # other settings under a stored id: refused before anything is written (the ledger's copy of old runs included)
    store.check_settings(plan.run_id, kind=plan.kind, spec=dict(plan.spec), config=plan.config, seeds=list(plan.seeds))
    ledger = store.ledger()  # before the kind's row is written: a new run is not a resume
    # the kind's own row (mediator config and seeds, read by the pages), refused before anything is
    # written when the run is stored with other settings; the ledger keeps the run's life
    store.ensure_run(plan.run_id, kind=plan.kind, spec=dict(plan.spec), config=plan.config, seeds=list(plan.seeds))
    return run_units(sink or CellSink(store, plan.run_id), cell_units(plan), job, run_id=plan.run_id,
                     executor=executor or InProcess(opener=lambda j: j.open(store)), progress=progress, cancel=cancel,
                     ledger=ledger, kind=plan.kind, spec=ledger_spec(plan))


def ledger_spec(plan: GridPlan) -> dict[str, Any]:
    """What the ledger keeps as a grid's spec: the spec, the mediator config and the seeds
    (the form :mod:`common.ledger_adopt` gives the grids stored before the ledger)."""
    return {"spec": dict(plan.spec), "config": plan.config.to_dict(), "seeds": [int(s) for s in plan.seeds]}
