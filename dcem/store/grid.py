"""One resumable grid runner for every experiment that stores (scenario, seed) cells.

A run is identified by a hash of its specification, so repeating a command resumes it:
finished cells are skipped, never duplicated, and a finished run does nothing.  Each cell
is written in one transaction (:meth:`Store.save_cell`), so a run killed at any moment
(``kill -9`` included) keeps every finished cell and no half of one.

Progress is counted in units (one per cell, or one per agent turn when a cell reports
finer steps through its ``tick``); ``progress(done, total, label)`` is called once at the
start and after every unit, and ``cancel()`` is polled between cells.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from dcem.core.config import MediatorConfig
from dcem.core.results import ScenarioResult
from common.errors import ConfigError
from dcem.store.database import Store

__all__ = ["GridPlan", "RunSummary", "run_grid", "Progress", "ComputeCell"]

log = logging.getLogger(__name__)

Progress = Callable[[int, int, str], None]
ComputeCell = Callable[[str, int, Callable[[], None]], ScenarioResult]


@dataclass(frozen=True)
class RunSummary:
    """What one call of :func:`run_grid` did: cells computed now, cells already stored."""

    run_id: str
    resumed: bool
    computed: int
    skipped: int
    total: int
    complete: bool


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


class _Counter:
    """Progress units done so far, reported after each step."""

    def __init__(self, plan: GridPlan, done_cells: int, progress: Progress | None) -> None:
        self.per_cell, self.progress = plan.units_per_cell, progress
        self.total = plan.units_per_cell * len(plan.cells)
        self.base = plan.units_per_cell * done_cells
        self.units = self.base

    def report(self, label: str) -> None:
        if self.progress is not None:
            self.progress(min(self.units, self.total), self.total, label)

    def tick(self, label: str) -> None:
        self.units += 1
        self.report(label)

    def cell_done(self, cells_done: int, label: str) -> None:
        self.units = self.per_cell * cells_done
        self.report(label)


def run_grid(store: Store, plan: GridPlan, compute: ComputeCell, *, progress: Progress | None = None,
             cancel: Callable[[], bool] | None = None) -> RunSummary:
    """Compute and store every cell of ``plan`` not yet stored under its run id.

    compute(scenario, seed, tick) returns the cell's :class:`ScenarioResult`; it may call
    ``tick()`` once per progress unit.  Returns a :class:`RunSummary`; ``complete`` is
    False when ``cancel()`` stopped the run between cells.
    """
    resumed = store.ensure_run(plan.run_id, kind=plan.kind, spec=dict(plan.spec), config=plan.config,
                               seeds=list(plan.seeds))
    done = store.done_cells(plan.run_id)
    already = sum(1 for c in plan.cells if c in done)
    counter = _Counter(plan, already, progress)
    counter.report("resuming" if already else "starting")
    computed, total = 0, len(plan.cells)
    for scenario, seed in (c for c in plan.cells if c not in done):
        if cancel is not None and cancel():
            log.info("run %s cancelled after %d of %d cells", plan.run_id, already + computed, total)
            return RunSummary(plan.run_id, resumed, computed, total - computed, total, False)
        label = plan.cell_label(scenario, seed)
        result = compute(scenario, seed, lambda label=label: counter.tick(label))
        store.save_cell(plan.run_id, result)
        computed += 1
        counter.cell_done(already + computed, label)
    store.finish_run(plan.run_id)
    return RunSummary(plan.run_id, resumed, computed, total - computed, total, True)
