"""delta = c / kappa_1 of eq. (14), estimated on calibration trajectories."""
from __future__ import annotations

import numpy as np
import pytest

from dcem.calibration.fitting import ThresholdGrid, fit_thresholds
from dcem.calibration.stopping_cost import eq14_delta
from dcem.core.config import MediatorConfig
from common.errors import InputError
from tests.dcem.test_calibration import _world

LOSS = np.array([[0.0, 1.0], [5.0, 0.0]])


def test_delta_is_the_round_cost_over_the_slope_of_loss_on_energy() -> None:
    energy = np.array([[0.0, 1.0], [2.0, 3.0]])
    truth = np.array([0, 1])
    decision = np.array([[0, 0], [0, 0]])  # losses loss[d, y]: 0, 0 (case 0) and 1, 1 (case 1)
    got = eq14_delta(energy, decision, truth, LOSS, 0.01)
    slope, intercept = np.polyfit([0.0, 1.0, 2.0, 3.0], [0.0, 0.0, 1.0, 1.0], 1)
    assert slope > 0
    assert got.kappa_1 == pytest.approx(slope) and got.kappa_0 == pytest.approx(intercept)
    assert got.delta == pytest.approx(0.01 / slope) and got.n_points == 4


def test_an_energy_that_does_not_track_the_loss_leaves_delta_undefined() -> None:
    energy = np.array([[3.0, 2.0], [1.0, 0.0]])
    decision = np.array([[0, 0], [0, 0]])  # losses 0, 0 at the high energies, 1, 1 at the low ones
    got = eq14_delta(energy, decision, np.array([0, 1]), LOSS, 0.01)
    assert got.delta is None and got.kappa_1 < 0 and "slope" in got.note
    flat = eq14_delta(np.ones((2, 2)), decision, np.array([0, 1]), LOSS, 0.01)
    assert flat.delta is None and "does not vary" in flat.note
    with pytest.raises(InputError):
        eq14_delta(np.ones((2, 3)), decision, np.array([0, 1]), LOSS, 0.01)
    with pytest.raises(InputError):
        ThresholdGrid(delta_rule="guess")


def test_the_threshold_fit_reports_eq14_and_can_use_it() -> None:
    panel, reports, truth = _world(0)
    base = MediatorConfig(prior="empirical", t_max=8)
    fitted = fit_thresholds(panel, reports, truth, base)
    eq14 = fitted.report["eq14"]
    assert fitted.report["delta_rule"] == "fitted" and eq14["n_points"] == reports.shape[0] * reports.shape[1]
    assert eq14["delta"] is not None and eq14["kappa_1"] > 0
    used = fit_thresholds(panel, reports, truth, base, grid=ThresholdGrid(delta_rule="eq14"))
    assert used.report["delta_rule"] == "eq14" and used.config.delta == pytest.approx(eq14["delta"])
    assert used.report["delta_candidates"] == [pytest.approx(eq14["delta"])]
