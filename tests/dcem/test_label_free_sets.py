"""Calibration sets with unlabelled cases (dcem.calibration.label_free_sets): the
Dawid-Skene estimate as a set's confusions and prior, refusals, and labels added later."""
from __future__ import annotations

import numpy as np
import pytest

from common.errors import InputError
from dcem.calibration.label_free_sets import with_labels
from dcem.calibration.sets import CalibrationSet, from_matrix
from dcem.core.panel import three_level_loss

LABELS = ("flu", "cold", "covid")


def _matrix(n: int, agents: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    truth = rng.choice(3, n, p=(0.5, 0.3, 0.2))
    accuracy = (0.8, 0.7, 0.75, 0.65)[:agents]
    reports = np.stack([np.where(rng.random(n) < acc, truth, (truth + rng.integers(1, 3, n)) % 3)
                        for acc in accuracy], axis=1)
    return truth, reports


def _unlabelled(truth: np.ndarray, reports: np.ndarray, estimator: str, keep: int = 0) -> CalibrationSet:
    counted = from_matrix([f"c{i}" for i in range(len(truth))], truth, reports, LABELS, "example")
    hidden = np.where(np.arange(len(truth)).repeat(reports.shape[1]) < keep * reports.shape[1], counted.truth, -1)
    return CalibrationSet(counted.labels, counted.agents, counted.case_ids, hidden, counted.agent, counted.report,
                          "unlabelled example", estimator=estimator)


def test_an_unlabelled_set_estimates_its_confusions_and_prior_without_labels() -> None:
    truth, reports = _matrix(1500, 3)
    counted = from_matrix([f"c{i}" for i in range(1500)], truth, reports, LABELS, "labelled")
    free = _unlabelled(truth, reports, "dawid-skene")
    assert np.abs(free.confusion() - counted.confusion()).max() < 0.08
    assert np.abs(free.prior("empirical") - counted.prior("empirical")).max() < 0.04
    assert np.allclose(free.prior("uniform"), 1 / 3)
    free.to_panel(three_level_loss(3, (2,), 3.0), prior_mode="empirical")  # the mediator accepts it
    assert (free.class_counts() == 0).all() and np.isnan(free.accuracy()).all()
    assert set(free.to_frame()["true_label"]) == {""}  # written back without labels


def test_counting_needs_every_label_and_a_label_free_estimate_every_report() -> None:
    truth, reports = _matrix(60, 3)
    with pytest.raises(InputError) as info:
        _unlabelled(truth, reports, "counts")
    assert info.value.field == "truth" and "choose the estimator dawid-skene or one-coin" in str(info.value)
    full = _unlabelled(truth, reports, "one-coin")
    gap = CalibrationSet(full.labels, full.agents, full.case_ids[1:], full.truth[1:], full.agent[1:], full.report[1:],
                         "gap", estimator="one-coin")
    with pytest.raises(InputError) as info:
        gap.confusion()
    assert info.value.field == "reports" and "every agent's report on every case" in str(info.value)
    with pytest.raises(InputError) as info:
        CalibrationSet(full.labels, full.agents, full.case_ids, full.truth, full.agent, full.report, "x",
                       estimator="em")
    assert info.value.field == "estimator"


def test_an_estimate_with_problems_is_refused_with_them_named() -> None:
    truth, reports = _matrix(60, 2)
    with pytest.raises(InputError) as info:  # two agents cannot identify full matrices
        _unlabelled(truth, reports, "dawid-skene").confusion()
    assert info.value.field == "agents"
    truth, reports = _matrix(6, 3)
    with pytest.raises(InputError) as info:
        _unlabelled(truth, reports, "one-coin").confusion()
    assert info.value.field == "calibration" and "only 6 cases" in str(info.value)


def test_labels_added_later_land_on_every_row_of_their_case() -> None:
    truth, reports = _matrix(200, 3)
    free = _unlabelled(truth, reports, "dawid-skene")
    given = {f"c{i}": LABELS[truth[i]] for i in range(20)}
    seeded = with_labels(free, given, source="with 20 reviewed cases")
    assert seeded.estimator == "dawid-skene" and seeded.source == "with 20 reviewed cases"
    assert (seeded.class_counts().sum(), seeded.n_rows) == (20, 600)
    assert with_labels(seeded, {"c0": LABELS[truth[0]]}).class_counts().sum() == 20  # the same label again
    with pytest.raises(InputError, match="already has the label"):
        with_labels(seeded, {"c0": LABELS[(truth[0] + 1) % 3]})
    with pytest.raises(InputError, match="not in this calibration set"):
        with_labels(seeded, {"nope": "flu"})
    with pytest.raises(InputError, match="not one of the set's labels"):
        with_labels(seeded, {"c1": "measles"})
    everything = with_labels(free, {f"c{i}": LABELS[t] for i, t in enumerate(truth)})
    counted = CalibrationSet(everything.labels, everything.agents, everything.case_ids, everything.truth,
                             everything.agent, everything.report, "all labelled")
    assert np.allclose(counted.confusion(), from_matrix([f"c{i}" for i in range(200)], truth, reports, LABELS,
                                                        "x").confusion())
