"""Multinomial-logit rule agents (Appendix B.7) and the four scenarios of Table 3.

A scenario lists each agent's rules ``a_k <- conjunction`` with weights.  We place both
agents in ONE shared rule space: the distinct rules of the scenario in order of first
appearance (agent 1's list, then agent 2's).  A rule held by both agents is one
coordinate.  An agent that lists the same rule twice (S2, agent 2: ``a2 <- x1 ∧ x3``
with 1.2 and 1.3) keeps two coordinates, the second named with a ``(#2)`` suffix; the
scores are the same as with one coordinate of weight 2.5, but steering can move the
two copies separately, as the table lists them separately.

Each agent a has weights ``w[a, r]`` (0 on rules it does not hold) and a mask ``held``.
Class scores ``s[a, k](x) = sum_r w[a, r] phi_r(x) [consequent_r = k]``; the agent's
distribution is ``p ∝ exp(s[a])`` (App. B.7) and it SAMPLES its report from it
(Gumbel-max, App. D.1).  Weights are copied per case, shape (N, A, R), because a steer
changes the weights of one agent in one case's episode only.

Rounds.  Round 1 is each agent alone.  Every later round is one round of the agents'
own exchange (the same for D-CEM's CONTINUE and for free discussion): each agent adds
``kappa`` to the score of every label its peers reported in the previous round
(``kappa / (A - 1)`` per peer) and samples again.  A DIFFERENTIAL_STEER additionally
changes the challenged agent's weights, through eq. (21) or eq. (19).

Two named parameters of the world are not in the specification's formulas:
``sharpness`` (inverse temperature, default 1.0 = the specification's ``exp(s)``) and
``kappa`` (default 1.0, a peer's report weighs about one fired rule).  Both act on the
rule-score scale: the sampled distribution is ``softmax(sharpness * (s + kappa * peers))``.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from dcem.core.deliberation import SteerRequest
from dcem.core.steering import (SteeringConfig, blend_compliance, comply, distinguishing_rules, recommend,
                                update_mask)
from dcem.core.vocabulary import SCENARIOS
from common.errors import InputError
from dcem.synthetic.generator import LABELS, Rule, rule_activations, rule_scores

__all__ = [
    "AGENT_SHARPNESS", "SHARPENED", "KAPPA", "COMPLIANCE_MODELS",
    "SCENARIO_NAMES", "SCENARIO_TABLE", "Scenario", "scenario", "sample_reports", "map_reports", "REPORT_RULES",
    "RuleAgents", "agent_accuracy", "describe",
]

log = logging.getLogger(__name__)

SCENARIO_NAMES = SCENARIOS  # the synthetic world defines every scenario of the vocabulary

_X = tuple[int, tuple[int, ...], tuple[int, ...], float]  # (label, positive, negative, weight)

# Table 3, agent 1 then agent 2.  (label index, plain features, negated features, weight)
SCENARIO_TABLE: dict[str, tuple[tuple[_X, ...], tuple[_X, ...]]] = {
    "S1": (
        ((1, (3, 4, 5), (), 1.4), (1, (6, 7, 9), (), 1.6), (2, (1, 3, 4), (), 1.7),
         (2, (4, 7, 9), (), 1.3), (0, (3, 4), (), 1.3)),
        ((0, (3, 4, 7), (9,), 1.5), (0, (0, 1, 3), (2,), 1.5), (1, (3, 4), (), 1.5),
         (2, (1, 3), (), 1.5)),
    ),
    "S2": (
        ((1, (3, 4, 5), (), 1.4), (1, (6, 7, 9), (), 1.6), (2, (1, 3, 4), (), 1.7),
         (0, (3, 4, 7), (9,), 1.5), (0, (0, 1, 3), (2,), 1.5)),
        ((2, (1, 3), (), 1.2), (2, (4, 7, 9), (), 1.7), (0, (3, 4), (), 1.5),
         (1, (3, 4), (), 1.5), (2, (1, 3), (), 1.3)),
    ),
    "S3a": (
        ((1, (3, 4, 5), (), 1.4), (1, (6, 7, 9), (), 1.6), (2, (1, 3, 4), (), 1.7),
         (0, (3, 4), (), 1.3), (2, (1, 3), (), 1.3)),
        ((2, (4, 7, 9), (), 1.3), (0, (3, 4, 7), (9,), 1.5), (0, (0, 1, 3), (2,), 1.5),
         (1, (3, 4), (), 1.3), (2, (1, 3), (), 1.0)),
    ),
    "S3b": (
        ((1, (6, 7, 9), (), 1.6), (0, (3, 4), (), 1.5), (1, (3, 4), (), 1.4),
         (2, (1, 3), (), 1.5)),
        ((2, (4, 7, 9), (), 1.3), (0, (3, 4), (), 1.5), (1, (3, 4), (), 1.4),
         (2, (1, 3), (), 1.1)),
    ),
}

_DESCRIPTIONS = {
    "S1": "Ideal: both agents reliable",
    "S2": "Asymmetric: one reliable agent, one weak agent",
    "S3a": "Noisy-complementary: both unreliable, errors partly offsetting",
    "S3b": "Noisy-non-complementary: both unreliable, shared bias",
}


@dataclass(frozen=True, eq=False)
class Scenario:
    """A pair (or panel) of rule agents in a shared rule space.

    Attributes
    ----------
    name : str; description : str
    rules : tuple of Rule, length R (the shared rule space)
    rule_names : tuple of str, length R (``"k0 <- x3 & x4"``, duplicates ``"... (#2)"``)
    weights : ndarray of shape (A, R), 0 on rules an agent does not hold
    held : bool ndarray of shape (A, R)
    labels : tuple of str, length K
    """

    name: str
    description: str
    rules: tuple[Rule, ...]
    rule_names: tuple[str, ...]
    weights: np.ndarray
    held: np.ndarray
    labels: tuple[str, ...] = field(default=LABELS)

    @property
    def consequent(self) -> np.ndarray:
        """Label index of every rule, int (R,)."""
        return np.array([r.consequent for r in self.rules], dtype=np.intp)

    @property
    def n_agents(self) -> int:
        return int(self.weights.shape[0])

    def agent_rules(self, a: int) -> list[tuple[str, float]]:
        """Agent a's held rules as (name, weight), in shared-space order."""
        return [(self.rule_names[r], float(self.weights[a, r])) for r in np.flatnonzero(self.held[a])]


