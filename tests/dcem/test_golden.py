"""A hand-computed golden episode (K = 3 labels, 2 agents, 4 rounds).

Labels: A (0), B (1), H (2, high-risk).  Uniform prior.  Three-level loss with
l_high = 4, indexed L[d, y]:

        y=A y=B y=H
  d=A [  0,  1,  4 ]
  d=B [  1,  0,  4 ]
  d=H [  1,  1,  0 ]

Agent 1 (index 0) is reliable: C1 = 0.8 on the diagonal, 0.1 elsewhere.
Agent 2 (index 1) confuses H with A:
  C2 = [[.6, .2, .2], [.2, .6, .2], [.4, .2, .4]]   (rows = truth).
With a uniform prior the posterior given report j is column j of C, normalised.

Config: alpha = beta = gamma = 1, lambda_pool = 1, rho_min = omega_min = 0.05,
eps_safe = 1.3, eps_low = 3.0, m_safe = 0.5, delta = 0.1, W = 1, s_asym = 0.9, t_max = 4.

Round 1, reports (A, A).
  P1 = (4/5, 1/10, 1/10);  P2 = (.6, .2, .4)/1.2 = (1/2, 1/6, 1/3).
  rho = (4/5, 1/2) -> omega = (8/13, 5/13)  (no floor or clip is active).
  Q ∝ P1^(8/13) P2^(5/13) = (0.667701, 0.121710, 0.158894), Z = 0.948305
    -> Q = (0.704100, 0.128345, 0.167556).
  R(A) = Q_B + 4 Q_H = 0.798567;  R(B) = Q_A + 4 Q_H = 1.374322;  R(H) = Q_A + Q_B = 0.832444
    -> d1 = A, d2 = H, margin = 0.033877.
  r1 = L[A]·P1 = 1/10 + 4/10 = 1/2;  r2 = L[A]·P2 = 1/6 + 4/3 = 3/2.
  D_sym = sum (P1 - P2) ln(P1/P2) = .3 ln(8/5) + (1/15) ln(5/3) + (7/30) ln(10/3)
        = 0.141001 + 0.034055 + 0.280927 = 0.455983.
  energy = 0.455983 + 2 + exp(-0.033877) = 0.455983 + 2 + 0.966690 = 3.422673.
  Not certified (3.42 > 1.3).  a† = agent 2 (r = 3/2 >= 0.9); its dangerous miss:
  P2(B) L[A,B] = 1/6 vs P2(H) L[A,H] = 4/3 -> z = H.  -> DIFFERENTIAL_STEER (1, A, H).

Round 2, reports (A, H).
  P1 = (4/5, 1/10, 1/10);  P2 = (.2, .2, .4)/.8 = (1/4, 1/4, 1/2);  rho = (4/5, 1/2),
  omega = (8/13, 5/13); Q = (0.609296, 0.169465, 0.221239) (Z = 0.839408).
  R = (1.054421, 1.494251, 0.778761) -> d1 = H, d2 = A, margin = 0.275659.
  r1 = 1/2, r2 = L[H]·P2 = 1/4 + 1/4 = 1/2 (tie: a† = agent 1, gate 1/2 < 0.9: no steer).
  D_sym = .55 ln(16/5) + .15 ln(5/2) + .4 ln 5 = 0.639733 + 0.137444 + 0.643775 = 1.420952.
  energy = 1.420952 + 1 + exp(-0.275659) = 1.420952 + 1 + 0.759071 = 3.180023.
  descent (W = 1) = 3.422673 - 3.180023 = 0.242650 >= delta -> no escalation although
  energy > eps_low.  -> CONTINUE.

Round 3, reports (H, H).
  P1 = (1/10, 1/10, 4/5);  P2 = (1/4, 1/4, 1/2);  omega = (8/13, 5/13);
  Q = (0.149391, 0.149391, 0.701218) (Z = 0.952202).
  R = (2.954263, 2.954263, 0.298782) -> d1 = H, d2 = A (tie with B -> lowest index),
  margin = 2.655481.
  r1 = 1/5, r2 = 1/2.  D_sym = 2 (.15 ln(5/2)) + .3 ln(8/5) = 0.274887 + 0.141001 = 0.415888.
  energy = 0.415888 + 0.7 + exp(-2.655481) = 0.415888 + 0.7 + 0.070265 = 1.186153
  <= 1.3 and margin >= 0.5 -> STOP_AND_DECIDE (certified), decision H.  The outcome.

Round 4 (scored after the outcome; t = t_max), reports (B, B).
  P1 = (1/10, 4/5, 1/10);  P2 = (.2, .6, .2);  rho = (4/5, 3/5) -> omega = (4/7, 3/7);
  Q = (0.137845, 0.724309, 0.137845) (Z = 0.976384).
  R = (1.275691, 0.689227, 0.862155) -> d1 = B, margin = 0.172928.
  r1 = 1/10 + 4/10 = 1/2, r2 = 1/5 + 4/5 = 1.  D_sym = .1 ln 2 + .2 ln(4/3) + .1 ln 2 = 0.196166.
  energy = 0.196166 + 1.5 + exp(-0.172928) = 0.196166 + 1.5 + 0.841198 = 2.537364.
  Rule 2 would steer agent 2 (r = 1 >= 0.9, challenge (1, B, H) is new), but round t_max
  ends the episode: energy 2.537 <= eps_low -> STOP_AND_DECIDE, not certified, budget,
  and no steer target is reported.
"""
from __future__ import annotations

