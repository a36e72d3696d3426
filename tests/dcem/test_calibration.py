"""Confusion smoothing, prior and threshold fitting on calibration data only."""
from __future__ import annotations

import numpy as np
import pytest

from dcem.calibration.fitting import costed_objective, estimate_confusion, estimate_prior, fit_thresholds
from dcem.core.config import MediatorConfig
from dcem.core.panel import Panel
from dcem.core.replay import score_reports
from common.errors import InputError
from dcem.synthetic.generator import LABELS, synthetic_loss


def test_exact_smoothing_formula_on_a_tiny_example() -> None:
    truth = np.array([0, 0, 0, 1])
    reports = np.array([0, 0, 1, 2])
    c = estimate_confusion(truth, reports, 3, alpha=0.5)[0]
    # row 0: counts (2, 1, 0), n = 3, denominator 3 + 0.5 * 4 = 5
    np.testing.assert_allclose(c[0], [(2 + 1.0) / 5, (1 + 0.5) / 5, 0.5 / 5])
    # row 1: counts (0, 0, 1), n = 1, denominator 3
    np.testing.assert_allclose(c[1], [0.5 / 3, 1.0 / 3, 1.5 / 3])
    # row 2: never seen -> diagonal-leaning (1, 1, 2) / 4
    np.testing.assert_allclose(c[2], [0.25, 0.25, 0.5])


def test_rows_positive_and_stochastic_for_random_data() -> None:
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 4, 50)
    reports = rng.integers(0, 4, (50, 3))
    c = estimate_confusion(truth, reports, 4)
    assert c.shape == (3, 4, 4)
    assert (c > 0).all()
    np.testing.assert_allclose(c.sum(axis=2), 1.0)
    with pytest.raises(InputError):
        estimate_confusion(truth, reports + 4, 4)


def test_prior_modes() -> None:
    truth = np.array([0, 1, 1, 1])
    np.testing.assert_allclose(estimate_prior(truth, 3, "uniform"), [1 / 3] * 3)
    np.testing.assert_allclose(estimate_prior(truth, 3, "empirical"), [1.5 / 5.5, 3.5 / 5.5, 0.5 / 5.5])
    with pytest.raises(InputError):
        estimate_prior(truth, 3, "flat")


def _world(seed: int, n: int = 600) -> tuple[Panel, np.ndarray, np.ndarray]:
    """Two noisy label reporters over 8 rounds; agent 1 improves with the rounds."""
    rng = np.random.default_rng(seed)
    truth = rng.choice(3, size=n, p=[0.2, 0.45, 0.35])
    acc = np.array([0.55, 0.45])[None, None, :] + np.linspace(0, 0.3, 8)[None, :, None]
    right = rng.random((n, 8, 2)) < acc
    noise = rng.integers(0, 3, (n, 8, 2))
    reports = np.where(right, truth[:, None, None], noise)
    conf = estimate_confusion(truth, reports[:, 0], 3)
    panel = Panel(LABELS, conf, estimate_prior(truth, 3, "empirical"), synthetic_loss())
    return panel, reports, truth


def test_fit_improves_the_objective_on_its_own_data() -> None:
    panel, reports, truth = _world(0)
    base = MediatorConfig(prior="empirical", t_max=8)
    fit = fit_thresholds(panel, reports, truth, base)
    j_base = costed_objective(score_reports(panel, reports, base), truth, panel.loss)
    j_fit = costed_objective(score_reports(panel, reports, fit.config), truth, panel.loss)
    assert j_fit <= j_base
    assert fit.report["objective"] == pytest.approx(j_fit)
    assert fit.config.eps_safe < fit.config.eps_low
    assert {k: getattr(fit.config, k) for k in ("alpha", "window", "t_max", "prior")} == \
        {"alpha": 1.0, "window": 2, "t_max": 8, "prior": "empirical"}


def test_fit_depends_on_tuning_data_only() -> None:
    panel, reports, truth = _world(1)
    base = MediatorConfig(prior="empirical", t_max=8)
    fit = fit_thresholds(panel, reports, truth, base)
    again = fit_thresholds(panel, reports.copy(), truth.copy(), base)
    assert fit.config == again.config  # a pure function of (panel, tuning reports, truth)
    flipped = np.where(truth == 1, 0, truth)  # other labels on the same tuning reports
    other = fit_thresholds(panel, reports, flipped, base)
    assert other.report["objective"] != pytest.approx(fit.report["objective"])
    assert other.config != fit.config


def test_costed_objective_counts_each_term() -> None:
    panel, reports, truth = _world(2, n=50)
    cfg = MediatorConfig(prior="empirical", t_max=8, eps_safe=0.0, eps_low=1e-9, delta=1e9, s_asym=1e9)
    sc = score_reports(panel, reports, cfg)  # stagnation escalates every case at round 3
    assert (sc.outcome_action == 3).all() and (sc.outcome_round == 3).all()
    assert costed_objective(sc, truth, panel.loss, c_esc=0.4, c_round=0.1) == pytest.approx(0.4 + 0.3)
