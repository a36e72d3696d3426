"""An independent, plain-Python reference of the D-CEM policy contract for one case.

Written from the contract in DESIGN.md (and eq. 2-12, 20 of the specification) with
loops and the ``math`` module only, so the vectorised library can be checked against
it.  No :mod:`numpy` and no :mod:`dcem` numerics are used here; the configuration is
read as a plain object with the documented attribute names.

Floating-point caveat: two mathematically equal quantities can be rounded differently
by two implementations, and then an exact tie or threshold comparison may go either
way.  Every comparison that decides something is therefore also checked against a
tolerance; a round in which one is closer than ``TOL`` is marked ``fragile`` and a
caller compares only the rounds before the first fragile one (the steer history makes
later rounds depend on earlier ones).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

__all__ = ["CONTINUE", "STEER", "DECIDE", "ESCALATE", "PENDING", "NO_TARGET", "TOL",
           "RefRound", "RefCase", "assess", "run_case"]

CONTINUE, STEER, DECIDE, ESCALATE, PENDING = 0, 1, 2, 3, 4
NO_TARGET = -1
TOL = 1e-9

Matrix = Sequence[Sequence[float]]


@dataclass
class RefRound:
    """Everything the mediator derives in one round (agents a, labels y, decisions d)."""

    reports: tuple[int, ...]
    posteriors: list[list[float]]
    reliability: list[float]
    weights: list[float]
    pooled: list[float]
    risks: list[float]
    decision: int
    runner_up: int
    margin: float
    agent_risk: list[float]
    dangerous_miss: list[int]
    disagreement: float
    risk_term: float
    margin_term: float
    energy: float
    descent: Optional[float] = None
    action: int = CONTINUE
    steer_agent: int = NO_TARGET
    steer_current: int = NO_TARGET
    steer_alternative: int = NO_TARGET
    certified: bool = False
    budget: bool = False
    fragile: bool = False
    gaps: list[float] = field(default_factory=list)


@dataclass
class RefCase:
    rounds: list[RefRound]
    outcome_action: int
    outcome_round: int  # 1-based
    outcome_decision: int
    first_fragile: int  # 0-based index of the first fragile round; len(rounds) if none


def _close(x: float, y: float) -> bool:
    return abs(x - y) <= TOL * max(1.0, abs(x), abs(y))


def _argbest(values: Sequence[float], candidates: Sequence[int], largest: bool) -> tuple[int, float]:
    """First candidate with the extreme value (ties: lowest index) and the distance to
    the best competitor (inf when there is none)."""
    best = candidates[0]
    for i in candidates[1:]:
        if (values[i] > values[best]) if largest else (values[i] < values[best]):
            best = i
    gap = math.inf
    for i in candidates:
        if i != best:
            gap = min(gap, abs(values[i] - values[best]))
    return best, gap


def _kl(p: Sequence[float], q: Sequence[float]) -> float:
    return sum(pi * math.log(pi / qi) for pi, qi in zip(p, q))


def assess(confusion: Sequence[Matrix], prior: Sequence[float], loss: Matrix,
           reports: Sequence[int], cfg: Any) -> RefRound:
    """Per-round quantities for one report tuple (eq. 2-10, 20), without policy."""
    n_agents, k = len(confusion), len(prior)
    labels = list(range(k))
    post = []
    for a in range(n_agents):
        joint = [prior[y] * confusion[a][y][reports[a]] for y in labels]
        total = sum(joint)
        post.append([j / total for j in joint])
    rho = [post[a][reports[a]] for a in range(n_agents)]
    raw = [max(r, cfg.rho_min) ** cfg.lambda_pool for r in rho]
    weights = [r / sum(raw) for r in raw]
    if cfg.omega_min > 0:
        clipped = [min(max(w, cfg.omega_min), 1.0 - cfg.omega_min) for w in weights]
        weights = [w / sum(clipped) for w in clipped]
    log_q = [sum(weights[a] * math.log(post[a][y]) for a in range(n_agents)) for y in labels]
    top = max(log_q)
    unnorm = [math.exp(v - top) for v in log_q]
    pooled = [u / sum(unnorm) for u in unnorm]
    risks = [sum(loss[d][y] * pooled[y] for y in labels) for d in labels]
    order = sorted(labels, key=lambda d: (risks[d], d))
    d1, d2 = order[0], order[1]
    margin = risks[d2] - risks[d1]
    gaps = [abs(risks[d2] - risks[d1])]
    if k > 2:
        gaps.append(abs(risks[order[2]] - risks[d2]))
    agent_risk = [sum(loss[reports[a]][y] * post[a][y] for y in labels) for a in range(n_agents)]
    misses = []
    for a in range(n_agents):
        harm = [post[a][y] * loss[reports[a]][y] for y in labels]
        others = [y for y in labels if y != reports[a]]
        z, gap = _argbest(harm, others, largest=True)
        misses.append(z)
        gaps.append(gap)
    sym = 0.0
    for a in range(n_agents):
        for b in range(a + 1, n_agents):
            sym += _kl(post[a], post[b]) + _kl(post[b], post[a])
    dis = cfg.alpha * sym
    risk_term = cfg.beta * sum(agent_risk)
    margin_term = cfg.gamma * math.exp(-margin)
    return RefRound(tuple(reports), post, rho, weights, pooled, risks, d1, d2, margin,
                    agent_risk, misses, dis, risk_term, margin_term,
                    dis + risk_term + margin_term, gaps=gaps)


def _target(state: RefRound, cfg: Any) -> tuple[int, float, float]:
    """(a†, gate value, tie gap of the a† choice) for either steer gate."""
    agents = list(range(len(state.reports)))
    if cfg.steer_gate == "risk":
        agent, gap = _argbest(state.agent_risk, agents, largest=True)
        return agent, state.agent_risk[agent], gap
    agent, gap = _argbest(state.reliability, agents, largest=False)
    return agent, max(state.reliability) - min(state.reliability), gap


def run_case(confusion: Sequence[Matrix], prior: Sequence[float], loss: Matrix,
             reports: Sequence[Sequence[int]], cfg: Any) -> RefCase:
    """Score one case's rounds (truncated to ``cfg.t_max``) under the policy contract.

    Every round is scored, also after the first terminal action; the steer history
    keeps growing.  The outcome is the first terminal action (PENDING if none).
    """
    rounds: list[RefRound] = []
    energies: list[float] = []
    issued: set[tuple[int, int, int]] = set()
    horizon = min(len(reports), cfg.t_max)
    for t in range(1, horizon + 1):
        st = assess(confusion, prior, loss, reports[t - 1], cfg)
        energies.append(st.energy)
        w = cfg.window
        if t > w:  # eq. 11: mean of the last W one-step decreases (energy[t-1] is round t)
            st.descent = sum(energies[t - 2 - i] - energies[t - 1 - i] for i in range(w)) / w
        gaps = list(st.gaps)
        gaps.append(abs(st.energy - cfg.eps_safe))
        energy_ok = st.energy <= cfg.eps_safe
        if energy_ok or _close(st.energy, cfg.eps_safe):
            gaps.append(abs(st.margin - cfg.m_safe))
        st.certified = energy_ok and st.margin >= cfg.m_safe
        if st.certified:
            st.action = DECIDE
        else:
            agent, value, tie = _target(st, cfg)
            gaps += [tie, abs(value - cfg.s_asym)]
            challenge = (agent, st.reports[agent], st.dangerous_miss[agent])
            if value >= cfg.s_asym and challenge not in issued:
                st.action = STEER
                st.steer_agent, st.steer_current, st.steer_alternative = challenge
            elif cfg.escalation and st.descent is not None:
                gaps += [abs(st.descent - cfg.delta), abs(st.energy - cfg.eps_low)]
                if st.descent < cfg.delta and st.energy > cfg.eps_low:
                    st.action = ESCALATE
        if t == cfg.t_max and st.action in (CONTINUE, STEER):
            st.budget = True
            gaps.append(abs(st.energy - cfg.eps_low))
            st.action = DECIDE if (st.energy <= cfg.eps_low or not cfg.escalation) else ESCALATE
        if st.action == STEER:
            issued.add((st.steer_agent, st.steer_current, st.steer_alternative))
        else:
            st.steer_agent = st.steer_current = st.steer_alternative = NO_TARGET
        scale = max(1.0, abs(st.energy), max(abs(r) for r in st.risks))
        st.fragile = any(g <= TOL * scale for g in gaps)
        rounds.append(st)
    first_fragile = next((i for i, r in enumerate(rounds) if r.fragile), len(rounds))
    end = next((i for i, r in enumerate(rounds) if r.action in (DECIDE, ESCALATE)), None)
    if end is None:
        last = len(rounds) - 1
        return RefCase(rounds, PENDING, last + 1, rounds[last].decision, first_fragile)
    return RefCase(rounds, rounds[end].action, end + 1, rounds[end].decision, first_fragile)