def scenario(name: str) -> Scenario:
    """Build the shared rule space and weight table of scenario ``name`` (Table 3)."""
    if name not in SCENARIO_TABLE:
        raise InputError("scenario", f"unknown scenario {name!r} (known: {', '.join(SCENARIO_NAMES)})")
    agents = SCENARIO_TABLE[name]
    rules: list[Rule] = []
    names: list[str] = []
    entries: list[list[tuple[int, float]]] = []
    for spec in agents:
        own: list[tuple[int, float]] = []
        seen: dict[Rule, int] = {}
        for label, pos, neg, weight in spec:
            rule = Rule(label, pos, neg)
            copy = seen.get(rule, 0)
            seen[rule] = copy + 1
            # the c-th copy held by this agent maps to the c-th coordinate of this rule
            matches = [i for i, r in enumerate(rules) if r == rule]
            if copy < len(matches):
                idx = matches[copy]
            else:
                idx = len(rules)
                rules.append(rule)
                names.append(rule.name() + (f" (#{copy + 1})" if copy else ""))
            own.append((idx, weight))
        entries.append(own)
    weights = np.zeros((len(agents), len(rules)))
    held = np.zeros((len(agents), len(rules)), dtype=bool)
    for a, own in enumerate(entries):
        for idx, weight in own:
            weights[a, idx] = weight
            held[a, idx] = True
    weights.setflags(write=False)
    held.setflags(write=False)
    return Scenario(name, _DESCRIPTIONS[name], tuple(rules), tuple(names), weights, held)


# Inverse temperature of the agents' softmax.  App. B.7 writes p ∝ exp(s): 1.0.
AGENT_SHARPNESS = 1.0
# The "sharpened" variant of the world.  At 3.0 the agents' round-1 accuracies come
# close to the agent accuracies the specification reports before steering has had much
# effect (Table 5, T = 4, xi = 25%: S2 0.92 / 0.52, S3a 0.61 / 0.60, S3b 0.56 / 0.47),
# which Table 3's weights at 1.0 cannot produce.  A sensitivity, reported as a labelled
# variant; see docs/synthetic_world.md.
SHARPENED = 3.0
# Peer influence of one exchange round, on the rule-score scale: a peer's previous
# report weighs about as much as one fired rule (Table 3 weights are 1.0-1.7).
KAPPA = 1.0
# How a challenged agent takes up a recommendation: "adopt" = all or nothing with
# probability xi (eq. 21, App. F and section 5.3); "blend" = the deterministic partial
# adoption of eq. (19) (App. B.4).
COMPLIANCE_MODELS = ("adopt", "blend")