import math
from fractions import Fraction as F

import numpy as np
import pytest

from dcem.core.config import MediatorConfig
from dcem.core.panel import Panel
from dcem.core.policy import NO_TARGET, Action
from dcem.core.replay import score_reports

A, B, H = 0, 1, 2
LOSS = [[0, 1, 4], [1, 0, 4], [1, 1, 0]]
C1 = [[F(8, 10), F(1, 10), F(1, 10)], [F(1, 10), F(8, 10), F(1, 10)],
      [F(1, 10), F(1, 10), F(8, 10)]]
C2 = [[F(6, 10), F(2, 10), F(2, 10)], [F(2, 10), F(6, 10), F(2, 10)],
      [F(4, 10), F(2, 10), F(4, 10)]]
REPORTS = [(A, A), (A, H), (H, H), (B, B)]
CFG = MediatorConfig(alpha=1.0, beta=1.0, gamma=1.0, lambda_pool=1.0, rho_min=0.05,
                     omega_min=0.05, eps_safe=1.3, eps_low=3.0, m_safe=0.5, delta=0.1,
                     window=1, s_asym=0.9, t_max=4)
TOL = 1e-9

# Exact posteriors (uniform prior: normalised columns) and the numbers of the docstring.
POSTERIORS = [
    ((F(4, 5), F(1, 10), F(1, 10)), (F(1, 2), F(1, 6), F(1, 3))),
    ((F(4, 5), F(1, 10), F(1, 10)), (F(1, 4), F(1, 4), F(1, 2))),
    ((F(1, 10), F(1, 10), F(4, 5)), (F(1, 4), F(1, 4), F(1, 2))),
    ((F(1, 10), F(4, 5), F(1, 10)), (F(1, 5), F(3, 5), F(1, 5))),
]
OMEGA1 = [F(8, 13), F(8, 13), F(8, 13), F(4, 7)]
AGENT_RISK = [(F(1, 2), F(3, 2)), (F(1, 2), F(1, 2)), (F(1, 5), F(1, 2)), (F(1, 2), F(1))]
POOLED = [(0.704100, 0.128345, 0.167556), (0.609296, 0.169465, 0.221239),
          (0.149391, 0.149391, 0.701218), (0.137845, 0.724309, 0.137845)]
DECISION = [A, H, H, B]
RUNNER_UP = [H, A, A, H]
MARGIN = [0.033877, 0.275659, 2.655481, 0.172928]
D_SYM = [0.455983, 1.420952, 0.415888, 0.196166]
ENERGY = [3.422673, 3.180023, 1.186153, 2.537364]
ACTIONS = [Action.DIFFERENTIAL_STEER, Action.CONTINUE, Action.STOP_AND_DECIDE,
           Action.STOP_AND_DECIDE]


def _panel() -> Panel:
    confusion = np.array([[[float(x) for x in row] for row in c] for c in (C1, C2)])
    return Panel(("A", "B", "H"), confusion, np.full(3, 1 / 3), np.array(LOSS, dtype=float))


def _exact_round(i: int) -> dict[str, float | list[float]]:
    """Recompute round i from the exact fractions with the math module only."""
    p1, p2 = POSTERIORS[i]
    w = float(OMEGA1[i])
    unnorm = [math.exp(w * math.log(a) + (1 - w) * math.log(b)) for a, b in zip(p1, p2)]
    q = [u / sum(unnorm) for u in unnorm]
    risks = [sum(LOSS[d][y] * q[y] for y in range(3)) for d in range(3)]
    d1, d2 = sorted(range(3), key=lambda d: (risks[d], d))[:2]
    d_sym = sum(float(a - b) * math.log(a / b) for a, b in zip(p1, p2))
    margin = risks[d2] - risks[d1]
    energy = d_sym + float(sum(AGENT_RISK[i])) + math.exp(-margin)
    return {"q": q, "margin": margin, "d_sym": d_sym, "energy": energy}


def test_hand_numbers_are_self_consistent() -> None:
    """The docstring's fractions follow from C, the loss and eq. 2-5."""
    for i, (r1, r2) in enumerate(REPORTS):
        col1 = [C1[y][r1] for y in range(3)]
        col2 = [C2[y][r2] for y in range(3)]
        p1 = tuple(c / sum(col1) for c in col1)
        p2 = tuple(c / sum(col2) for c in col2)
        assert (p1, p2) == POSTERIORS[i]
        assert OMEGA1[i] == p1[r1] / (p1[r1] + p2[r2])
        assert AGENT_RISK[i] == (sum(LOSS[r1][y] * p1[y] for y in range(3)),
                                 sum(LOSS[r2][y] * p2[y] for y in range(3)))
        exact = _exact_round(i)
        assert exact["q"] == pytest.approx(POOLED[i], abs=1e-6)
        assert exact["margin"] == pytest.approx(MARGIN[i], abs=1e-6)
        assert exact["d_sym"] == pytest.approx(D_SYM[i], abs=1e-6)
        assert exact["energy"] == pytest.approx(ENERGY[i], abs=1e-6)


