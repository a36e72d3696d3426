"""One (scenario, seed) cell of the clinical LLM experiment (section 5.4, Appendix H.1).

Protocol, per seed:

1. Draw the class-stratified CAL/TEST split of the seed.
2. CAL: both agents classify every CAL case once (round 1, no note).  Their argmax
   labels give the confusion matrices (alpha = 0.5 smoothing), the calibration
   accuracies and the prior.  Then D-CEM deliberates over CAL for ``t_max`` rounds and
   the thresholds (eps_safe, eps_low, m_safe, delta) are fitted on those trajectories by
   the eq. (1) objective.  Everything is frozen for TEST.
3. TEST: D-CEM and D-CEM without escalation deliberate live (``t_max`` rounds, fixed
   horizon; the outcome is the first terminal action; with ``stop_when_decided`` a case's
   agents are asked nothing after that action and its later rounds repeat its last
   reports, see :func:`dcem.core.deliberation.deliberate`); Free discussion plays
   ``free_rounds`` rounds in which each agent sees the other's previous answer and
   decides by the log-pool Bayes decision of its last round; Single is the CAL-best
   agent's round-1 answer; Pool is the one-shot fixed-weight log pool of round 1.

Every agent call goes through the call log (:mod:`dcem_clinical.call_log`): the round-1 prompts of
every method are identical, so Single, Pool and both D-CEM variants share them, and
re-running a cell makes no model call.  A panel has two or more members; a member is an
LLM backend or a :class:`~dcem_clinical.stat_agent.StatMember`, a statistical classifier
fit here on the seed's CAL cases only (TEST cases are read only when answered).  A reply
that cannot be used counts in
``parse_error_rate``; a failed call (e.g. a case longer than the context) reports the
uniform vector for that turn and counts too.
"""
from __future__ import annotations

import time
from dataclasses import replace
from typing import Any, Callable, Sequence

import numpy as np

from clinical.datasets import ClinicalCase, ClinicalDataset
from dcem.core.metrics import evaluate_run
from dcem.calibration.fitting import ALPHA, ThresholdGrid, estimate_confusion, estimate_prior, fit_thresholds
from dcem.calibration.risk_control import fit_risk_controlled
from dcem.core.baselines import best_agent, fixed_pool_probabilities, pooled_decision_probabilities, single_best
from dcem.core.config import MediatorConfig
from dcem.core.deliberation import deliberate
from dcem.core.panel import Panel
from dcem.core.policy import Action
from dcem.core.results import METHODS, MethodRun, ScenarioResult, decided_run
from dcem.core.vocabulary import mediated_methods
from common.errors import InputError
from dcem.store.database import Store
from dcem.synthetic.rule_agents import agent_accuracy
from dcem_clinical.agent import DiagnosticAgent
from dcem_clinical.call_log import PanelMember
from dcem_clinical.informed import RecordingAgent, make_few_shot
from dcem_clinical.panel import FreeTalkPanel, LlmPanel
from dcem_clinical.roles import scenario_leanings, scenario_roles
from dcem_clinical.stat_agent import StatAgent, StatMember, fit_stat_agent
from dcem_clinical.stat_views import ALL, case_view_text
from dcem_clinical.spec import ClinicalSpec
from runtime.backends import Backend
from runtime.messages import GenerationOptions

__all__ = ["agent_names", "Member", "run_clinical_cell", "action_mix", "turns_per_cell"]

Member = Backend | StatMember  # an LLM backend, or a statistical agent fit per cell
MIX_NAMES = {Action.CONTINUE: "mix_continue", Action.DIFFERENTIAL_STEER: "mix_steer",
             Action.STOP_AND_DECIDE: "mix_decide", Action.STOP_AND_ESCALATE: "mix_escalate"}


def turns_per_cell(n_cal: int, n_test: int, n_agents: int, t_max: int, free_rounds: int) -> int:
    """Upper bound of agent turns in a cell (for progress bars; cache hits count too)."""
    return n_agents * (n_cal * (1 + t_max) + n_test * (2 * t_max + free_rounds))


def action_mix(action: np.ndarray, outcome_round: np.ndarray) -> dict[str, float]:
    """Share of each mediator action among the rounds played up to each outcome."""
    played = np.arange(action.shape[1])[None, :] < np.asarray(outcome_round)[:, None]
    acts = action[played]
    total = max(int(acts.size), 1)
    return {name: float((acts == code).sum() / total) for code, name in MIX_NAMES.items()}


def agent_names(n: int) -> tuple[str, ...]:
    """Agent A, Agent B, ... for a panel of ``n`` (at most 26)."""
    if not 1 <= n <= 26:
        raise InputError("agents", f"a panel has 1 to 26 members, got {n}")
    return tuple(f"Agent {chr(ord('A') + a)}" for a in range(n))


def _error_rate(turns: list[dict[str, Any]]) -> float:
    return float(np.mean([t["error"] is not None for t in turns])) if turns else 0.0


