"""Properties of the D-CEM core: eq. 2-12, Lemma 4.1, Prop. 4.2, Prop. 4.3, Thm 4.6."""
from __future__ import annotations

import math

import numpy as np
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from dcem.core.config import MediatorConfig
from dcem.core.decision import bayes_decision
from dcem.core.energy import symmetric_kl_sum, windowed_descent
from dcem.core.panel import Panel
from dcem.core.policy import Action
from dcem.core.pooling import log_pool, pool_weights
from dcem.core.posterior import dangerous_miss, report_posteriors, soft_report_posteriors
from dcem.core.replay import score_reports, score_states
from dcem.core.state import assess_reports

from .strategies import configs, distributions, panels

SETTINGS = settings(max_examples=120, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _all_tuples(panel: Panel) -> np.ndarray:
    k, a = panel.n_labels, panel.n_agents
    return np.stack(np.unravel_index(np.arange(k ** a), (k,) * a), axis=-1)


def _kl(p: np.ndarray, q: np.ndarray) -> float:
    return float(np.sum(p * np.log(p / q)))


@SETTINGS
@given(panels(), st.data())
def test_posteriors_normalised_positive_and_bayes(panel: Panel, data: st.DataObject) -> None:
    tuples = _all_tuples(panel)
    post = report_posteriors(panel.confusion, panel.prior, tuples)
    assert post.shape == tuples.shape + (panel.n_labels,)
    assert np.all(post > 0)
    np.testing.assert_allclose(post.sum(axis=-1), 1.0, rtol=1e-12)
    n, a = data.draw(st.integers(0, len(tuples) - 1)), data.draw(st.integers(0, panel.n_agents - 1))
    r = int(tuples[n, a])
    joint = [panel.prior[y] * panel.confusion[a, y, r] for y in range(panel.n_labels)]
    np.testing.assert_allclose(post[n, a], [j / sum(joint) for j in joint], rtol=1e-12)
    # probability-vector reports: also a strictly positive distribution
    probs = np.array([data.draw(distributions(panel.n_labels)) for _ in range(panel.n_agents)])
    soft = soft_report_posteriors(panel.confusion, panel.prior, probs)
    assert np.all(soft > 0)
    np.testing.assert_allclose(soft.sum(axis=-1), 1.0, rtol=1e-12)


@SETTINGS
@given(panels(), configs(), st.floats(0.0, 3.0))
def test_lemma_4_1_energy_bounds(panel: Panel, cfg: MediatorConfig, slack: float) -> None:
    s = assess_reports(panel, _all_tuples(panel), cfg)
    eps = s.energy + slack  # any eps with energy <= eps
    d_sym = symmetric_kl_sum(s.posteriors)
    tol = 1e-9 * (1 + eps)
    if cfg.alpha > 0:
        assert np.all(d_sym <= eps / cfg.alpha + tol)
    if cfg.beta > 0:
        assert np.all(s.agent_risk.sum(axis=-1) <= eps / cfg.beta + tol)
    below = (eps < cfg.gamma) & (eps > 0)
    if cfg.gamma > 0 and below.any():
        assert np.all(s.margin[below] >= np.log(cfg.gamma / eps[below]) - 1e-9)
    np.testing.assert_allclose(s.energy, s.disagreement + s.risk_term + s.margin_term, rtol=1e-12)
    assert np.all(d_sym >= -1e-12) and np.all(s.margin >= 0)


@SETTINGS
@given(panels())
def test_prop_4_2_dangerous_miss_is_brute_force_argmax(panel: Panel) -> None:
    tuples = _all_tuples(panel)
    post = report_posteriors(panel.confusion, panel.prior, tuples)
    z = dangerous_miss(panel.loss, post, tuples)
    for n in range(len(tuples)):
        for a in range(panel.n_agents):
            r = int(tuples[n, a])
            harm = {y: post[n, a, y] * panel.loss[r, y] for y in range(panel.n_labels) if y != r}
            best = max(harm.values())
            assert z[n, a] != r
            assert harm[int(z[n, a])] == best
            assert int(z[n, a]) == min(y for y, v in harm.items() if v == best)  # lowest index


@SETTINGS
@given(st.integers(2, 6).flatmap(lambda k: st.tuples(distributions(k), distributions(k))),
       st.floats(0.0, 5.0), st.sampled_from([0.0, 0.05, 0.2, 0.5]), st.integers(0, 2 ** 32 - 1))
def test_prop_4_3_log_pool_minimises_and_contracts(pair: tuple, rho1: float, omega_min: float,
                                                   seed: int) -> None:
    p = np.array(pair)
    weights = pool_weights(np.array([rho1 / 5, p[1].max()]), lambda_pool=1.5, rho_min=0.05,
                           omega_min=omega_min)
    w = float(weights[0])
    assert abs(weights.sum() - 1) < 1e-12
    if omega_min > 0:
        assert omega_min - 1e-12 <= w <= 1 - omega_min + 1e-12
    q = log_pool(p, weights)

    def objective(x: np.ndarray) -> float:
        return w * _kl(x, p[0]) + (1 - w) * _kl(x, p[1])

    best = objective(q)
    rng = np.random.default_rng(seed)
    k = p.shape[1]
    for other in rng.dirichlet(np.ones(k), size=30):
        assert best <= objective(np.maximum(other, 1e-300)) + 1e-12
    for scale in (1e-1, 1e-3):
        moved = q * np.exp(scale * rng.standard_normal((30, k)))
        for x in moved / moved.sum(axis=1, keepdims=True):
            assert best <= objective(x) + 1e-12
    # contraction bounds (Hölder: log Z <= 0)
    assert _kl(p[0], q) <= (1 - w) * _kl(p[0], p[1]) + 1e-12
    assert _kl(p[1], q) <= w * _kl(p[1], p[0]) + 1e-12


@SETTINGS
@given(st.integers(2, 6).flatmap(lambda k: st.tuples(
    distributions(k), st.lists(st.lists(st.integers(0, 8).map(float), min_size=k, max_size=k),
                               min_size=k, max_size=k))))
def test_bayes_decision_optimal_second_and_lowest_index(case: tuple) -> None:
    q, loss = np.array(case[0]), np.array(case[1])
    dec = bayes_decision(loss, q)
    risks = [sum(loss[d, y] * q[y] for y in range(len(q))) for d in range(len(q))]
    np.testing.assert_allclose(dec.risks, risks, rtol=1e-12, atol=1e-15)
    r, d1, d2 = dec.risks, int(dec.best), int(dec.runner_up)
    assert d1 != d2
    assert all(r[d1] <= r[d] for d in range(len(q)))
    assert all(r[d2] <= r[d] for d in range(len(q)) if d != d1)
    assert all(r[d] > r[d1] for d in range(d1))  # ties go to the lowest index
    assert all(r[d] > r[d2] for d in range(d2) if d != d1)
    assert dec.margin == r[d2] - r[d1] >= 0


@SETTINGS
@given(st.lists(st.floats(-10, 10), min_size=1, max_size=9), st.integers(1, 4))
def test_windowed_descent_is_window_average(energy: list, window: int) -> None:
    g = windowed_descent(np.array([energy, energy[::-1]]), window)
    for row, seq in zip(g, (energy, energy[::-1])):
        for i, value in enumerate(row):
            t = i + 1
            if t <= window:
                assert math.isnan(value)
            else:  # eq. 11 with seq[t - 1] = energy at round t
                avg = sum(seq[t - 2 - j] - seq[t - 1 - j] for j in range(window)) / window
                assert math.isclose(value, avg, rel_tol=1e-9, abs_tol=1e-9)


def _stagnant(panel: Panel, cfg: MediatorConfig, data: st.DataObject) -> tuple[np.ndarray, MediatorConfig]:
    """A palette of m tuples repeated cyclically with W = m, thresholds set so that every
    round's energy stays above eps_low: the descent is then exactly 0 from round W + 1."""
    tuples = _all_tuples(panel)
    m = data.draw(st.integers(1, 3))
    picks = data.draw(st.lists(st.integers(0, len(tuples) - 1), min_size=m, max_size=m))
    palette = tuples[picks]
    energies = assess_reports(panel, palette, cfg).energy
    floor = float(energies.min())
    assume(floor > 1e-6)
    cfg = cfg.with_changes(eps_low=0.9 * floor, eps_safe=0.4 * floor, window=m, t_max=20,
                           delta=data.draw(st.sampled_from([1e-9, 0.01, 1.0])))
    reports = np.array([palette[i % m] for i in range(20)])[None]
    return reports, cfg


@SETTINGS
@given(panels(max_k=4, max_a=3), configs(), st.data())
def test_theorem_4_6_stagnation_escalates_in_finite_time(panel: Panel, cfg: MediatorConfig,
                                                          data: st.DataObject) -> None:
    gcfg = cfg.with_changes(gamma=max(cfg.gamma, 0.5))
    reports, cfg = _stagnant(panel, gcfg, data)
    sc = score_reports(panel, reports, cfg.with_changes(escalation=True))
    m = cfg.window
    assert not sc.certified.any()
    # challenges of round t repeat those of round t - m, so from W + 1 on nothing new is
    # steered, the descent is 0 < delta and energy > eps_low: escalation at round W + 1.
    assert np.all(sc.descent[0, m:] == 0)
    assert (sc.outcome_action[0], sc.outcome_round[0]) == (Action.STOP_AND_ESCALATE, m + 1)
    assert not sc.outcome_budget[0]
    assert np.all(sc.action[0, m:] == Action.STOP_AND_ESCALATE)
    # escalation ablation: never escalates; the budget decides (not certified)
    off = score_reports(panel, reports, cfg.with_changes(escalation=False))
    assert not np.any(off.action == Action.STOP_AND_ESCALATE)
    assert (off.outcome_action[0], off.outcome_round[0]) == (Action.STOP_AND_DECIDE, cfg.t_max)
    assert off.outcome_budget[0] and not off.outcome_certified[0]


@settings(SETTINGS, max_examples=60)
@given(st.floats(0.05, 0.9), st.floats(0.01, 5.0), st.floats(1e-4, 1.0), st.integers(1, 3))
def test_theorem_4_6_vanishing_descent(rate: float, excess: float, delta: float, window: int) -> None:
    """Energy eps_low + excess + rate**t decreases with descent -> 0 but stays above
    eps_low; with steering gated off the policy escalates at the first t > W whose
    descent is below delta."""
    horizon = 100  # 0.9 ** 88 < 1e-4: the escalation round always lies inside
    panel = Panel(("a", "b"), np.array([[[0.9, 0.1], [0.2, 0.8]]] * 2), np.array([0.5, 0.5]),
                  np.array([[0.0, 1.0], [1.0, 0.0]]))
    cfg = MediatorConfig(eps_safe=0.5, eps_low=1.0, delta=delta, window=window,
                         s_asym=1e9, t_max=horizon)
    base = assess_reports(panel, np.zeros((1, horizon, 2), dtype=np.int64), cfg)
    t = np.arange(1, horizon + 1)
    energy = (cfg.eps_low + excess + rate ** t)[None].astype(float)
    sc = score_states(base._replace(energy=energy), cfg)
    g = [(rate ** (s - window) - rate ** s) / window for s in range(window + 1, horizon + 1)]
    expected = next(s for s, v in zip(range(window + 1, horizon + 1), g) if v < delta)
    assert (sc.outcome_action[0], sc.outcome_round[0]) == (Action.STOP_AND_ESCALATE, expected)
    assert np.all(sc.action[0, : expected - 1] == Action.CONTINUE)
