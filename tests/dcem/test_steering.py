"""Differential steering (B.3, eq. 15-18) and compliance (B.4 eq. 19, F eq. 21)."""
from __future__ import annotations

import numpy as np
import pytest

from dcem.core.steering import (
    SteeringConfig,
    blend_compliance,
    comply,
    contrastive_template,
    discrepancy_gradient,
    distinguishing_rules,
    explanation_discrepancy,
    recommend,
    steering_objective,
    update_mask,
)
from common.errors import ConfigError


def test_discrepancy_is_symmetric_kl_and_zero_at_equality() -> None:
    rng = np.random.default_rng(0)
    w1, w2 = rng.normal(size=(5, 7)), rng.normal(size=(5, 7))
    p = np.exp(w1) / np.exp(w1).sum(-1, keepdims=True)
    q = np.exp(w2) / np.exp(w2).sum(-1, keepdims=True)
    kl = lambda a, b: np.sum(a * np.log(a / b), axis=-1)  # noqa: E731
    np.testing.assert_allclose(explanation_discrepancy(w1, w2), kl(p, q) + kl(q, p))
    np.testing.assert_allclose(explanation_discrepancy(w1, w1 + 3.0), 0.0, atol=1e-12)


def test_gradient_matches_finite_differences() -> None:
    rng = np.random.default_rng(1)
    w, ref = rng.normal(size=9), rng.normal(size=9) * 2
    grad = discrepancy_gradient(w, ref)
    h = 1e-6
    fd = np.array([(explanation_discrepancy(w + h * e, ref) - explanation_discrepancy(w - h * e, ref)) / (2 * h)
                   for e in np.eye(9)])
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-8)


def test_multi_step_objective_gradient_matches_finite_differences() -> None:
    cfg = SteeringConfig(lambda_st=0.7, gamma_st=1.3)
    rng = np.random.default_rng(2)
    anchor, ref, w = rng.normal(size=6), rng.normal(size=6), rng.normal(size=6)
    grad = cfg.lambda_st * (w - anchor) + cfg.gamma_st * discrepancy_gradient(w, ref)
    h = 1e-6
    fd = np.array([(steering_objective(w + h * e, anchor, ref, cfg) - steering_objective(w - h * e, anchor, ref, cfg))
                   / (2 * h) for e in np.eye(6)])
    np.testing.assert_allclose(grad, fd, rtol=1e-5, atol=1e-8)


def test_recommendation_moves_only_masked_coordinates_inside_the_box() -> None:
    cfg = SteeringConfig(eta=50.0, w_lo=-1.0, w_hi=1.0)
    w = np.array([[0.5, 0.5, 0.5, 0.5]])
    ref = np.array([[3.0, -3.0, 3.0, -3.0]])
    mask = np.array([[True, True, False, False]])
    rec = recommend(w, ref, mask, cfg)
    assert rec[0, 2] == 0.5 and rec[0, 3] == 0.5
    assert rec[0, 0] > 0.5 and rec[0, 1] < 0.5
    assert rec.min() >= -1.0 and rec.max() <= 1.0
    one = recommend(w, ref, np.ones_like(mask), SteeringConfig(eta=0.5))
    assert explanation_discrepancy(one, ref)[0] < explanation_discrepancy(w, ref)[0]


def test_more_steps_with_strong_anchor_stay_close() -> None:
    rng = np.random.default_rng(3)
    w, ref = rng.normal(size=(1, 6)), rng.normal(size=(1, 6)) * 2
    mask = np.ones((1, 6), dtype=bool)
    loose = recommend(w, ref, mask, SteeringConfig(eta=0.2, n_steps=30, lambda_st=0.0))
    tight = recommend(w, ref, mask, SteeringConfig(eta=0.2, n_steps=30, lambda_st=5.0))
    assert np.linalg.norm(tight - w) < np.linalg.norm(loose - w)


def test_update_mask_selects_rules_of_current_and_alternative() -> None:
    cons = np.array([0, 1, 2, 0, 2])
    mask = update_mask(cons, np.array([1, 2]), np.array([0, 0]))
    assert mask.tolist() == [[True, True, False, True, False], [True, False, True, True, True]]
    held = np.array([[True, False, True, True, True], [False] * 5])
    assert not update_mask(cons, np.array([1, 2]), np.array([0, 0]), held)[1].any()


def test_top_k_names_in_order_of_change() -> None:
    w = np.zeros((1, 4))
    rec = np.array([[0.1, -2.0, 0.0, 0.5]])
    assert distinguishing_rules(rec, w, ["a", "b", "c", "d"], 3) == [("b", "d", "a")]
    assert distinguishing_rules(rec, w, ["a", "b", "c", "d"], 4) == [("b", "d", "a")]  # c unchanged


def test_compliance_zero_never_and_one_always_adopts() -> None:
    cfg = SteeringConfig()
    rng = np.random.default_rng(0)
    w, rec = rng.normal(size=(200, 5)), rng.normal(size=(200, 5))
    kept, adopted = comply(w, rec, 0.0, np.random.default_rng(1), cfg)
    assert not adopted.any()
    np.testing.assert_array_equal(kept, w)
    new, adopted = comply(w, rec, 1.0, np.random.default_rng(1), cfg)
    assert adopted.all()
    np.testing.assert_array_equal(new, np.clip(rec, cfg.w_lo, cfg.w_hi))
    _, half = comply(w, rec, 0.5, np.random.default_rng(2), cfg)
    assert 0.35 < half.mean() < 0.65
    np.testing.assert_allclose(blend_compliance(w, rec, 0.0, cfg), np.clip(w, cfg.w_lo, cfg.w_hi))
    with pytest.raises(ConfigError):
        comply(w, rec, 1.5, rng, cfg)


def test_template_rewards_reliable_rules() -> None:
    phi = np.array([[1, 1], [1, 1], [1, 0], [1, 0]] * 5, dtype=bool)
    truth = np.zeros(20, dtype=int)
    cons = np.array([0, 1])
    tmpl = contrastive_template(phi, truth, cons, 3, SteeringConfig())
    assert tmpl[0] == 3.0  # always right when it fires: clipped at the box
    assert tmpl[1] == 0.0  # never right when it fires: the lower end of the default box
    wide = contrastive_template(phi, truth, cons, 3, SteeringConfig(w_lo=-3.0))
    assert wide[1] < 0.0   # with a box that allows it, evidence against
    # f = (0 + 0.5) / (10 + 1): w = log(f * 2 / (1 - f))
    assert wide[1] == np.clip(np.log((0.5 / 11) * 2 / (1 - 0.5 / 11)), -3, 3)


def test_config_validation() -> None:
    with pytest.raises(ConfigError):
        SteeringConfig(w_lo=1.0, w_hi=1.0)
    with pytest.raises(ConfigError):
        SteeringConfig(top_k=0)
    with pytest.raises(ConfigError):
        SteeringConfig(reference="oracle")
