"""One (scenario, seed) cell of the clinical LLM experiment (section 5.4, Appendix H.1).

Protocol, per seed:

1. Draw the class-stratified CAL/TEST split of the seed.
2. CAL: both agents classify every CAL case once (round 1, no note).  Their argmax
   labels give the confusion matrices (alpha = 0.5 smoothing), the calibration
   accuracies and the prior.  Then D-CEM deliberates over CAL for ``t_max`` rounds and
   the thresholds (eps_safe, eps_low, m_safe, delta) are fitted on those trajectories by
   the eq. (1) objective.  Everything is frozen for TEST.
3. TEST: D-CEM and D-CEM without escalation deliberate live (``t_max`` rounds, fixed
   horizon; the outcome is the first terminal action); Free discussion plays
   ``free_rounds`` rounds in which each agent sees the other's previous answer and
   decides by the log-pool Bayes decision of its last round; Single is the CAL-best
   agent's round-1 answer; Pool is the one-shot fixed-weight log pool of round 1.

Every agent call goes through the call log (:mod:`dcem_clinical.call_log`): the round-1 prompts of
every method are identical, so Single, Pool and both D-CEM variants share them, and
re-running a cell makes no model call.  A reply that cannot be used counts in
``parse_error_rate``; a failed call (e.g. a case longer than the context) reports the
uniform vector for that turn and counts too.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Sequence

import numpy as np

from dcem.core.baselines import fixed_pool_probabilities, pooled_decision_probabilities, single_best
from dcem.calibration.fitting import ALPHA, estimate_confusion, estimate_prior, fit_thresholds
from dcem.core.config import MediatorConfig
from dcem.core.deliberation import LiveRun, deliberate
from dcem.errors import InputError
from dcem.analysis.metrics import episode_metrics
from dcem.core.panel import Panel
from dcem.core.policy import Action
from dcem.core.results import METHODS, MethodRun, ScenarioResult
from dcem.synthetic.rule_agents import agent_accuracy
from dcem.store.database import Store
from runtime.backends import Backend
from dcem_clinical.call_log import LoggedAgent
from clinical.datasets import ClinicalCase, ClinicalDataset
from dcem_clinical.agent import DiagnosticAgent
from dcem_clinical.panel import FreeTalkPanel, LlmPanel
from runtime.messages import GenerationOptions
from dcem_clinical.roles import scenario_roles

__all__ = ["AGENT_NAMES", "CellSettings", "run_clinical_cell", "action_mix", "turns_per_cell"]

AGENT_NAMES = ("Agent A", "Agent B")
MIX_NAMES = {Action.CONTINUE: "mix_continue", Action.DIFFERENTIAL_STEER: "mix_steer",
             Action.STOP_AND_DECIDE: "mix_decide", Action.STOP_AND_ESCALATE: "mix_escalate"}


class CellSettings:
    """What a cell needs besides the data and the models (see :class:`dcem_clinical.run.ClinicalSpec`)."""

    def __init__(self, *, base_config: MediatorConfig, mode: str = "scored", temperature: float = 0.0,
                 free_rounds: int = 6, n_cal: int | None = None, n_test: int | None = None) -> None:
        self.base_config, self.mode, self.temperature = base_config, mode, temperature
        self.free_rounds, self.n_cal, self.n_test = free_rounds, n_cal, n_test


def turns_per_cell(n_cal: int, n_test: int, n_agents: int, t_max: int, free_rounds: int) -> int:
    """Upper bound of agent turns in a cell (for progress bars; cache hits count too)."""
    return n_agents * (n_cal * (1 + t_max) + n_test * (2 * t_max + free_rounds))


def action_mix(action: np.ndarray, outcome_round: np.ndarray) -> dict[str, float]:
    """Share of each mediator action among the rounds played up to each outcome."""
    played = np.arange(action.shape[1])[None, :] < np.asarray(outcome_round)[:, None]
    acts = action[played]
    total = max(int(acts.size), 1)
    return {name: float((acts == code).sum() / total) for code, name in MIX_NAMES.items()}


def _agents(store: Store, backends: Sequence[Backend], dataset: ClinicalDataset, scenario: str, seed: int,
            settings: CellSettings) -> list[LoggedAgent]:
    roles = scenario_roles(dataset.name, scenario)
    # greedy decoding does not use the seed: keep it fixed so a case shared by two seeds is cached
    options = GenerationOptions(temperature=settings.temperature,
                                seed=seed if settings.temperature > 0 else 0)
    return [LoggedAgent(DiagnosticAgent(b, dataset.labels, name=AGENT_NAMES[a], role=roles[a],
                                        mode=settings.mode, options=options), store)
            for a, b in enumerate(backends)]


def _method(method: str, reports: np.ndarray, probs: np.ndarray, action: np.ndarray, decision: np.ndarray,
            rounds: np.ndarray, certified: np.ndarray, budget: np.ndarray, truth: np.ndarray,
            dataset: ClinicalDataset, turns: list[dict[str, Any]], errors: float,
            features: dict[tuple[int, int], tuple[str, ...]] | None = None,
            extra: dict[str, float] | None = None) -> MethodRun:
    metrics = episode_metrics(decision, action, rounds, truth, dataset.loss, dataset.high_risk, certified)
    metrics["parse_error_rate"] = errors
    metrics.update(extra or {})
    return MethodRun(method, reports, action, decision, rounds, certified, budget, metrics, features or {},
                     probs, turns)


def _error_rate(turns: list[dict[str, Any]]) -> float:
    return float(np.mean([t["error"] is not None for t in turns])) if turns else 0.0


def run_clinical_cell(store: Store, run_id: str, dataset: ClinicalDataset, scenario: str, seed: int,
                      backends: Sequence[Backend], settings: CellSettings,
                      progress: Callable[[], None] | None = None) -> ScenarioResult:
    """Run every method of one (scenario, seed) cell with the given model backends."""
    started = time.perf_counter()
    cal, test, notes = dataset.split(seed, settings.n_cal, settings.n_test)
    if not cal or not test:
        raise InputError("cases", f"the split of seed {seed} left CAL {len(cal)} / TEST {len(test)} cases")
    agents = _agents(store, backends, dataset, scenario, seed, settings)
    k, base = len(dataset.labels), settings.base_config

    def ids(cases: list[ClinicalCase], part: str) -> list[str]:
        return [f"{scenario}-s{seed}-{part}-{c.source_id}" for c in cases]

    def panel_of(cases: list[ClinicalCase], part: str, cls: type[LlmPanel] = LlmPanel) -> LlmPanel:
        return cls(agents, ids(cases, part), [c.text for c in cases], run_id=run_id, progress=progress)

    # --- CAL: confusion, prior, accuracies from round 1; thresholds from a D-CEM run
    cal_truth = np.array([c.label for c in cal])
    cal_first = panel_of(cal, "cal").report(1)
    cal_labels = np.argmax(cal_first, axis=-1)
    cal_acc = agent_accuracy(cal_labels, cal_truth)
    panel = Panel(dataset.labels, estimate_confusion(cal_truth, cal_labels, k, alpha=ALPHA),
                  estimate_prior(cal_truth, k, base.prior, alpha=ALPHA), dataset.loss)
    cal_panel = panel_of(cal, "cal")
    cal_run = deliberate(panel, cal_panel, base)
    assert cal_run.probabilities is not None
    fit = fit_thresholds(panel, cal_run.reports, cal_truth, base, probabilities=cal_run.probabilities)
    cfg = fit.config

    # --- TEST
    truth = np.array([c.label for c in test])
    n = len(test)
    runs: dict[str, MethodRun] = {}
    live: dict[str, LiveRun] = {}
    panels: dict[str, LlmPanel] = {}
    for method, escalation in (("dcem", True), ("dcem_noesc", False)):
        panels[method] = panel_of(test, "test")
        live[method] = run = deliberate(panel, panels[method], cfg.with_changes(escalation=escalation))
        runs[method] = _method(method, run.reports, run.probabilities, run.outcome_action,
                               run.outcome_decision, run.outcome_round, run.outcome_certified,
                               run.outcome_budget, truth, dataset, panels[method].turns,
                               _error_rate(panels[method].turns), run.steer_features,
                               action_mix(run.action, run.outcome_round))
    first_probs = live["dcem"].probabilities[:, 0]  # type: ignore[index]
    first_turns = [t for t in panels["dcem"].turns if t["round"] == 1]
    ones, no = np.ones(n, dtype=np.int64), np.zeros(n, dtype=bool)
    decide = np.full(n, Action.STOP_AND_DECIDE, dtype=np.int8)
    single = single_best(np.argmax(first_probs, axis=-1), cal_acc)
    best = int(np.argmax(cal_acc))
    runs["single"] = _method("single", single.reports, first_probs[:, None], decide, single.decision, ones,
                             no, no, truth, dataset, [t for t in first_turns if t["agent"] == best],
                             _error_rate([t for t in first_turns if t["agent"] == best]))
    pool = fixed_pool_probabilities(panel, first_probs, cal_acc, cfg)
    runs["pool"] = _method("pool", pool.reports, first_probs[:, None], decide, pool.decision, ones, no, no,
                           truth, dataset, first_turns, _error_rate(first_turns))
    free_panel = panel_of(test, "test", FreeTalkPanel)
    assert isinstance(free_panel, FreeTalkPanel)
    free_probs = free_panel.rounds(settings.free_rounds)
    free_decision = pooled_decision_probabilities(panel, free_probs[:, -1], cfg)
    runs["free"] = _method("free", np.argmax(free_probs, axis=-1), free_probs, decide, free_decision,
                           np.full(n, settings.free_rounds, dtype=np.int64), no, no, truth, dataset,
                           free_panel.turns, _error_rate(free_panel.turns))
    methods = {m: runs[m] for m in METHODS}
    cues = sum(len(v) for v in panels["dcem"].cues.values())
    info: dict[str, Any] = {
        "dataset": dataset.name, "roles": list(scenario_roles(dataset.name, scenario)),
        "agents": [{"name": AGENT_NAMES[a], "model": b.model_id, "backend": b.name,
                    "model_sha256": b.model_sha256} for a, b in enumerate(backends)],
        "calibration_accuracy": [float(v) for v in cal_acc], "best_agent": best,
        "n_cal": len(cal), "n_test": n, "split_notes": notes, "threshold_fit": fit.report,
        "free_rounds": settings.free_rounds, "mode": settings.mode, "temperature": settings.temperature,
        "cal_parse_error_rate": _error_rate(cal_panel.turns),
        "cues_listed": cues, "seconds": time.perf_counter() - started,
    }
    return ScenarioResult(scenario, int(seed), panel, cfg, tuple(ids(test, "test")), truth,
                          np.zeros((n, 0), dtype=np.int64), dataset.high_risk, methods, [], info,
                          tuple(c.text for c in test), tuple(c.source_id for c in test))
