"""One (scenario, seed) cell of the rule-guided experiment (section 5.2-5.3, App. F).

Randomness: ``SeedSequence(seed)`` is spawned into independent streams, one per
purpose (training data, evaluation data, calibration reports, tuning reports, tuning
compliance, evaluation reports, evaluation compliance).  The data streams depend on
the seed only, so every scenario of a seed sees the same cases, and the training data
(hence confusions and fitted thresholds) do not depend on ``n_eval``.  Every
evaluation method builds its agents from the same evaluation stream, so their round-1
reports are the same draws (and later rounds share their Gumbel noise: common random
numbers).

Steps: generate ``n_train`` training and ``n_eval`` evaluation samples; split the
training part into a confusion-estimation part and a held-out tuning part (its last
``min(1000, n_train // 5)`` cases).  Confusions and calibration accuracies come from
round-1 reports on the estimation part; the thresholds are fitted on a live D-CEM run
over the tuning part; then every method runs on the evaluation cases, and the
partial-compliance ablation replays D-CEM at checkpoints.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from dcem.core.metrics import evaluate_run, single_agent_high_risk_miss
from dcem.calibration import fitting as calibration
from dcem.calibration.fitting import ALPHA, estimate_confusion, estimate_prior
from dcem.calibration.risk_control import RiskTarget, fit_risk_controlled
from dcem.core.baselines import fixed_pool, single_best
from dcem.core.config import MediatorConfig
from dcem.core.deliberation import deliberate
from dcem.core.panel import Panel
from dcem.core.policy import Action
from dcem.core.replay import score_reports
from dcem.core.results import METHODS, MethodRun, ScenarioResult
from dcem.core.steering import SteeringConfig, contrastive_template
from dcem.core.vocabulary import mediated_methods
from common.errors import InputError
from common.fields import Whole, check
from dcem.synthetic.free_discussion import free_discussion
from dcem.synthetic.generator import HIGH_RISK, LABELS, generate, rule_activations, synthetic_loss
from dcem.synthetic.rule_agents import AGENT_SHARPNESS, COMPLIANCE_MODELS, KAPPA, SCENARIO_NAMES, RuleAgents, agent_accuracy
from dcem.synthetic.rule_agents import scenario as build_scenario

__all__ = ["checkpoint_reading", "ABLATION_XI", "ABLATION_HORIZON", "CHECKPOINTS", "DEFAULT_CONFIG", "run_cell", "seed_streams"]

log = logging.getLogger(__name__)

ABLATION_XI = (0.25, 0.5, 0.75, 1.0)
ABLATION_HORIZON = 12
CHECKPOINTS = (4, 8, 12)
N_TUNE = 1000
# k0 is rare (about 21% of cases); a uniform prior inflates its posterior so much that
# the pooled Bayes decision is k0 for almost every report pair, hence the base rates.
DEFAULT_CONFIG = MediatorConfig(prior="empirical")

_STREAMS = ("data", "eval_data", "calibration", "tune", "tune_compliance", "eval", "eval_compliance")


def seed_streams(seed: int) -> dict[str, np.random.SeedSequence]:
    return dict(zip(_STREAMS, np.random.SeedSequence(seed).spawn(len(_STREAMS))))


def checkpoint_reading(panel: Panel, reports: np.ndarray, truth: np.ndarray, cfg: MediatorConfig,
                       horizon: int) -> dict[str, float]:
    """Table 5's reading of one fixed-horizon trajectory at round T = ``horizon`` (App. F).

    reports : int (N, >= T, A), the live run's label reports; truth : int (N,).
    At T (the App. F reading; the mediator's STOP signals do not end the run):
    ``A1..`` agent accuracies at round T, ``risk_at_T`` the mean loss of round T's pooled
    decision, ``escalation_at_T`` the share whose round-T signal is STOP_AND_ESCALATE
    (with the budget rule at T), ``sa_hr`` the larger single-agent high-risk miss rate
    at round T.  By T (a second view): ``risk`` and ``escalation_rate`` of the outcome
    reached by round T (the first terminal signal up to T, else the budget rule at T).
    """
    sc = score_reports(panel, reports[:, :horizon], cfg.with_changes(t_max=horizon))
    last = reports[:, horizon - 1]
    acc = agent_accuracy(last, truth)
    row: dict[str, float] = {f"A{a + 1}": float(acc[a]) for a in range(acc.shape[0])}
    row["risk_at_T"] = float(panel.loss[sc.decision[:, horizon - 1], truth].mean())
    row["escalation_at_T"] = float((sc.action[:, horizon - 1] == Action.STOP_AND_ESCALATE).mean())
    row["sa_hr"] = single_agent_high_risk_miss(last, truth, HIGH_RISK)
    row["risk"] = float(panel.loss[sc.outcome_decision, truth].mean())
    row["escalation_rate"] = float((sc.outcome_action == Action.STOP_AND_ESCALATE).mean())
    return row


def _ablation(panel: Panel, cfg: MediatorConfig, make_agents: Callable[[float], RuleAgents],
              truth: np.ndarray) -> list[dict[str, float]]:
    """Fixed-horizon D-CEM runs for each xi, read at the checkpoints (Appendix F)."""
    rows: list[dict[str, float]] = []
    live_cfg = cfg.with_changes(t_max=ABLATION_HORIZON)
    for xi in ABLATION_XI:
        run = deliberate(panel, make_agents(xi), live_cfg)
        for horizon in CHECKPOINTS:
            rows.append({"xi": xi, "horizon": horizon,
                         **checkpoint_reading(panel, run.reports, truth, cfg, horizon)})
    return rows


def _check_cell(scenario: str, seed: int, xi: float, n_train: int, n_eval: int) -> None:
    if scenario not in SCENARIO_NAMES:
        raise InputError("scenario", f"unknown scenario {scenario!r} (known: {', '.join(SCENARIO_NAMES)})")
    check("seed", seed, Whole(0, numpy=True, msg="must be a non-negative integer, got {value!r}"), error=InputError)
    if not 0.0 <= xi <= 1.0:
        raise InputError("xi", f"compliance must lie in [0, 1], got {xi}")
    if n_train < 10 or n_eval < 1:
        raise InputError("n_train", f"need n_train >= 10 and n_eval >= 1, got {n_train}, {n_eval}")


@dataclass(frozen=True, eq=False)
class _World:
    """A cell's data, calibration panel and agent factory (before thresholds are fitted)."""

    scenario: Any  # rule_agents.Scenario
    streams: dict[str, np.random.SeedSequence]
    train: Any  # generator.Cases
    est: Any
    tune: Any
    ev: Any
    panel: Panel
    cal_acc: np.ndarray
    steering: SteeringConfig
    template: np.ndarray | None
    sharpness: float
    kappa: float
    compliance: str
    reports: str

    def agents(self, features: np.ndarray, report_seq: np.random.SeedSequence,
               comp_seq: np.random.SeedSequence, xi: float) -> RuleAgents:
        return RuleAgents(self.scenario, features, np.random.default_rng(report_seq),
                          compliance_rng=np.random.default_rng(comp_seq), steering=self.steering, xi=xi,
                          template=self.template, sharpness=self.sharpness, kappa=self.kappa,
                          compliance=self.compliance, reports=self.reports)

    def eval_agents(self, xi: float) -> RuleAgents:
        return self.agents(self.ev.features, self.streams["eval"], self.streams["eval_compliance"], xi)


def _world(scenario: str, seed: int, base: MediatorConfig, steer_cfg: SteeringConfig, n_train: int,
           n_eval: int, *, sharpness: float, kappa: float, compliance: str, reports: str) -> _World:
    """Generate the data, calibrate on round-1 reports of the estimation part."""
    scen = build_scenario(scenario)
    streams = seed_streams(int(seed))
    train = generate(n_train, np.random.default_rng(streams["data"]))
    ev = generate(n_eval, np.random.default_rng(streams["eval_data"]))
    n_tune = min(N_TUNE, n_train // 5)
    est, tune = train.subset(slice(0, n_train - n_tune)), train.subset(slice(n_train - n_tune, None))
    # calibration: round-1 behaviour of the unsteered agents on the estimation part
    cal_reports = RuleAgents(scen, est.features, np.random.default_rng(streams["calibration"]),
                             sharpness=sharpness, reports=reports).report(1)
    k = len(LABELS)
    panel = Panel(LABELS, estimate_confusion(est.labels, cal_reports, k, alpha=ALPHA),
                  estimate_prior(est.labels, k, base.prior, alpha=ALPHA), synthetic_loss())
    template = None
    if steer_cfg.reference == "template":
        template = contrastive_template(rule_activations(est.features, scen.rules), est.labels,
                                        scen.consequent, k, steer_cfg)
    return _World(scen, streams, train, est, tune, ev, panel, agent_accuracy(cal_reports, est.labels),
                  steer_cfg, template, sharpness, kappa, compliance, reports)


def _methods(world: _World, cfg: MediatorConfig, xi: float, free_rounds: int) -> dict[str, MethodRun]:
    """Every method on the evaluation cases, evaluated against the truth."""
    panel, truth = world.panel, world.ev.labels
    first = world.eval_agents(xi).report(1)
    runs: dict[str, MethodRun] = {
        "single": single_best(first, world.cal_acc),
        "free": free_discussion(panel, world.eval_agents(xi), cfg, rounds=free_rounds),
        "pool": fixed_pool(panel, first, world.cal_acc, cfg),
    }
    for method, escalates in mediated_methods().items():
        runs[method] = deliberate(panel, world.eval_agents(xi), cfg.with_changes(escalation=escalates),
                                  method=method)
    return {m: evaluate_run(runs[m], truth=truth, loss=panel.loss, high_risk=HIGH_RISK) for m in METHODS}


def _info(world: _World, fit_report: dict[str, Any], xi: float, free_rounds: int) -> dict[str, Any]:
    k, steer_cfg = len(LABELS), world.steering
    info: dict[str, Any] = {
        "calibration_accuracy": [float(v) for v in world.cal_acc],
        "n_estimation": len(world.est), "n_tuning": len(world.tune), "n_eval": len(world.ev),
        "class_rates_train": [float(v) for v in np.bincount(world.train.labels, minlength=k) / len(world.train)],
        "threshold_fit": fit_report, "xi": xi, "free_rounds": free_rounds,
        "sharpness": world.sharpness, "kappa": world.kappa, "compliance": world.compliance,
        **({"reports": world.reports} if world.reports != "sample" else {}),
        "steering": {f: getattr(steer_cfg, f) for f in steer_cfg.__dataclass_fields__},
        "rule_names": list(world.scenario.rule_names),
        "initial_weights": world.scenario.weights.tolist(),
    }
    if world.template is not None:
        info["template"] = world.template.tolist()
    return info


def run_cell(scenario: str, seed: int, *, base_config: MediatorConfig | None = None,
             xi: float = 1.0, t_max: int = 12, free_rounds: int = 22, n_train: int = 20000,
             n_eval: int = 100, ablation: bool = True, fit_thresholds: bool = True,
             steering: SteeringConfig | None = None, kappa: float = KAPPA,
             sharpness: float = AGENT_SHARPNESS, compliance: str = "adopt", reports: str = "sample",
             c_esc: float = calibration.C_ESC, c_round: float = calibration.C_ROUND,
             risk_target: RiskTarget | None = None) -> ScenarioResult:
    """Run every method of one (scenario, seed) cell.

    Parameters
    ----------
    scenario : "S1", "S2", "S3a" or "S3b"
    seed : non-negative int
    base_config : starting mediator configuration (default :data:`DEFAULT_CONFIG`);
        its prior mode is used, its thresholds are the start of the fit
    xi : compliance of the main D-CEM runs (eq. 21)
    t_max : round budget of the mediated methods; free_rounds : free-discussion length
    n_train, n_eval : sample counts; ablation : run the xi sweep; fit_thresholds : fit
        eps_safe, eps_low, m_safe, delta on the tuning part (else keep base_config's)
    steering : SteeringConfig (defaults if None)
    kappa : peer influence of an exchange round (free discussion and D-CEM's CONTINUE)
    sharpness : the agents' inverse temperature (1.0 = App. B.7; 3.0 = the sharpened variant)
    compliance : "adopt" (eq. 21) or "blend" (eq. 19)
    reports : "sample" (App. D.1) or "map" (App. B.7's MAP label)
    c_esc, c_round : escalation and per-round costs of the threshold objective (eq. 1)
    risk_target : choose the thresholds by Learn-then-Test on the tuning part instead of
        eq. (1) (:func:`dcem.calibration.risk_control.fit_risk_controlled`)

    Returns a :class:`ScenarioResult` whose ``methods`` is keyed by ``METHODS``.
    """
    _check_cell(scenario, seed, xi, n_train, n_eval)
    base = (base_config or DEFAULT_CONFIG).with_changes(t_max=t_max)
    if compliance not in COMPLIANCE_MODELS:
        raise InputError("compliance", f"must be one of {', '.join(COMPLIANCE_MODELS)}, got {compliance!r}")
    world = _world(scenario, seed, base, steering or SteeringConfig(), n_train, n_eval,
                   sharpness=sharpness, kappa=kappa, compliance=compliance, reports=reports)
    cfg, fit_report = base, {}
    if fit_thresholds:
        tune_agents = world.agents(world.tune.features, world.streams["tune"], world.streams["tune_compliance"], xi)
        tune_reports = deliberate(world.panel, tune_agents, base).reports
        if risk_target is None:
            fit = calibration.fit_thresholds(world.panel, tune_reports, world.tune.labels, base, c_esc=c_esc,
                                             c_round=c_round)
            cfg, fit_report = fit.config, fit.report
        else:
            ltt = fit_risk_controlled(world.panel, tune_reports, world.tune.labels, base, risk_target, HIGH_RISK)
            cfg, fit_report = ltt.config, ltt.report
    methods = _methods(world, cfg, xi, free_rounds)
    rows = _ablation(world.panel, cfg, world.eval_agents, world.ev.labels) if ablation else []
    log.info("cell %s/seed %d: dcem acc %.2f risk %.2f esc %.2f", scenario, seed,
             methods["dcem"].metrics["accuracy"], methods["dcem"].metrics["risk"],
             methods["dcem"].metrics["escalation_rate"])
    case_ids = tuple(f"{scenario}-s{seed}-{i:03d}" for i in range(len(world.ev)))
    return ScenarioResult(scenario, int(seed), world.panel, cfg, case_ids, world.ev.labels, world.ev.features,
                          HIGH_RISK, methods, rows, _info(world, fit_report, xi, free_rounds))
