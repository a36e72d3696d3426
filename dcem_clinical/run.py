"""Run a clinical LLM experiment into the store, resumably.

A run is one dataset, a set of scenarios and seeds, two agent models and the protocol
settings; its id hashes that specification (not the machine settings such as GPU
offload or threads), so the same command resumes: finished (scenario, seed) cells are
skipped and the call log answers every agent call an interrupted cell already made.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Callable, Sequence

from clinical.datasets import DATASETS, load_dataset
from dcem.core.config import MediatorConfig
from dcem.core.results import ScenarioResult
from dcem.core.vocabulary import SCENARIOS
from dcem.errors import ConfigError
from dcem.store.database import Store
from dcem.store.grid import GridPlan, Progress, RunSummary, run_grid
from dcem_clinical.agent import MODES
from dcem_clinical.cell import CellSettings, run_clinical_cell, turns_per_cell
from runtime.backends import Backend
from runtime.factory import make_backend

__all__ = ["ClinicalSpec", "run_clinical", "make_backend", "DEFAULT_AGENTS"]

DEFAULT_AGENTS = ("smollm2-135m", "gemma3-270m")


@dataclass(frozen=True)
class ClinicalSpec:
    """What a clinical experiment runs (Appendix H.1 defaults: T_max = 6, Free T = 6).

    n_cal / n_test : CAL and TEST sizes per seed (None = the dataset's 80/160 or 70/140);
    agents : model keys of agents A and B (see :mod:`runtime.registry`; ``openai:URL#MODEL``
    for an OpenAI-compatible server); mode : ``scored`` or ``json``.
    """

    dataset: str = "ddxplus8"
    scenarios: tuple[str, ...] = ("S1",)
    seeds: tuple[int, ...] = (0,)
    n_cal: int | None = None
    n_test: int | None = None
    agents: tuple[str, str] = DEFAULT_AGENTS
    mode: str = "scored"
    temperature: float = 0.0
    free_rounds: int = 6
    n_ctx: int = 2048
    base_config: MediatorConfig = field(default_factory=lambda: MediatorConfig(prior="empirical", t_max=6))

    def __post_init__(self) -> None:
        if self.dataset not in DATASETS:
            raise ConfigError("dataset", f"unknown dataset {self.dataset!r} (known: {', '.join(DATASETS)})")
        if not self.scenarios or any(s not in SCENARIOS for s in self.scenarios):
            raise ConfigError("scenario", f"choose from {', '.join(SCENARIOS)}, got {list(self.scenarios)}")
        if len(set(self.scenarios)) != len(self.scenarios):
            raise ConfigError("scenario", "a scenario is listed twice")
        if not self.seeds or any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in self.seeds):
            raise ConfigError("seeds", "need at least one non-negative integer seed")
        for name in ("n_cal", "n_test"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ConfigError(name, f"must be a whole number >= 1, got {value!r}")
        if len(self.agents) != 2 or any(not isinstance(a, str) or not a.strip() for a in self.agents):
            raise ConfigError("agents", f"give two model keys MODEL_A,MODEL_B, got {list(self.agents)}")
        if self.mode not in MODES:
            raise ConfigError("mode", f"must be one of {MODES}, got {self.mode!r}")
        if not 0.0 <= self.temperature <= 2.0:
            raise ConfigError("temperature", f"must lie in [0, 2], got {self.temperature}")
        if isinstance(self.free_rounds, bool) or not isinstance(self.free_rounds, int) or self.free_rounds < 1:
            raise ConfigError("free_rounds", f"must be an integer >= 1, got {self.free_rounds!r}")
        if not isinstance(self.n_ctx, int) or self.n_ctx < 256:
            raise ConfigError("n_ctx", f"must be an integer >= 256, got {self.n_ctx!r}")

    def to_dict(self) -> dict[str, object]:
        d = asdict(self)
        d["scenarios"], d["seeds"], d["agents"] = list(self.scenarios), list(self.seeds), list(self.agents)
        d["base_config"] = self.base_config.to_dict()
        return d

    def run_id(self) -> str:
        blob = json.dumps(self.to_dict(), sort_keys=True).encode()
        return "llm-" + hashlib.sha256(blob).hexdigest()[:12]

    def settings(self) -> CellSettings:
        return CellSettings(base_config=self.base_config, mode=self.mode, temperature=self.temperature,
                            free_rounds=self.free_rounds, n_cal=self.n_cal, n_test=self.n_test)


def run_clinical(store: Store, spec: ClinicalSpec, *, backends: Sequence[Backend] | None = None,
                 n_gpu_layers: int | None = None, n_threads: int | None = None,
                 progress: Progress | None = None, cancel: Callable[[], bool] | None = None) -> RunSummary:
    """Run every (scenario, seed) cell of ``spec`` not yet stored (see :mod:`dcem.store.grid`).

    backends : the two agents' backends (default: built from ``spec.agents`` when a cell
    needs them; the same key twice shares one loaded model).  progress(done_turns,
    total_turns, label) is called after every agent turn (cache hits included); cancel()
    is polled between cells.
    """
    dataset = load_dataset(spec.dataset)
    n_cal, n_test = dataset.default_sizes
    per_cell = turns_per_cell(spec.n_cal or n_cal, spec.n_test or n_test, 2, spec.base_config.t_max,
                              spec.free_rounds)
    plan = GridPlan(run_id=spec.run_id(), kind="clinical", spec=spec.to_dict(), config=spec.base_config,
                    seeds=spec.seeds, cells=tuple((s, k) for s in spec.scenarios for k in spec.seeds),
                    units_per_cell=per_cell, label=f"{spec.dataset} ")
    loaded: list[Backend] = list(backends) if backends is not None else []

    def compute(scenario: str, seed: int, tick: Callable[[], None]) -> ScenarioResult:
        if not loaded:  # load models only when a cell needs them
            loaded.extend(_build_backends(spec, n_gpu_layers=n_gpu_layers, n_threads=n_threads))
        return run_clinical_cell(store, spec.run_id(), dataset, scenario, seed, loaded, spec.settings(), tick)

    return run_grid(store, plan, compute, progress=progress, cancel=cancel)


def _build_backends(spec: ClinicalSpec, *, n_gpu_layers: int | None, n_threads: int | None) -> list[Backend]:
    built: dict[str, Backend] = {}
    for key in spec.agents:
        if key not in built:
            built[key] = make_backend(key, n_ctx=spec.n_ctx, n_gpu_layers=n_gpu_layers, n_threads=n_threads)
    return [built[key] for key in spec.agents]
