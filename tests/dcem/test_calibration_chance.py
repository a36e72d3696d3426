"""The chance-level check of the agents' calibration."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from studio.views.calibration_chance import (
    UNKNOWN_N_BAND,
    calibration_size,
    chance_band,
    chance_checks,
    run_chance_warnings,
)
from dcem.store.database import Store


def test_band_is_two_standard_errors_of_chance() -> None:
    assert math.isclose(chance_band(8, 16), 2 * math.sqrt(1 / 8 * 7 / 8 / 16))
    assert chance_band(3, None) == UNKNOWN_N_BAND and chance_band(3, 0) == UNKNOWN_N_BAND
    assert chance_band(3, 10_000) < chance_band(3, 100)


def test_uninformative_agent_is_at_chance_and_an_informed_one_is_not() -> None:
    k = 4
    uniform = np.full((k, k), 1 / k)
    anchored = np.zeros((k, k))
    anchored[:, 2] = 1.0  # always reports class 2: recall 1 for one class, 0 for the others
    informed = 0.8 * np.eye(k) + 0.2 / k
    checks = chance_checks(np.stack([uniform, anchored, informed]), 400, ["U", "A", "I"])
    assert [c.name for c in checks if c.at_chance] == ["U", "A"]
    assert math.isclose(checks[1].balanced_accuracy, 0.25) and checks[2].balanced_accuracy > 0.8
    counts = chance_checks(np.stack([informed * 37]), 400)[0]  # counts are normalised per row
    assert math.isclose(counts.balanced_accuracy, checks[2].balanced_accuracy) and counts.name == "Agent 1"


def test_just_above_the_band_is_not_chance() -> None:
    k, n = 3, 1600
    band = chance_band(k, n)
    acc = 1 / k + band + 0.01
    matrix = np.full((k, k), (1 - acc) / (k - 1))
    np.fill_diagonal(matrix, acc)
    assert not chance_checks(matrix[None], n)[0].at_chance
    np.fill_diagonal(matrix, 1 / k + band - 0.01)
    assert chance_checks(matrix[None], n)[0].at_chance


def test_calibration_size_reads_either_run_kind() -> None:
    assert calibration_size({"n_cal": 16}) == 16 and calibration_size({"n_estimation": 1600}) == 1600
    assert calibration_size({}) is None and calibration_size({"n_cal": True}) is None


def test_run_warnings_name_the_chance_agent(clinical_db: Path) -> None:
    with Store(clinical_db) as store:
        run = store.latest_run("clinical")
        clinical = run_chance_warnings(store, run)
        synthetic = run_chance_warnings(store, "ui-run")
    assert len(clinical) == 1 and clinical[0].startswith("Agent B is at chance level")  # anchored on GERD
    assert "1/8 = 0.125" in clinical[0] and "16 calibration cases" in clinical[0]
    assert synthetic == []
