"""Thresholds with a guarantee: Learn-then-Test risk control of the mediator's decisions.

The eq. (1) fit (:func:`dcem.calibration.fitting.fit_thresholds`) finds thresholds that
are good on CAL on average; it promises nothing about new cases.  Learn-then-Test
(Angelopoulos, Bates, Candès, Jordan and Lei, 2021) turns threshold fitting into
multiple testing and gives a promise:

    with probability at least 1 - delta over the draw of the CAL cases, the chosen
    setting's rate on new cases from the same distribution is at most alpha.

The family of settings.  A single decision-energy level ``lam`` indexes it: the mediator
decides a case only when its energy is at most ``lam`` (``eps_safe = lam``, and
``eps_low`` just above ``lam``, so a budget decision also needs energy at most ``lam``;
above it the case keeps deliberating and escalates on stagnation or at the budget).
Every other field (``m_safe``, ``delta``, the weights, ``t_max``) comes from the base
configuration.  The grid of ``lam`` values is fixed before any data is seen (a
geometric grid, :data:`DEFAULT_LAMBDAS`), as LTT requires; larger ``lam`` decides more.

The controlled rates (``risk``):

* ``harmful_consensus``: the share of cases that end in a harmful consensus (a wrong,
  non-escalated decision on a high-risk truth; App. E's H.C.), a binary loss;
* ``harmful_among_decided``: the share of harmful consensus among the decided cases
  (App. E's "Certified", 1[u = DEC]); a conditional rate, tested on the decided cases
  only, so a setting that decides few cases cannot pass;
* ``system_risk``: R_L^sys = mean 1[u = DEC] L(d, y) (App. E's 1[u != ESC], where a
  trajectory that ran out of recorded rounds also counts as not decided), in the loss's
  units (bounded by the loss's largest entry, by which it is divided for the test).

Per setting the null hypothesis "the rate exceeds alpha" gets a Hoeffding-Bentkus
p-value (:func:`mapie.risk_control.methods.compute_hoeffding_bentkus_p_value`, the
binary form for the two harmful-consensus rates), and the family-wise error over the grid
is held at delta by MAPIE's :func:`~mapie.risk_control.control_fwer`: ``fixed_sequence``
tests the grid from the smallest ``lam`` up and stops at the first setting it cannot
reject (the natural order: deciding more can only add harmful decisions), and
``bonferroni`` tests every setting at delta / n.  A conditional rate is not monotone
along the grid (the first settings decide nothing), so it takes ``bonferroni`` only.
Among the settings that pass, the one that decides the most CAL cases is chosen (ties:
the smaller ``lam``).

What is ours: the family of mediator settings, the replay of every CAL trajectory under
each setting (:func:`dcem.core.replay.score_states` on states computed once) and the
per-case outcomes.  MAPIE's controllers take a classifier's scores and a binary
prediction per case; the mediator's outcome is a multi-round replay with three
possible ends, so we compute the empirical rates ourselves and hand MAPIE only the
p-values and the FWER step.  ``tests/dcem/test_risk_control.py`` checks, on a case both
can express, that MAPIE's own BinaryClassificationController finds the same p-values and
the same passing settings.

When no setting that decides at least one CAL case passes (too few CAL cases for the
promise, or alpha below what the panel can reach), the fit says so and returns the
configuration that escalates every case
(``guaranteed`` is then false and ``chosen_lambda`` None): it does not certify without a
guarantee.  The promise is about cases drawn like the CAL cases; it says nothing under a
shift of the case mix, the agents or the prompts.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from common.errors import InputError
from common.fields import Instance, Number, OneOf, Spec, check
from dcem.core.config import MediatorConfig
from dcem.core.panel import Panel
from dcem.core.policy import Action
from dcem.core.replay import score_states
from dcem.core.state import RoundState, assess_reports
from dcem.calibration.fitting import soft_states

__all__ = ["RISKS", "CONDITIONAL_RISKS", "FWER_METHODS", "DEFAULT_LAMBDAS", "RiskTarget", "SettingOutcomes",
           "RiskControlFit", "put_risk_target", "check_risk_target", "config_outcomes", "mediator_states", "decision_config", "escalate_all_config",
           "setting_outcomes", "subset_states", "empirical_risks", "outcome_rate", "ltt_test", "fit_risk_controlled",
           "select_setting"]

RISKS = ("harmful_consensus", "harmful_among_decided", "system_risk")
CONDITIONAL_RISKS = ("harmful_among_decided",)
FWER_METHODS = ("fixed_sequence", "bonferroni")
# decision-energy levels, fixed before any data: 121 geometric steps from 0.005 to 200 nats
# (about 26 per tenfold), wider than the energies of the synthetic and clinical panels
DEFAULT_LAMBDAS: tuple[float, ...] = tuple(float(v) for v in np.geomspace(5e-3, 200.0, 121))
_ABOVE = 1e-9  # eps_low sits this far (relatively) above eps_safe: the config needs eps_safe < eps_low
MAX_LAMBDAS = 1000


@dataclass(frozen=True)
class RiskTarget:
    """What to control and how surely: ``risk`` (one of :data:`RISKS`) at most ``alpha``
    with probability at least ``1 - delta``, family-wise error held by ``fwer`` over the
    grid ``lambdas`` (strictly increasing positive energies)."""

    risk: str = "harmful_consensus"
    alpha: float = 0.05
    delta: float = 0.1
    fwer: str = "fixed_sequence"
    lambdas: tuple[float, ...] = DEFAULT_LAMBDAS

    def __post_init__(self) -> None:
        _TARGET.apply(self)
        if self.risk in CONDITIONAL_RISKS and self.fwer != "bonferroni":
            raise InputError("fwer", f"{self.risk} is a rate among decided cases, not monotone along the grid: "
                             "use bonferroni")
        lams = np.asarray(self.lambdas, dtype=float)
        if lams.ndim != 1 or not 1 <= lams.size <= MAX_LAMBDAS or not np.all(np.isfinite(lams)) \
                or np.any(lams <= 0) or np.any(np.diff(lams) <= 0):
            raise InputError("lambdas", f"must be 1 to {MAX_LAMBDAS} strictly increasing positive energies")
        object.__setattr__(self, "lambdas", tuple(float(v) for v in lams))

    def to_dict(self) -> dict[str, Any]:
        return {"risk": self.risk, "alpha": self.alpha, "delta": self.delta, "fwer": self.fwer,
                "lambdas": list(self.lambdas)}


_LEVEL = Number(0, 1, closed="neither", finite=True, msg="must be a number strictly between 0 and 1, got {value!r}")
_TARGET = Spec({"risk": OneOf(RISKS), "alpha": _LEVEL, "delta": _LEVEL, "fwer": OneOf(FWER_METHODS)}, error=InputError)


def put_risk_target(spec: dict[str, object], target: RiskTarget | None) -> None:
    """A run spec's entry for ``target``: its dict, or no entry at all for the eq. (1) fit,
    so the run ids of eq. (1) runs stay as they were."""
    spec.pop("risk_target", None)
    if target is not None:
        spec["risk_target"] = target.to_dict()


def check_risk_target(target: object) -> None:
    """ConfigError unless ``target`` is a :class:`RiskTarget` or None (a spec's field)."""
    check("risk_target", target, Instance(RiskTarget, msg="must be a RiskTarget or None, got {type}"), optional=True)


def decision_config(base: MediatorConfig, lam: float) -> MediatorConfig:
    """The base configuration that decides only at energy at most ``lam``."""
    return base.with_changes(eps_safe=float(lam), eps_low=float(lam) * (1.0 + _ABOVE) + 1e-12)


def escalate_all_config(base: MediatorConfig) -> MediatorConfig:
    """The base configuration that decides no case (energy is positive) and so escalates
    every one: what a risk-controlled fit returns when no setting passes."""
    return base.with_changes(eps_safe=0.0, eps_low=1e-12)


@dataclass(frozen=True)
class SettingOutcomes:
    """Per-case outcomes of N cases under each of L settings, (L, N) each: ``decided``
    (STOP_AND_DECIDE), ``harmful`` (decided, wrong, high-risk truth) and ``loss``
    (1[u = DEC] L(d, y)); ``loss_bound`` the loss's largest entry.

    A recorded trajectory that ends before the setting's outcome (a run recorded with
    "stop when decided" replayed under a stricter setting) is PENDING: not decided, so it
    counts like an escalation, handed to a person."""

    decided: np.ndarray
    harmful: np.ndarray
    loss: np.ndarray
    loss_bound: float


def mediator_states(panel: Panel, reports: np.ndarray | None, probabilities: np.ndarray | None,
                    base: MediatorConfig) -> RoundState:
    """The mediator states of label reports (N, T, A) or probability reports (N, T, A, K),
    cut to ``base.t_max`` rounds; they do not depend on the thresholds."""
    if probabilities is not None:
        return soft_states(panel, probabilities, base)
    if reports is None:
        raise InputError("reports", "reports (or probabilities) are required")
    reports = np.asarray(reports)
    if reports.ndim != 3:
        raise InputError("reports", f"expected shape (cases, rounds, agents), got {reports.shape}")
    return assess_reports(panel, reports[:, : min(reports.shape[1], base.t_max)], base)


def subset_states(states: RoundState, cases: np.ndarray) -> RoundState:
    """The states of some cases (indices into the batch's first axis)."""
    return RoundState(*(f[cases] for f in states))


def setting_outcomes(panel: Panel, reports: np.ndarray | None, truth: np.ndarray, base: MediatorConfig,
                     lambdas: tuple[float, ...], high_risk: tuple[int, ...], *,
                     probabilities: np.ndarray | None = None, states: RoundState | None = None) -> SettingOutcomes:
    """Replay every case under every setting of ``lambdas`` (the mediator states are
    computed once, or taken from ``states``: they do not depend on the thresholds)."""
    if base.alpha == base.beta == base.gamma == 0:
        raise InputError("weights", "risk control orders the settings by energy, which is 0 for every case when "
                         "alpha, beta and gamma are all 0: make one of them positive")
    if states is None:
        states = mediator_states(panel, reports, probabilities, base)
    y = np.asarray(truth, dtype=np.intp)
    if y.ndim != 1 or y.shape[0] != states.energy.shape[0]:
        raise InputError("truth", f"{y.shape[0] if y.ndim == 1 else y.shape} labels for "
                         f"{states.energy.shape[0]} cases")
    if np.any((y < 0) | (y >= panel.n_labels)):
        raise InputError("truth", f"labels must lie in 0..{panel.n_labels - 1}")
    rows = [config_outcomes(panel, states, y, high_risk, decision_config(base, lam)) for lam in lambdas]
    return SettingOutcomes(*(np.stack([r[j] for r in rows]) for j in range(3)), float(panel.loss.max()))


def config_outcomes(panel: Panel, states: RoundState, truth: np.ndarray, high_risk: tuple[int, ...],
                    cfg: MediatorConfig) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(decided, harmful, loss) of each case, (N,) each, replayed under ``cfg``."""
    scored = score_states(states, cfg)
    dec = scored.outcome_action == Action.STOP_AND_DECIDE
    wrong = scored.outcome_decision != truth
    high = np.isin(truth, np.asarray(high_risk, dtype=np.intp))
    return dec, dec & wrong & high, dec * panel.loss[scored.outcome_decision, truth]


def outcome_rate(decided: np.ndarray, harmful: np.ndarray, loss: np.ndarray, risk: str) -> float:
    """The rate ``risk`` of one setting's per-case outcomes (:func:`config_outcomes`), in the
    loss's units for system risk (a conditional rate over no decided case is 0)."""
    if risk == "harmful_consensus":
        return float(harmful.mean())
    if risk == "system_risk":
        return float(loss.mean())
    return float(harmful.sum() / decided.sum()) if decided.any() else 0.0


def empirical_risks(outcomes: SettingOutcomes, risk: str,
                    cases: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(r_hat, n_obs)`` per setting over ``cases`` (indices; default all): the rate in
    [0, 1] (system risk divided by the loss bound) and the cases it was measured on."""
    pick = slice(None) if cases is None else np.asarray(cases)
    decided, harmful, loss = outcomes.decided[:, pick], outcomes.harmful[:, pick], outcomes.loss[:, pick]
    n = decided.shape[1]
    if risk == "harmful_consensus":
        return harmful.mean(axis=1) if n else np.zeros(len(decided)), np.full(len(decided), n)
    if risk == "system_risk":
        bound = outcomes.loss_bound if outcomes.loss_bound > 0 else 1.0
        return (loss.mean(axis=1) / bound) if n else np.zeros(len(decided)), np.full(len(decided), n)
    n_dec = decided.sum(axis=1)
    rate = np.divide(harmful.sum(axis=1), n_dec, out=np.zeros(len(decided)), where=n_dec > 0)
    return rate, n_dec


def ltt_test(r_hat: np.ndarray, n_obs: np.ndarray, alpha: float, delta: float, fwer: str, *,
             binary: bool) -> tuple[np.ndarray, np.ndarray]:
    """Hoeffding-Bentkus p-values of "rate > alpha" per setting and the indices of the
    settings rejected (rate controlled) with family-wise error at most delta.  A setting
    measured on no case gets p = 1."""
    from mapie.risk_control import control_fwer
    from mapie.risk_control.methods import compute_hoeffding_bentkus_p_value

    r_hat, n_obs = np.asarray(r_hat, dtype=float), np.asarray(n_obs, dtype=float)
    p = np.ones(r_hat.shape[0])
    seen = n_obs > 0
    if seen.any():
        p[seen] = compute_hoeffding_bentkus_p_value(r_hat[seen], n_obs[seen], alpha, binary=binary)[:, 0]
    p = np.minimum(p, 1.0)
    return p, np.asarray(control_fwer(p, delta, fwer_method=fwer), dtype=np.intp)


@dataclass(frozen=True)
class RiskControlFit:
    """The outcome of :func:`fit_risk_controlled`.

    config : the chosen setting (or the escalate-everything configuration);
    guaranteed : whether a setting passed; chosen_lambda : its decision energy (None when
    none passed); target : what was controlled; rows : one dict per setting (lam, rate,
    cases it was measured on, decided share, p-value, passed); report : JSON-ready summary.
    """

    config: MediatorConfig
    guaranteed: bool
    chosen_lambda: float | None
    target: RiskTarget
    rows: tuple[dict[str, Any], ...] = field(default_factory=tuple)
    report: dict[str, Any] = field(default_factory=dict)


def _alpha_scaled(target: RiskTarget, loss_bound: float) -> float:
    if target.risk != "system_risk":
        return target.alpha
    if loss_bound <= 0:
        raise InputError("loss", "system risk needs a loss with a positive entry")
    if target.alpha >= loss_bound:
        raise InputError("alpha", f"{target.alpha:g} is not below the loss's largest entry ({loss_bound:g}): "
                         "every setting would pass")
    return target.alpha / loss_bound


def fit_risk_controlled(panel: Panel, reports: np.ndarray | None, truth: np.ndarray, base: MediatorConfig,
                        target: RiskTarget, high_risk: tuple[int, ...], *,
                        probabilities: np.ndarray | None = None) -> RiskControlFit:
    """Learn-then-Test on CAL trajectories (label reports (N, T, A) or probability reports
    (N, T, A, K)) with their truths: the setting of ``target.lambdas`` that decides the
    most CAL cases among those whose ``target.risk`` is at most ``target.alpha`` with
    probability at least ``1 - target.delta``; see the module docstring."""
    if not base.escalation:
        raise InputError("escalation", "risk control chooses between deciding and escalating: escalation "
                         "must be enabled")
    outcomes = setting_outcomes(panel, reports, truth, base, target.lambdas, high_risk, probabilities=probabilities)
    return select_setting(outcomes, base, target)


def select_setting(outcomes: SettingOutcomes, base: MediatorConfig, target: RiskTarget,
                   cases: np.ndarray | None = None) -> RiskControlFit:
    """The LTT choice on precomputed outcomes (``cases``: the CAL cases among them)."""
    alpha = _alpha_scaled(target, outcomes.loss_bound)
    r_hat, n_obs = empirical_risks(outcomes, target.risk, cases)
    pick = slice(None) if cases is None else np.asarray(cases)
    share = outcomes.decided[:, pick].mean(axis=1) if outcomes.decided[:, pick].shape[1] else np.zeros(len(r_hat))
    p, passed = ltt_test(r_hat, n_obs, alpha, target.delta, target.fwer, binary=target.risk != "system_risk")
    ok = set(int(i) for i in passed)
    scale = outcomes.loss_bound if target.risk == "system_risk" else 1.0
    rows = tuple({"lam": lam, "rate": float(r_hat[i] * scale), "n_obs": int(n_obs[i]),
                  "decided_share": float(share[i]), "p_value": float(p[i]), "passed": i in ok}
                 for i, lam in enumerate(target.lambdas))
    useful = [i for i in ok if share[i] > 0]  # a setting that decides no CAL case promises nothing useful
    chosen = max(useful, key=lambda i: (share[i], -i)) if useful else None
    config = escalate_all_config(base) if chosen is None else decision_config(base, target.lambdas[chosen])
    lam = None if chosen is None else target.lambdas[chosen]
    report = {"method": "ltt", **target.to_dict(), "guaranteed": chosen is not None, "chosen_lambda": lam,
              "n_cases": int(outcomes.decided[:, pick].shape[1]), "passed": len(ok),
              "cal_rate": None if chosen is None else rows[chosen]["rate"],
              "cal_decided_share": 0.0 if chosen is None else rows[chosen]["decided_share"],
              "statement": _statement(target, lam)}
    return RiskControlFit(config, chosen is not None, lam, target, rows, report)


def _statement(target: RiskTarget, lam: float | None) -> str:
    names = {"harmful_consensus": "the share of cases ending in a harmful consensus",
             "harmful_among_decided": "the share of harmful consensus among decided cases",
             "system_risk": "the system risk R_L^sys"}
    if lam is None:
        return (f"No setting could be shown to keep {names[target.risk]} at most {target.alpha:g} with "
                f"probability {1 - target.delta:.0%} on these CAL cases: every case is escalated.")
    return (f"With probability at least {1 - target.delta:.0%} over the draw of the CAL cases, "
            f"{names[target.risk]} on new cases like them is at most {target.alpha:g} "
            f"(decision energy at most {lam:.4g}).")