def _evaluated(run: MethodRun, turns: list[dict[str, Any]], truth: np.ndarray, dataset: ClinicalDataset,
               extra: dict[str, float] | None = None) -> MethodRun:
    """``run`` with its turns and metrics, the parse-error rate among them."""
    metrics = {"parse_error_rate": _error_rate(turns), **(extra or {})}
    return evaluate_run(replace(run, turns=turns), truth=truth, loss=dataset.loss, high_risk=dataset.high_risk,
                        extra=metrics)


class _Cell:
    """One cell's cases, agents and panels: builds the LLM panels every method runs on."""

    def __init__(self, store: Store, run_id: str, dataset: ClinicalDataset, scenario: str, seed: int,
                 backends: Sequence[Member], settings: ClinicalSpec, progress: Callable[[], None] | None) -> None:
        self.cal, self.test, self.notes = dataset.split(seed, settings.n_cal, settings.n_test)
        if not self.cal or not self.test:
            raise InputError("cases", f"the split of seed {seed} left CAL {len(self.cal)} / TEST "
                             f"{len(self.test)} cases")
        self.run_id, self.scenario, self.seed, self.progress = run_id, scenario, seed, progress
        self.dataset, self.settings = dataset, settings
        self.roles = scenario_roles(dataset.name, scenario, len(backends))
        self.leanings = scenario_leanings(dataset.name, scenario, len(backends))
        self.agents = self._members(store, backends)

    def _members(self, store: Store, members: Sequence[Member]) -> list[PanelMember]:
        """One panel member per entry: LLM agents with their roles, statistical agents fit on CAL."""
        names, settings = agent_names(len(members)), self.settings
        # greedy decoding does not use the seed: keep it fixed so a case shared by two seeds is cached
        options = GenerationOptions(temperature=settings.temperature,
                                    seed=self.seed if settings.temperature > 0 else 0)
        out: list[PanelMember] = []
        few_shot = make_few_shot(self.cal, settings.few_shot_k, settings.n_ctx)
        for a, member in enumerate(members):
            if isinstance(member, StatMember):
                out.append(fit_stat_agent(member, self.dataset, store, name=names[a], role=self.roles[a],
                                          cal=self.cal, cal_ids=self.ids(self.cal, "cal"), others=self.test,
                                          other_ids=self.ids(self.test, "test"),
                                          rng=np.random.default_rng(self.seed), leaning=self.leanings[a],
                                          dialogue=settings.stat_dialogue, n_agents=len(members)))
            else:
                out.append(RecordingAgent(DiagnosticAgent(member, self.dataset.labels, name=names[a],
                                                          role=self.roles[a], mode=settings.mode, options=options,
                                                          few_shot=few_shot, n_agents=len(members),
                                                          layout=settings.layout),
                                          store, run_id=self.run_id))
        return out

    def ids(self, cases: list[ClinicalCase], part: str) -> list[str]:
        return [f"{self.scenario}-s{self.seed}-{part}-{c.source_id}" for c in cases]

    def panel(self, part: str, cls: type[LlmPanel] = LlmPanel) -> LlmPanel:
        cases = self.cal if part == "cal" else self.test
        views = {a: v for a, v in enumerate(self.settings.member_views) if v != ALL
                 and not isinstance(self.agents[a], StatAgent)}
        own = {a: [case_view_text(self.dataset.name, v, c) for c in cases] for a, v in views.items()}
        return cls(self.agents, self.ids(cases, part), [c.text for c in cases], run_id=self.run_id,
                   progress=self.progress, member_texts=own)


def _calibrate(cell: _Cell) -> tuple[Panel, np.ndarray, Any, LlmPanel]:
    """CAL: confusions, prior and accuracies from round 1; thresholds fitted on a D-CEM run
    (by eq. 1, or by Learn-then-Test when the spec has a risk target).

    Returns (panel, calibration accuracies (A,), the threshold fit, the CAL panel).
    """
    k, base = len(cell.dataset.labels), cell.settings.base_config
    cal_truth = np.array([c.label for c in cell.cal])
    cal_labels = np.argmax(cell.panel("cal").report(1), axis=-1)
    cal_acc = agent_accuracy(cal_labels, cal_truth)
    panel = Panel(cell.dataset.labels, estimate_confusion(cal_truth, cal_labels, k, alpha=ALPHA),
                  estimate_prior(cal_truth, k, base.prior, alpha=ALPHA), cell.dataset.loss)
    cal_panel = cell.panel("cal")
    cal_run = deliberate(panel, cal_panel, base)
    assert cal_run.probabilities is not None
    target = cell.settings.risk_target
    if target is not None:  # Learn-then-Test on the same CAL trajectories
        ltt = fit_risk_controlled(panel, cal_run.reports, cal_truth, base, target, cell.dataset.high_risk,
                                  probabilities=cal_run.probabilities)
        return panel, cal_acc, ltt, cal_panel
    fit = fit_thresholds(panel, cal_run.reports, cal_truth, base, probabilities=cal_run.probabilities,
                         grid=ThresholdGrid(delta_rule=cell.settings.delta_rule))
    return panel, cal_acc, fit, cal_panel


