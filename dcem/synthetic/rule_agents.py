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
distribution is ``softmax(s[a])`` and it SAMPLES its report from it (Gumbel-max).
Weights are copied per case, shape (N, A, R), because a steer changes the weights of
one agent in one case's episode only.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from dcem.core.deliberation import SteerRequest
from dcem.core.steering import SteeringConfig, comply, distinguishing_rules, recommend, update_mask
from dcem.core.vocabulary import SCENARIOS
from dcem.errors import InputError
from dcem.synthetic.generator import LABELS, Rule, rule_activations, rule_scores

__all__ = [
    "AGENT_SHARPNESS",
    "SCENARIO_NAMES", "SCENARIO_TABLE", "Scenario", "scenario", "sample_reports",
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


# Inverse temperature of the agents' softmax.  The specification gives rule weights but
# no temperature; 3.0 brings the agents' round-1 accuracies close to the agent accuracies
# the specification reports before steering has had much effect (Table 5, T = 4,
# xi = 25%: S2 0.92 / 0.52, S3a 0.61 / 0.60, S3b 0.56 / 0.47).  Measured on 20,000
# generated cases: S2 0.87 / 0.50, S3a 0.65 / 0.61, S3b 0.48 / 0.39 (at 1.0: 0.64 / 0.42,
# 0.53 / 0.48, 0.43 / 0.37).  See docs/synthetic_world.md.
AGENT_SHARPNESS = 3.0


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
    xi : adoption probability of a recommendation (eq. 21)
    template : (R,) reference weights, required when ``steering.reference ==
        "template"`` (see :func:`dcem.core.steering.contrastive_template`)
    sharpness : inverse temperature of the agents' softmax (default
        :data:`AGENT_SHARPNESS`); scores are multiplied by it before sampling

    Attributes
    ----------
    weights : (N, A, R) current per-case weights; adopted : int, number of adoptions
    """

    def __init__(self, scen: Scenario, features: np.ndarray, rng: np.random.Generator, *,
                 compliance_rng: np.random.Generator | None = None,
                 steering: SteeringConfig | None = None, xi: float = 1.0,
                 template: np.ndarray | None = None,
                 sharpness: float = AGENT_SHARPNESS) -> None:
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
        if self.steering.reference == "template":
            if template is None or np.shape(template) != (len(scen.rules),):
                raise InputError("template", f"need {len(scen.rules)} template weights for the "
                                 "'template' reference")
        self.template = None if template is None else np.asarray(template, dtype=float)
        self.adopted = 0
        self._consequent = scen.consequent

    @property
    def n_agents(self) -> int:
        return self.scenario.n_agents

    @property
    def n_cases(self) -> int:
        return int(self.phi.shape[0])

    @property
    def labels(self) -> tuple[str, ...]:
        return self.scenario.labels

    def scores(self) -> np.ndarray:
        """Class scores of every agent on every case, shape (N, A, K)."""
        return self.sharpness * rule_scores(self.phi, self.weights, self._consequent, len(self.labels))

    def probabilities(self) -> np.ndarray:
        """Each agent's softmax distribution, shape (N, A, K)."""
        s = self.scores()
        s = s - s.max(axis=-1, keepdims=True)
        e = np.exp(s)
        return e / e.sum(axis=-1, keepdims=True)

    def report(self, t: int) -> np.ndarray:
        """Sampled reports of round t for every case and agent, int (N, A)."""
        return sample_reports(self.scores(), self.rng)

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
        self.weights[cases, agent] = new
        self.adopted += int(adopted.sum())
        log.debug("round %d: %d steers, %d adopted", request.t, m, int(adopted.sum()))
        return names


def agent_accuracy(reports: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Share of correct reports per agent; reports (N, A), truth (N,).  Returns (A,)."""
    return (np.asarray(reports) == np.asarray(truth)[:, None]).mean(axis=0)



def describe(scen: Scenario) -> Sequence[str]:
    """One line per agent listing its rules (for logs and docs)."""
    return [f"agent {a + 1}: " + "; ".join(f"{n} [{w:g}]" for n, w in scen.agent_rules(a))
            for a in range(scen.n_agents)]

