"""What a clinical LLM experiment runs: :class:`ClinicalSpec`, frozen, checked, hashed to its run id.

A run is one dataset, a set of scenarios and seeds, the panel's members (two or more:
model keys, or ``stat`` / ``stat:KIND`` for a statistical agent) and the protocol
settings; its id hashes that specification (not the machine settings such as GPU offload
or threads), so the same command resumes.  A cell reads its settings from the spec itself.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field

from clinical.datasets import DATASETS, FILE_PREFIX, is_file_dataset, known_dataset
from common.errors import ConfigError
from common.fields import Field, Flag, Instance, Number, OneOf, Seq, Spec, Text, Whole
from dcem.calibration.fitting import DELTA_RULES
from dcem.calibration.risk_control import RiskTarget, check_risk_target, put_risk_target
from dcem.core.config import MediatorConfig
from dcem.core.vocabulary import SCENARIOS
from dcem_clinical.agent import MODES
from dcem_clinical.few_shot import FewShotConfig
from dcem_clinical.prompts import AGENT_FIRST, check_layout
from dcem_clinical.stat_agent import is_stat_key, stat_key_help, stat_member
from dcem_clinical.stat_dialogue import StatDialogue
from dcem_clinical.stat_views import split_view

__all__ = ["ClinicalSpec", "CaseFileRef", "DEFAULT_AGENTS", "MAX_AGENTS"]

DEFAULT_AGENTS = ("smollm2-135m", "gemma3-270m")
MAX_AGENTS = 8


def _members_message(value: object) -> str:
    try:
        given = repr(list(value))  # type: ignore[call-overload]
    except TypeError:
        given = repr(value)
    return (f"give 2 to {MAX_AGENTS} members MEMBER_A,MEMBER_B[,...] (model keys or statistical agents: "
            f"{stat_key_help()}), got {given}")


_MEMBERS = Seq(Text(), min_len=2, max_len=MAX_AGENTS, to_tuple=True, msg=_members_message)
_SPEC = Spec({
    "seeds": Seq(Whole(0), min_len=1, types=(list, tuple, range, set, frozenset), msg="need at least one non-negative integer seed"),
    "n_cal": Field((Whole(1),), optional=True), "n_test": Field((Whole(1),), optional=True),
    "agents": _MEMBERS,
    "mode": OneOf(MODES, msg="must be one of {options}, got {value!r}"),
    "temperature": Number(0.0, 2.0, msg="must lie in [0, 2], got {value}"),
    "free_rounds": Whole(1, msg="must be an integer >= 1, got {value!r}"),
    "n_ctx": Whole(256, msg="must be an integer >= 256, got {value!r}"),
    "stop_when_decided": Flag(),
    "stat_dialogue": Field((Instance(StatDialogue, msg="must be a StatDialogue or None, got {value!r}"),), optional=True),
    "delta_rule": OneOf(DELTA_RULES),
})


@dataclass(frozen=True)
class CaseFileRef:
    """What a run on a researcher's case file records of it: the file's name and sha256,
    and the labels, high-risk classes and loss it was read with.  The run id hashes all but
    the sha256, which is compared on a resume instead (a changed file is refused)."""

    file: str
    sha256: str
    labels: tuple[str, ...]
    high_risk: tuple[int, ...]
    loss: tuple[tuple[float, ...], ...]
    views: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, object]:
        return {"file": self.file, "sha256": self.sha256, "labels": list(self.labels),
                "high_risk": list(self.high_risk), "loss": [list(r) for r in self.loss], "views": list(self.views)}


def _case_file_ref(dataset: str) -> CaseFileRef:
    found = known_dataset(dataset)
    if found is None:
        raise ConfigError("dataset", f"the case file {dataset[len(FILE_PREFIX):]} is not loaded: give it again "
                                     "(--dataset PATH, or upload it on the Experiments page)")
    return CaseFileRef(dataset[len(FILE_PREFIX):], found.sha256, found.labels, found.high_risk,
                       tuple(tuple(float(x) for x in row) for row in found.loss), found.views)


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
    left out of the run id when ``fitted``); risk_target : None fits the thresholds on CAL
    by eq. (1); a :class:`~dcem.calibration.risk_control.RiskTarget` chooses them by
    Learn-then-Test on the same CAL trajectories (left out of the run id when None).
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
    risk_target: RiskTarget | None = None
    base_config: MediatorConfig = field(default_factory=lambda: MediatorConfig(prior="empirical", t_max=6))
    case_file: CaseFileRef | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        if is_file_dataset(self.dataset):  # a researcher's case file, read in this process
            object.__setattr__(self, "case_file", _case_file_ref(self.dataset))
        elif self.dataset not in DATASETS:
            raise ConfigError("dataset", f"unknown dataset {self.dataset!r} (known: {', '.join(DATASETS)} or a "
                                         "case file)")
        if not self.scenarios or any(s not in SCENARIOS for s in self.scenarios):
            raise ConfigError("scenario", f"choose from {', '.join(SCENARIOS)}, got {list(self.scenarios)}")
        if len(set(self.scenarios)) != len(self.scenarios):
            raise ConfigError("scenario", "a scenario is listed twice")
        _SPEC.apply(self, "seeds", "n_cal", "n_test")
        self._check_agents()
        _SPEC.apply(self, "mode", "temperature", "free_rounds", "n_ctx")
        FewShotConfig(k=self.few_shot_k, n_ctx=self.n_ctx)  # checks few_shot_k
        _SPEC.apply(self, "stop_when_decided")
        check_layout(self.layout)
        _SPEC.apply(self, "stat_dialogue")
        check_risk_target(self.risk_target)
        _SPEC.apply(self, "delta_rule")
        if not any(is_stat_key(a) for a in self.agents):  # no statistical member: nothing to say
            object.__setattr__(self, "stat_dialogue", None)

    def _check_agents(self) -> None:
        _SPEC.apply(self, "agents")
        for key in self.agents:
            if is_stat_key(key):
                stat_member(key, self.dataset)  # a clear error for a bad statistical agent
            else:
                split_view(key, self.dataset)  # a clear error for a view the dataset lacks

    def to_dict(self) -> dict[str, object]:
        d = asdict(self)
        d["scenarios"], d["seeds"], d["agents"] = list(self.scenarios), list(self.seeds), list(self.agents)
        if self.case_file is None:  # the shipped datasets: the run ids of earlier specs stay as they were
            d.pop("case_file")
        else:
            d["case_file"] = self.case_file.to_dict()
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
        put_risk_target(d, self.risk_target)
        return d

    def run_id(self) -> str:
        d = self.to_dict()
        if isinstance(d.get("case_file"), dict):  # a changed file is refused on resume, not a new run
            d["case_file"] = {k: v for k, v in d["case_file"].items() if k != "sha256"}
        blob = json.dumps(d, sort_keys=True).encode()
        return "llm-" + hashlib.sha256(blob).hexdigest()[:12]

    @property
    def member_views(self) -> tuple[str, ...]:
        """Per member, the view it reads (``all``: the whole case; :mod:`dcem_clinical.stat_views`)."""
        return tuple(split_view(a, self.dataset)[1] for a in self.agents)