def test_golden_episode() -> None:
    sc = score_reports(_panel(), np.array([REPORTS]), CFG, detail=True)
    st = sc.state
    assert st is not None
    for i in range(4):
        exact = _exact_round(i)
        p1, p2 = POSTERIORS[i]
        np.testing.assert_allclose(st.posteriors[0, i], [[float(x) for x in p1],
                                                         [float(x) for x in p2]], atol=TOL)
        np.testing.assert_allclose(st.weights[0, i], [float(OMEGA1[i]), 1 - float(OMEGA1[i])],
                                   atol=TOL)
        np.testing.assert_allclose(st.agent_risk[0, i], [float(x) for x in AGENT_RISK[i]],
                                   atol=TOL)
        np.testing.assert_allclose(st.pooled[0, i], exact["q"], atol=TOL)
        assert st.disagreement[0, i] == pytest.approx(exact["d_sym"], abs=TOL)
        assert sc.margin[0, i] == pytest.approx(exact["margin"], abs=TOL)
        assert sc.energy[0, i] == pytest.approx(exact["energy"], abs=TOL)
        assert sc.decision[0, i] == DECISION[i]
        assert st.runner_up[0, i] == RUNNER_UP[i]
        assert sc.action[0, i] == ACTIONS[i]
    # dangerous misses: round 1 agent 2 (reports A) fears H; round 4 agent 2 (reports B) too
    assert st.dangerous_miss[0, 0, 1] == H and st.dangerous_miss[0, 3, 1] == H
    assert np.isnan(sc.descent[0, 0])
    assert sc.descent[0, 1] == pytest.approx(ENERGY[0] - ENERGY[1], abs=1e-6)
    assert sc.descent[0, 1] == pytest.approx(_exact_round(0)["energy"] - _exact_round(1)["energy"],
                                             abs=TOL)
    assert (sc.steer_agent[0].tolist(), sc.steer_current[0].tolist(),
            sc.steer_alternative[0].tolist()) == ([1, NO_TARGET, NO_TARGET, NO_TARGET],
                                                  [A, NO_TARGET, NO_TARGET, NO_TARGET],
                                                  [H, NO_TARGET, NO_TARGET, NO_TARGET])
    assert sc.certified[0].tolist() == [False, False, True, False]
    assert sc.budget[0].tolist() == [False, False, False, True]
    assert (sc.outcome_action[0], sc.outcome_round[0], sc.outcome_decision[0]) == (
        Action.STOP_AND_DECIDE, 3, H)
    assert bool(sc.outcome_certified[0]) and not bool(sc.outcome_budget[0])


def test_golden_what_if_thresholds() -> None:
    """Re-scoring the same reports under other thresholds moves the outcome."""
    panel, reports = _panel(), np.array([REPORTS])
    # delta = 0.3: round 2's descent 0.24265 < 0.3 with energy 3.18 > 3.0 -> escalate.
    sc = score_reports(panel, reports, CFG.with_changes(delta=0.3))
    assert sc.action[0, :2].tolist() == [Action.DIFFERENTIAL_STEER, Action.STOP_AND_ESCALATE]
    assert (sc.outcome_action[0], sc.outcome_round[0]) == (Action.STOP_AND_ESCALATE, 2)
    # Without escalation the same round continues.
    sc = score_reports(panel, reports, CFG.with_changes(delta=0.3, escalation=False))
    assert sc.action[0, 1] == Action.CONTINUE
    # s_asym = 1.6: no agent risk reaches the gate, round 1 simply continues.
    sc = score_reports(panel, reports, CFG.with_changes(s_asym=1.6))
    assert sc.action[0, 0] == Action.CONTINUE
    # t_max = 2: round 2 is the budget round, energy 3.18 > eps_low -> budget escalation.
    sc = score_reports(panel, reports, CFG.with_changes(t_max=2))
    assert sc.action.shape == (1, 2)
    assert (sc.outcome_action[0], sc.outcome_round[0]) == (Action.STOP_AND_ESCALATE, 2)
    assert bool(sc.outcome_budget[0]) and not bool(sc.outcome_certified[0])
    # eps_safe = 1.1: round 3 (energy 1.186) no longer certifies; round 4 is the budget.
    sc = score_reports(panel, reports, CFG.with_changes(eps_safe=1.1))
    assert (sc.outcome_action[0], sc.outcome_round[0], sc.outcome_decision[0]) == (
        Action.STOP_AND_DECIDE, 4, B)
    assert bool(sc.outcome_budget[0]) and not bool(sc.outcome_certified[0])
