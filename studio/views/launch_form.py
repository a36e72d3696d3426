"""The Experiments page's launch form, read strictly, and what a launch did.

:func:`read_launch_form` turns the typed fields into a :class:`LaunchForm`: the parsed
values, a message per invalid field, and the number of cells a run would compute.  A
launch is allowed only when every field is valid, so a run never uses values the screen
does not show.  :class:`LaunchProgress` is a launch's progress as the page records it
after each cell; one that never reached its end was interrupted (Stop, or any other
control), and :func:`launch_message` says so.
"""
from __future__ import annotations

from dataclasses import dataclass

from dcem.calibration.risk_control import RiskTarget
from dcem.analysis.form_input import IntField, parse_int_field
from dcem.core.config import MediatorConfig
from common.errors import ConfigError
from dcem.synthetic.spec import WORLD_REPORTS, WORLDS, SyntheticSpec
# names its page imports from here (pages import from studio only)
from dcem.core.vocabulary import SCENARIOS
from dcem.synthetic.spec import COMPLIANCE, COMPLIANCE_NAMES, WORLD_NAMES

__all__ = ["SEEDS_RANGE", "T_MAX_RANGE", "LaunchForm", "read_launch_form", "cells_text", "LaunchProgress",
           "launch_message"]

SEEDS_RANGE = (1, 50)
T_MAX_RANGE = (2, 30)


@dataclass(frozen=True)
class LaunchForm:
    """The launch fields as read: scenarios, seeds and round budget (each parsed or refused)."""

    scenarios: tuple[str, ...]
    seeds: IntField
    t_max: IntField

    @property
    def scenario_error(self) -> str | None:
        return None if self.scenarios else "Scenarios: choose at least one scenario."

    @property
    def errors(self) -> list[str]:
        found = [self.scenario_error, self.seeds.error, self.t_max.error]
        return [e for e in found if e is not None]

    @property
    def ok(self) -> bool:
        return not self.errors

    @property
    def cells(self) -> int | None:
        """Cells a run computes: one per (scenario, seed); None while the seeds are invalid."""
        return None if self.seeds.value is None else len(self.scenarios) * self.seeds.value

    def spec(self, *, xi: float, ablation: bool, world: str, compliance: str,
             risk_target: RiskTarget | None = None) -> SyntheticSpec:
        """The run these fields describe (raises ConfigError when a field is invalid);
        ``risk_target``: thresholds by Learn-then-Test instead of eq. (1)."""
        if self.seeds.value is None or self.t_max.value is None:
            raise ConfigError("launch", " ".join(self.errors))
        if world not in WORLDS:
            raise ConfigError("world", f"must be one of {', '.join(WORLDS)}, got {world!r}")
        t_max = self.t_max.value
        return SyntheticSpec(scenarios=self.scenarios, seeds=tuple(range(self.seeds.value)), xi=float(xi),
                             t_max=t_max, ablation=bool(ablation), sharpness=WORLDS[world],
                             compliance=compliance, reports=WORLD_REPORTS[world],  # MAP: a run of its own
                             base_config=MediatorConfig(prior="empirical", t_max=t_max), risk_target=risk_target)


def read_launch_form(scenarios: list[str] | tuple[str, ...], seeds: object, t_max: object) -> LaunchForm:
    """Read the typed Seeds and Round budget fields strictly (:func:`parse_int_field`)."""
    return LaunchForm(tuple(scenarios), parse_int_field(seeds, field="Seeds", low=SEEDS_RANGE[0],
                                                        high=SEEDS_RANGE[1]),
                      parse_int_field(t_max, field="Round budget T", low=T_MAX_RANGE[0], high=T_MAX_RANGE[1]))


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def cells_text(form: LaunchForm, *, stored: int = 0, ablation: bool = False) -> str:
    """What Run will compute, e.g. "6 cells: 2 scenarios × 3 seeds; 2 already stored, Run computes 4"."""
    if form.cells is None or not form.scenarios:
        return "Cells: fix the fields above to see how many cells Run computes."
    seeds = form.seeds.value or 0
    text = f"{_plural(form.cells, 'cell')}: {_plural(len(form.scenarios), 'scenario')} × {_plural(seeds, 'seed')}"
    if stored >= form.cells:
        text += "; all already stored, Run only marks the run finished"
    elif stored:
        text += f"; {stored} already stored, Run computes {form.cells - stored}"
    if ablation:
        text += ". The compliance ablation adds work inside each cell, not cells"
    return text + "."


@dataclass(frozen=True)
class LaunchProgress:
    """A launch as recorded after each cell: cells stored (``done``) of ``total``, cells
    stored before it started (``already``), whether it reached its end, and the one-line
    reason when the store refused it before writing anything (``refused``)."""

    run_id: str
    done: int
    total: int
    already: int = 0
    finished: bool = False
    refused: str | None = None  # why the store refused the launch (a run of that id with other settings)
    failed: str | None = None  # the error that ended the launch (checks before it, or a cell that raised)

    def __post_init__(self) -> None:
        if not 0 <= self.already <= self.done <= self.total:
            raise ConfigError("progress", f"need 0 <= already <= done <= total, got {self.already}, "
                                          f"{self.done}, {self.total}")

    def completed(self, *, computed: int, skipped: int, total: int) -> LaunchProgress:
        """The same launch, finished: ``computed`` cells now, ``skipped`` stored before."""
        return LaunchProgress(self.run_id, computed + skipped, total, skipped, True)


def launch_message(progress: LaunchProgress) -> tuple[str, str]:
    """("success", text) for a launch that finished; ("warning", text) for one interrupted;
    ("error", text) for one the store refused or an error ended."""
    if progress.refused is not None:
        return "error", f"Not launched: {progress.refused}"
    if progress.failed is not None:
        return "error", (f"Stopped by an error after {progress.done} of {_plural(progress.total, 'cell')}: "
                         f"{progress.failed} (every finished cell stays stored)")
    if not progress.finished:
        return "warning", (f"Stopped after {progress.done} of {_plural(progress.total, 'cell')} — "
                           "run again to resume.")
    computed = progress.done - progress.already
    return "success", (f"Run {progress.run_id}: {_plural(computed, 'cell')} computed, "
                       f"{progress.already} already stored.")
