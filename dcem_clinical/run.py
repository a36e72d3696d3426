"""Run a clinical LLM experiment into the store, resumably.

A run is one dataset, a set of scenarios and seeds, the panel's members (two or more:
model keys, or ``stat`` / ``stat:KIND`` for a statistical agent fit on each seed's CAL
split, see :mod:`dcem_clinical.stat_agent`) and the protocol settings; its id hashes that specification (not the machine settings such as GPU
offload or threads), so the same command resumes: finished (scenario, seed) cells are
skipped and the call log answers every agent call an interrupted cell already made.

In-process models evaluate prompts in paragraph-aligned blocks (:data:`SPLIT`, see
:mod:`runtime.blocks`): a round's prompt differs from the previous round's from the
mediator's note on, a paragraph of its own, so the whole case before it is kept.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Callable, Sequence

from clinical.datasets import DATASETS, load_dataset
from dcem.calibration.fitting import DELTA_RULES
from dcem.core.config import MediatorConfig
from dcem.core.results import ScenarioResult
from dcem.core.vocabulary import SCENARIOS
from common.errors import ConfigError
from dcem.store.database import Store
from dcem.store.grid import CellSink, GridPlan, Progress, run_grid
from common.work import Executor, InProcess, Unit, WorkSummary
from dcem_clinical.agent import MODES
from dcem_clinical.cell import CellSettings, Member, run_clinical_cell, turns_per_cell
from dcem_clinical.few_shot import FewShotConfig
from dcem_clinical.prompts import AGENT_FIRST, check_layout
from dcem_clinical.stat_agent import is_stat_key, stat_key_help, stat_member
from dcem_clinical.stat_dialogue import StatDialogue
from dcem_clinical.stat_views import split_view
from runtime.backends import Backend, BackendError
from runtime.call_shipping import NewCalls, append_calls, logged_calls, memory_log
from runtime.factory import check_load_options, make_backend

__all__ = ["ClinicalSpec", "ClinicalJob", "run_clinical", "make_backend", "DEFAULT_AGENTS", "MAX_AGENTS", "SPLIT"]

SPLIT = "paragraph"  # evaluation blocks of in-process models (module docstring)

DEFAULT_AGENTS = ("smollm2-135m", "gemma3-270m")
MAX_AGENTS = 8


@dataclass(frozen=True)
class ClinicalSpec:
    """What a clinical experiment runs (Appendix H.1 defaults: T_max = 6, Free T = 6).

    n_cal / n_test : CAL and TEST sizes per seed (None = the dataset's 80/160 or 70/140);
    agents : the members A, B, C ... (2 to :data:`MAX_AGENTS`): model keys (see
    :mod:`runtime.registry`; ``openai:URL#MODEL`` for an OpenAI-compatible server), each
    with an optional ``@VIEW`` (the member reads only that part of each case,
    :mod:`dcem_clinical.stat_views`), or ``stat`` / ``stat:KIND[@VIEW]`` (a statistical agent); mode : ``scored``, ``json`` or
    ``scored-calibrated`` (contextual calibration, :mod:`dcem_clinical.contextual`);
    few_shot_k : solved CAL cases of the seed shown in each prompt (0 = none,
    :mod:`dcem_clinical.few_shot`; left out of the run id when 0); stop_when_decided :
    on TEST, ask a case's agents nothing after D-CEM's first terminal action (the paper's
    protocol; default False keeps the fixed horizon; left out of the run id when False);
    layout : where an LLM agent's name and role stand, ``agent-first`` (the system turn;
    every shipped run) or ``case-first`` (after the case, so agents on one model share the
    case's KV state; :mod:`dcem_clinical.prompts`; left out of the run id when
    ``agent-first``); stat_dialogue : how statistical members take their scenario role and
    answer peers and challenges (:mod:`dcem_clinical.stat_dialogue`; None = ``fixed``, they
    always give their classifier's answer, as in the runs shipped before views existed;
    left out of the run id when None or when no member is statistical); delta_rule : the
    escalation gate's delta searched on CAL with the other thresholds (``fitted``, every
    shipped run) or c / kappa_1 of eq. 14 (``eq14``, :mod:`dcem.calibration.stopping_cost`;
    left out of the run id when ``fitted``).
    """

    dataset: str = "ddxplus8"
    scenarios: tuple[str, ...] = ("S1",)
    seeds: tuple[int, ...] = (0,)
    n_cal: int | None = None
    n_test: int | None = None
    agents: tuple[str, ...] = DEFAULT_AGENTS
    mode: str = "scored"
    temperature: float = 0.0
    free_rounds: int = 6
    n_ctx: int = 2048
    few_shot_k: int = 0
    stop_when_decided: bool = False
    layout: str = AGENT_FIRST
    stat_dialogue: StatDialogue | None = field(default_factory=StatDialogue)
    delta_rule: str = "fitted"
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
        self._check_agents()
        if self.mode not in MODES:
            raise ConfigError("mode", f"must be one of {MODES}, got {self.mode!r}")
        if not 0.0 <= self.temperature <= 2.0:
            raise ConfigError("temperature", f"must lie in [0, 2], got {self.temperature}")
        if isinstance(self.free_rounds, bool) or not isinstance(self.free_rounds, int) or self.free_rounds < 1:
            raise ConfigError("free_rounds", f"must be an integer >= 1, got {self.free_rounds!r}")
        if not isinstance(self.n_ctx, int) or self.n_ctx < 256:
            raise ConfigError("n_ctx", f"must be an integer >= 256, got {self.n_ctx!r}")
        FewShotConfig(k=self.few_shot_k, n_ctx=self.n_ctx)  # checks few_shot_k
        if not isinstance(self.stop_when_decided, bool):
            raise ConfigError("stop_when_decided", f"must be true or false, got {self.stop_when_decided!r}")
        check_layout(self.layout)
        if self.stat_dialogue is not None and not isinstance(self.stat_dialogue, StatDialogue):
            raise ConfigError("stat_dialogue", f"must be a StatDialogue or None, got {self.stat_dialogue!r}")
        if self.delta_rule not in DELTA_RULES:
            raise ConfigError("delta_rule", f"must be one of {', '.join(DELTA_RULES)}, got {self.delta_rule!r}")
        if not any(is_stat_key(a) for a in self.agents):  # no statistical member: nothing to say
            object.__setattr__(self, "stat_dialogue", None)

    def _check_agents(self) -> None:
        if isinstance(self.agents, list):
            object.__setattr__(self, "agents", tuple(self.agents))
        if not isinstance(self.agents, tuple) or not 2 <= len(self.agents) <= MAX_AGENTS \
                or any(not isinstance(a, str) or not a.strip() for a in self.agents):
            raise ConfigError("agents", f"give 2 to {MAX_AGENTS} members MEMBER_A,MEMBER_B[,...] (model keys or "
                              f"statistical agents: {stat_key_help()}), got {list(self.agents)}")
        for key in self.agents:
            if is_stat_key(key):
                stat_member(key, self.dataset)  # a clear error for a bad statistical agent
            else:
                split_view(key, self.dataset)  # a clear error for a view the dataset lacks

    def to_dict(self) -> dict[str, object]:
        d = asdict(self)
        d["scenarios"], d["seeds"], d["agents"] = list(self.scenarios), list(self.seeds), list(self.agents)
        d["base_config"] = self.base_config.to_dict()
        if not self.few_shot_k:  # off: the run ids of earlier specs stay as they were
            d.pop("few_shot_k")
        if not self.stop_when_decided:
            d.pop("stop_when_decided")
        if self.layout == AGENT_FIRST:
            d.pop("layout")
        if self.stat_dialogue is None:
            d.pop("stat_dialogue")
        if self.delta_rule == "fitted":
            d.pop("delta_rule")
        return d

    def run_id(self) -> str:
        blob = json.dumps(self.to_dict(), sort_keys=True).encode()
        return "llm-" + hashlib.sha256(blob).hexdigest()[:12]

    def settings(self) -> CellSettings:
        return CellSettings(base_config=self.base_config, mode=self.mode, temperature=self.temperature,
                            free_rounds=self.free_rounds, n_cal=self.n_cal, n_test=self.n_test,
                            few_shot_k=self.few_shot_k, n_ctx=self.n_ctx,
                            stop_when_decided=self.stop_when_decided, layout=self.layout,
                            stat_dialogue=self.stat_dialogue, delta_rule=self.delta_rule,
                            member_views=tuple(split_view(a, self.dataset)[1] for a in self.agents))


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
        self.dataset = load_dataset(job.spec.dataset)
        # opened when the first cell needs the members: a model that cannot load stops the run
        self.loaded: list[Member] = (list(job.backends) if job.backends is not None else
                                     _build_backends(job.spec, n_gpu_layers=job.n_gpu_layers, n_threads=job.n_threads))

    def compute_unit(self, payload: tuple[str, int], tick: Callable[[], None]) -> object:
        spec = self.job.spec
        result = run_clinical_cell(self.store, spec.run_id(), self.dataset, payload[0], payload[1], self.loaded,
                                   spec.settings(), tick)
        return (result, self.new.take()) if self.new is not None else result


class _ClinicalSink(CellSink):
    """A remote cell comes with the calls it made: they are appended before the cell."""

    def save(self, unit: Unit, result: object) -> None:
        if isinstance(result, tuple):
            append_calls(self.store, result[1])
            result = result[0]
        super().save(unit, result)  # type: ignore[arg-type]


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
    dataset = load_dataset(spec.dataset)
    n_cal, n_test = dataset.default_sizes
    per_cell = turns_per_cell(spec.n_cal or n_cal, spec.n_test or n_test, len(spec.agents),
                              spec.base_config.t_max, spec.free_rounds)
    plan = GridPlan(run_id=spec.run_id(), kind="clinical", spec=spec.to_dict(), config=spec.base_config,
                    seeds=spec.seeds, cells=tuple((s, k) for s in spec.scenarios for k in spec.seeds),
                    units_per_cell=per_cell, label=f"{spec.dataset} ")
    remote = executor is not None and not isinstance(executor, InProcess)
    job = ClinicalJob(spec, n_gpu_layers, n_threads, tuple(backends) if backends is not None else None,
                      logged_calls(store, run_ids=[plan.run_id]) if remote else None)
    return run_grid(store, plan, job, executor=executor or InProcess(store), sink=_ClinicalSink(store, plan.run_id),
                    progress=progress, cancel=cancel)


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