REPORT_RULES = ("sample", "map")  # an agent samples its report (App. D.1) or reports its MAP label (App. B.7)


def map_reports(scores: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The label of largest score per row, ties broken uniformly at random by ``rng``.

    scores : (..., K).  Draws exactly ``scores.size`` uniform variates.  Returns int (...).
    A tie is common (no rule fired gives every label the same score), and breaking it
    toward the first label would make the rare high-cost class k0 the default report.
    """
    top = scores >= scores.max(axis=-1, keepdims=True) - 1e-12
    return np.argmax(np.where(top, rng.random(scores.shape), -1.0), axis=-1)


def sample_reports(scores: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Sample one label per row from ``softmax(scores)`` by the Gumbel-max trick.

    scores : (..., K).  Draws exactly ``scores.size`` Gumbel variates.  Returns int (...).
    """
    return np.argmax(scores + rng.gumbel(size=scores.shape), axis=-1)


class RuleAgents:
    """The agents of one scenario playing N cases at once (implements the
    :class:`dcem.core.deliberation.Agents` protocol).

    Parameters
    ----------
    scen : Scenario
    features : int ndarray (N, d)
    rng : Generator for the report draws (N * A * K Gumbel variates per round)
    compliance_rng : Generator for the adoption draws (one per steer); required only
        when a steer arrives
    steering : SteeringConfig (defaults if None)
    xi : compliance of a recommendation (eq. 21 or eq. 19)
    template : (R,) reference weights, required when ``steering.reference ==
        "template"`` (see :func:`dcem.core.steering.contrastive_template`)
    sharpness : inverse temperature of the agents' softmax (default
        :data:`AGENT_SHARPNESS`, the specification's ``exp(s)``)
    kappa : peer influence of an exchange round, on the rule-score scale (default
        :data:`KAPPA`); 0 makes every round an independent redraw
    compliance : "adopt" (eq. 21, default) or "blend" (eq. 19)
    reports : "sample" (App. D.1, default: a draw from the softmax) or "map" (App. B.7's
        "reports the MAP label": the label of largest score, ties at random)

    Attributes
    ----------
    weights : (N, A, R) current per-case weights; adopted : int, number of adoptions
    """

    def __init__(self, scen: Scenario, features: np.ndarray, rng: np.random.Generator, *,
                 compliance_rng: np.random.Generator | None = None,
                 steering: SteeringConfig | None = None, xi: float = 1.0,
                 template: np.ndarray | None = None,
                 sharpness: float = AGENT_SHARPNESS, kappa: float = KAPPA,
                 compliance: str = "adopt", reports: str = "sample") -> None:
        if not 0.0 <= xi <= 1.0:
            raise InputError("xi", f"compliance must lie in [0, 1], got {xi}")
        self.scenario = scen
        self.phi = rule_activations(features, scen.rules)
        n = self.phi.shape[0]
        self.weights = np.broadcast_to(scen.weights, (n, *scen.weights.shape)).copy()
        self.rng = rng
        self.compliance_rng = compliance_rng
        self.steering = steering or SteeringConfig()
        self.xi = float(xi)
        if not (np.isfinite(sharpness) and sharpness > 0):
            raise InputError("sharpness", f"must be a positive number, got {sharpness}")
        self.sharpness = float(sharpness)
        if not (np.isfinite(kappa) and kappa >= 0):
            raise InputError("kappa", f"must be finite and >= 0, got {kappa}")
        self.kappa = float(kappa)
        if compliance not in COMPLIANCE_MODELS:
            raise InputError("compliance", f"must be one of {', '.join(COMPLIANCE_MODELS)}, got {compliance!r}")
        self.compliance = compliance
        if reports not in REPORT_RULES:
            raise InputError("reports", f"must be one of {', '.join(REPORT_RULES)}, got {reports!r}")
        self.reports = reports
        if self.steering.reference == "template":
            if template is None or np.shape(template) != (len(scen.rules),):
                raise InputError("template", f"need {len(scen.rules)} template weights for the "
                                 "'template' reference")
        self.template = None if template is None else np.asarray(template, dtype=float)
        self.adopted = 0
        self._consequent = scen.consequent
        self._previous: np.ndarray | None = None

    @property
    def n_agents(self) -> int:
        return self.scenario.n_agents

    @property
    def n_cases(self) -> int:
        return int(self.phi.shape[0])

    @property
    def labels(self) -> tuple[str, ...]:
        return self.scenario.labels

    def rule_scores(self) -> np.ndarray:
        """Each agent's own class scores ``s[a, k]`` (App. B.7), shape (N, A, K)."""
        return rule_scores(self.phi, self.weights, self._consequent, len(self.labels))

    def scores(self) -> np.ndarray:
        """The agents' own scores at their sharpness, shape (N, A, K) (no peer term)."""
        return self.sharpness * self.rule_scores()

    def exchange_scores(self, previous: np.ndarray) -> np.ndarray:
        """Scores of an exchange round after the reports ``previous`` (N, A):
        ``sharpness * (s + kappa / (A - 1) * [labels the peers reported])``, (N, A, K)."""
        k = len(self.labels)
        prev = np.eye(k)[np.asarray(previous)]  # (N, A, K) one-hot of each agent's report
        peers = prev.sum(axis=1, keepdims=True) - prev
        share = self.kappa / max(self.n_agents - 1, 1)
        return self.sharpness * (self.rule_scores() + share * peers)

    def probabilities(self) -> np.ndarray:
        """Each agent's own distribution ``softmax(sharpness * s)``, shape (N, A, K)."""
        return _softmax(self.scores())

    def report(self, t: int) -> np.ndarray:
        """Sampled reports of round t for every case and agent, int (N, A).

        Round 1 samples each agent's own distribution; round t >= 2 is an exchange
        round after the reports of round t - 1 (which must have been drawn here).
        """
        if t <= 1:
            scores = self.scores()
        elif self._previous is None:
            raise InputError("t", f"round {t} needs the reports of round {t - 1} first")
        else:
            scores = self.exchange_scores(self._previous)
        draw = map_reports if self.reports == "map" else sample_reports
        self._previous = draw(scores, self.rng)
        return self._previous

    def steer(self, request: SteerRequest) -> list[tuple[str, ...]]:
        """Recommend new weights to the challenged agents and let them comply.

        With the ``"peer"`` reference, case m's reference is the agent other than the
        target with the lowest current risk; with ``"template"`` it is the calibration
        template.  Returns the distinguishing rule names S(t), one tuple per row.
        """
        m = request.cases.shape[0]
        if m == 0:
            return []
        if self.compliance_rng is None:
            raise InputError("compliance_rng", "a generator is needed once steers arrive")
        cases, agent = request.cases, request.agent
        risk = np.array(request.agent_risk, dtype=float, copy=True)
        risk[np.arange(m), agent] = np.inf
        ref_agent = np.argmin(risk, axis=1) if self.n_agents > 1 else agent
        w = self.weights[cases, agent]
        if self.steering.reference == "template":
            assert self.template is not None
            w_ref = np.broadcast_to(self.template, w.shape)
        else:
            w_ref = self.weights[cases, ref_agent]
        held = self.scenario.held[agent] if self.steering.held_only else None
        mask = update_mask(self._consequent, request.current, request.alternative, held)
        w_rec = recommend(w, w_ref, mask, self.steering)
        names = distinguishing_rules(w_rec, w, self.scenario.rule_names, self.steering.top_k)
        new, adopted = comply(w, w_rec, self.xi, self.compliance_rng, self.steering)
        if self.compliance == "blend":  # eq. (19); the draw above keeps the streams aligned
            new, adopted = blend_compliance(w, w_rec, self.xi, self.steering), np.full(m, self.xi > 0)
        self.weights[cases, agent] = new
        self.adopted += int(adopted.sum())
        log.debug("round %d: %d steers, %d adopted", request.t, m, int(adopted.sum()))
        return names


def _softmax(scores: np.ndarray) -> np.ndarray:
    s = scores - scores.max(axis=-1, keepdims=True)
    e = np.exp(s)
    return e / e.sum(axis=-1, keepdims=True)


def agent_accuracy(reports: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Share of correct reports per agent; reports (N, A), truth (N,).  Returns (A,)."""
    return (np.asarray(reports) == np.asarray(truth)[:, None]).mean(axis=0)



def describe(scen: Scenario) -> Sequence[str]:
    """One line per agent listing its rules (for logs and docs)."""
    return [f"agent {a + 1}: " + "; ".join(f"{n} [{w:g}]" for n, w in scen.agent_rules(a))
            for a in range(scen.n_agents)]

