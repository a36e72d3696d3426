"""The synthetic experiment's specification, and its grid run into the store.

A run is identified by a hash of its specification, so re-running the same command
resumes an interrupted run (see :mod:`dcem.store.grid`).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Callable

from dcem.calibration.risk_control import RiskTarget, check_risk_target, put_risk_target
from dcem.core.config import MediatorConfig
from dcem.core.results import ScenarioResult
from dcem.core.vocabulary import SCENARIOS
from common.errors import ConfigError
from common.fields import Number, OneOf, Seq, Spec, ToFloat, Whole
from dcem.store.database import Store
from common.work import Executor, WorkSummary
from dcem.store.grid import GridPlan, Progress, run_grid

__all__ = ["SyntheticSpec", "SyntheticJob", "run_synthetic", "WORLDS", "WORLD_NAMES", "WORLD_REPORTS", "COMPLIANCE",
           "COMPLIANCE_NAMES"]

# Named worlds: the specification's agents (p ∝ exp(s), App. B.7) and the sharpened
# variant whose agent accuracies come close to the ones Table 5 reports.
# The MAP world reads App. B.7's "the agent reports the MAP label" literally (App. D.1 says
# it samples): reports are the label of largest score, so the sharpness does not matter.
WORLDS = {"seed": 1.0, "sharpened": 3.0, "map": 1.0}
WORLD_NAMES = {"seed": "specification (exp(s))", "sharpened": "sharpened (exp(3 s))",
               "map": "MAP reports (argmax s)"}
WORLD_REPORTS = {"seed": "sample", "sharpened": "sample", "map": "map"}
# Compliance models (kept here too so the spec does not import the numpy world).
COMPLIANCE = ("adopt", "blend")
COMPLIANCE_NAMES = {"adopt": "adopt with probability xi (eq. 21)", "blend": "blend by xi (eq. 19)"}


def _at_least(low: int) -> Whole:
    return Whole(low, msg="must be an integer >= {low}, got {value!r}")


_FINITE = (Number(finite=True), ToFloat())
_SPEC = Spec({
    "seeds": Seq(Whole(0), min_len=1, types=(list, tuple, range, set, frozenset), msg="need at least one non-negative integer seed"),
    "xi": Number(0, 1, msg="compliance must lie in [0, 1], got {value}"),
    "sharpness": (*_FINITE, Number(0, closed="neither", msg="must be > 0, got {value}")),
    "kappa": (*_FINITE, Number(0, msg="must be >= 0, got {value}")),
    "reports": OneOf(("sample", "map"), msg="must be sample or map, got {value!r}"),
    "compliance": OneOf(COMPLIANCE),
    "t_max": _at_least(1), "free_rounds": _at_least(1), "n_train": _at_least(200), "n_eval": _at_least(1),
})


@dataclass(frozen=True)
class SyntheticSpec:
    """What a synthetic experiment runs: the grid and the shared settings.

    sharpness, kappa and compliance are the world's named parameters (see
    :mod:`dcem.synthetic.rule_agents`): 1.0 / 1.0 / "adopt" is the specification's world;
    ``sharpness=3.0`` is the "sharpened" variant and ``reports="map"`` the MAP world
    (:data:`WORLDS`); reports : ``sample`` (App. D.1) or ``map`` (App. B.7).  risk_target :
    None fits the thresholds by eq. (1); a :class:`~dcem.calibration.risk_control.RiskTarget`
    chooses them by Learn-then-Test on the same tuning cases (a guarantee, not an average).
    """

    scenarios: tuple[str, ...] = SCENARIOS
    seeds: tuple[int, ...] = tuple(range(10))
    xi: float = 1.0
    t_max: int = 12
    free_rounds: int = 22
    n_train: int = 20000
    n_eval: int = 100
    ablation: bool = True
    sharpness: float = 1.0
    kappa: float = 1.0
    compliance: str = "adopt"
    reports: str = "sample"
    base_config: MediatorConfig = field(default_factory=lambda: MediatorConfig(prior="empirical"))
    risk_target: RiskTarget | None = None

    def __post_init__(self) -> None:
        if not self.scenarios:
            raise ConfigError("scenarios", "choose at least one scenario")
        bad = [s for s in self.scenarios if s not in SCENARIOS]
        if bad:
            raise ConfigError("scenarios", f"unknown scenario {bad[0]!r} (known: {', '.join(SCENARIOS)})")
        if len(set(self.scenarios)) != len(self.scenarios):
            raise ConfigError("scenarios", "a scenario is listed twice")
        _SPEC.apply(self, "seeds", "xi", "sharpness", "kappa", "reports", "compliance")
        check_risk_target(self.risk_target)
        _SPEC.apply(self, "t_max", "free_rounds", "n_train", "n_eval")

    def to_dict(self) -> dict[str, object]:
        d = asdict(self)
        d["scenarios"], d["seeds"] = list(self.scenarios), list(self.seeds)
        d["base_config"] = self.base_config.to_dict()
        if self.reports == "sample":  # the worlds shipped before the MAP world keep their run ids
            d.pop("reports")
        put_risk_target(d, self.risk_target)
        return d

    def run_id(self) -> str:
        blob = json.dumps(self.to_dict(), sort_keys=True).encode()
        return "syn-" + hashlib.sha256(blob).hexdigest()[:12]


@dataclass(frozen=True)
class SyntheticJob:
    """The synthetic grid's computation (picklable, so it runs on Ray too): a cell per unit."""

    spec: SyntheticSpec

    @property
    def key(self) -> str:
        return self.spec.run_id()

    def open(self, here: object = None) -> "SyntheticJob":
        return self

    def compute_unit(self, payload: tuple[str, int], tick: Callable[[], None]) -> ScenarioResult:
        from dcem.synthetic.experiment import run_cell  # the world is heavy; import on use

        spec = self.spec
        return run_cell(payload[0], payload[1], base_config=spec.base_config, xi=spec.xi, t_max=spec.t_max,
                        free_rounds=spec.free_rounds, n_train=spec.n_train, n_eval=spec.n_eval,
                        ablation=spec.ablation, sharpness=spec.sharpness, kappa=spec.kappa,
                        compliance=spec.compliance, reports=spec.reports, risk_target=spec.risk_target)


def run_synthetic(store: Store, spec: SyntheticSpec, *, run_id: str | None = None,
                  progress: Progress | None = None, cancel: Callable[[], bool] | None = None,
                  executor: Executor | None = None) -> WorkSummary:
    """Run every (scenario, seed) cell of ``spec`` not yet stored under ``run_id``.

    progress(done, total, label) is called after each cell (and once at the start);
    cancel() is polled between cells and stops the run cleanly when it returns True;
    executor : where the cells run (this process by default; :class:`common.ray_work.RayExecutor`).
    """
    plan = GridPlan(run_id=run_id or spec.run_id(), kind="synthetic", spec=spec.to_dict(), config=spec.base_config,
                    seeds=spec.seeds, cells=tuple((s, k) for s in spec.scenarios for k in spec.seeds))
    return run_grid(store, plan, SyntheticJob(spec), executor=executor, progress=progress, cancel=cancel)