def _mediated(cell: _Cell, panel: Panel, cfg: MediatorConfig, truth: np.ndarray
              ) -> tuple[dict[str, MethodRun], LlmPanel]:
    """D-CEM and D-CEM without escalation on TEST, live; also the D-CEM panel (its round-1
    answers serve the one-shot methods)."""
    runs: dict[str, MethodRun] = {}
    first_panel: LlmPanel | None = None
    for method, escalates in mediated_methods().items():
        llm = cell.panel("test")
        live = deliberate(panel, llm, cfg.with_changes(escalation=escalates), method=method,
                          stop_when_decided=cell.settings.stop_when_decided)
        assert live.trajectory is not None
        runs[method] = _evaluated(live, llm.turns, truth, cell.dataset,
                                  action_mix(live.trajectory.action, live.outcome_round))
        first_panel = first_panel or llm
    assert first_panel is not None
    return runs, first_panel


def _one_shot(panel: Panel, cfg: MediatorConfig, first_probs: np.ndarray, first_turns: list[dict[str, Any]],
              cal_acc: np.ndarray, truth: np.ndarray, dataset: ClinicalDataset) -> dict[str, MethodRun]:
    """Single (the CAL-best agent's round-1 answer) and the fixed-weight Pool of round 1."""
    best = best_agent(cal_acc)
    single = replace(single_best(np.argmax(first_probs, axis=-1), cal_acc), probabilities=first_probs[:, None])
    pool = fixed_pool_probabilities(panel, first_probs, cal_acc, cfg)
    return {"single": _evaluated(single, [t for t in first_turns if t["agent"] == best], truth, dataset),
            "pool": _evaluated(pool, first_turns, truth, dataset)}


def _free(cell: _Cell, panel: Panel, cfg: MediatorConfig, truth: np.ndarray) -> MethodRun:
    """Free discussion: ``free_rounds`` rounds, each agent told the other's previous answer."""
    free_panel = cell.panel("test", FreeTalkPanel)
    assert isinstance(free_panel, FreeTalkPanel)
    probs = free_panel.rounds(cell.settings.free_rounds)
    run = decided_run("free", np.argmax(probs, axis=-1), pooled_decision_probabilities(panel, probs[:, -1], cfg),
                      probs)
    return _evaluated(run, free_panel.turns, truth, cell.dataset)


def run_clinical_cell(store: Store, run_id: str, dataset: ClinicalDataset, scenario: str, seed: int,
                      backends: Sequence[Member], settings: ClinicalSpec,
                      progress: Callable[[], None] | None = None) -> ScenarioResult:
    """Run every method of one (scenario, seed) cell with the given members (two or more)."""
    started = time.perf_counter()
    cell = _Cell(store, run_id, dataset, scenario, seed, backends, settings, progress)
    panel, cal_acc, fit, cal_panel = _calibrate(cell)
    cfg, truth = fit.config, np.array([c.label for c in cell.test])
    runs, dcem_panel = _mediated(cell, panel, cfg, truth)
    first_probs = runs["dcem"].probabilities[:, 0]  # type: ignore[index]
    first_turns = [t for t in dcem_panel.turns if t["round"] == 1]
    runs.update(_one_shot(panel, cfg, first_probs, first_turns, cal_acc, truth, dataset))
    runs["free"] = _free(cell, panel, cfg, truth)
    info: dict[str, Any] = {
        "dataset": dataset.name, "roles": list(cell.roles), "agents": [m.info() for m in cell.agents],
        "calibration_accuracy": [float(v) for v in cal_acc], "best_agent": best_agent(cal_acc),
        "n_cal": len(cell.cal), "n_test": len(cell.test), "split_notes": cell.notes,
        "threshold_fit": fit.report, "free_rounds": settings.free_rounds, "mode": settings.mode,
        "temperature": settings.temperature, "stop_when_decided": settings.stop_when_decided,
        "cal_parse_error_rate": _error_rate(cal_panel.turns),
        "cues_listed": sum(len(v) for v in dcem_panel.cues.values()), "seconds": time.perf_counter() - started,
    }
    if any(v != ALL for v in settings.member_views):
        info["views"] = list(settings.member_views)
    n = len(cell.test)
    return ScenarioResult(scenario, int(seed), panel, cfg, tuple(cell.ids(cell.test, "test")), truth,
                          np.zeros((n, 0), dtype=np.int64), dataset.high_risk, {m: runs[m] for m in METHODS}, [],
                          info, tuple(c.text for c in cell.test), tuple(c.source_id for c in cell.test))
