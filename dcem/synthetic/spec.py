"""The synthetic experiment's specification, and its grid run into the store.

A run is identified by a hash of its specification, so re-running the same command
resumes an interrupted run (see :mod:`dcem.store.grid`).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Callable

from dcem.core.config import MediatorConfig
from dcem.core.results import ScenarioResult
from dcem.core.vocabulary import SCENARIOS
from dcem.errors import ConfigError
from dcem.store.database import Store
from dcem.store.grid import GridPlan, Progress, RunSummary, run_grid

__all__ = ["SyntheticSpec", "RunSummary", "run_synthetic"]


@dataclass(frozen=True)
class SyntheticSpec:
    """What a synthetic experiment runs: the grid and the shared settings."""

    scenarios: tuple[str, ...] = SCENARIOS
    seeds: tuple[int, ...] = tuple(range(10))
    xi: float = 1.0
    t_max: int = 12
    free_rounds: int = 22
    n_train: int = 20000
    n_eval: int = 100
    ablation: bool = True
    base_config: MediatorConfig = field(default_factory=lambda: MediatorConfig(prior="empirical"))

    def __post_init__(self) -> None:
        if not self.scenarios:
            raise ConfigError("scenarios", "choose at least one scenario")
        bad = [s for s in self.scenarios if s not in SCENARIOS]
        if bad:
            raise ConfigError("scenarios", f"unknown scenario {bad[0]!r} (known: {', '.join(SCENARIOS)})")
        if len(set(self.scenarios)) != len(self.scenarios):
            raise ConfigError("scenarios", "a scenario is listed twice")
        if not self.seeds or any((not isinstance(s, int)) or s < 0 for s in self.seeds):
            raise ConfigError("seeds", "need at least one non-negative integer seed")
        if not 0.0 <= self.xi <= 1.0:
            raise ConfigError("xi", f"compliance must lie in [0, 1], got {self.xi}")
        for name, low in (("t_max", 1), ("free_rounds", 1), ("n_train", 200), ("n_eval", 1)):
            value = getattr(self, name)
            if not isinstance(value, int) or value < low:
                raise ConfigError(name, f"must be an integer >= {low}, got {value!r}")

    def to_dict(self) -> dict[str, object]:
        d = asdict(self)
        d["scenarios"], d["seeds"] = list(self.scenarios), list(self.seeds)
        d["base_config"] = self.base_config.to_dict()
        return d

    def run_id(self) -> str:
        blob = json.dumps(self.to_dict(), sort_keys=True).encode()
        return "syn-" + hashlib.sha256(blob).hexdigest()[:12]


def run_synthetic(store: Store, spec: SyntheticSpec, *, run_id: str | None = None,
                  progress: Progress | None = None, cancel: Callable[[], bool] | None = None) -> RunSummary:
    """Run every (scenario, seed) cell of ``spec`` not yet stored under ``run_id``.

    progress(done, total, label) is called after each cell (and once at the start);
    cancel() is polled between cells and stops the run cleanly when it returns True.
    """
    from dcem.synthetic.experiment import run_cell  # the world is heavy; import on use

    plan = GridPlan(run_id=run_id or spec.run_id(), kind="synthetic", spec=spec.to_dict(), config=spec.base_config,
                    seeds=spec.seeds, cells=tuple((s, k) for s in spec.scenarios for k in spec.seeds))

    def compute(scenario: str, seed: int, tick: Callable[[], None]) -> ScenarioResult:
        return run_cell(scenario, seed, base_config=spec.base_config, xi=spec.xi, t_max=spec.t_max,
                        free_rounds=spec.free_rounds, n_train=spec.n_train, n_eval=spec.n_eval,
                        ablation=spec.ablation)

    return run_grid(store, plan, compute, progress=progress, cancel=cancel)
