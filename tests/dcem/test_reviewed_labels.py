"""Reviewed cases into a calibration set (dcem.calibration.reviewed_labels): labels for the
cases the set holds, new rows for the rest, and refusals that keep the set as it was."""
from __future__ import annotations

import numpy as np
import pytest

from common.errors import InputError
from dcem.calibration.reviewed_labels import reviewed_into
from dcem.calibration.sets import CalibrationSet, from_matrix

LABELS = ("flu", "cold", "covid")


def _panel(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    truth = rng.choice(3, n, p=(0.5, 0.3, 0.2))
    reports = np.stack([np.where(rng.random(n) < acc, truth, (truth + rng.integers(1, 3, n)) % 3)
                        for acc in (0.8, 0.7, 0.75)], axis=1)
    return truth, reports


def _sets(n: int, reviewed: list[int]) -> tuple[CalibrationSet, CalibrationSet, np.ndarray]:
    truth, reports = _panel(n)
    ids = [f"c{i}" for i in range(n)]
    unlabelled = from_matrix(ids, np.full(n, -1), reports, LABELS, "run reports", estimator="dawid-skene")
    review = from_matrix([ids[i] for i in reviewed], truth[reviewed], reports[reviewed], LABELS, "reviews of run r")
    return unlabelled, review, truth


def test_reviews_label_the_cases_the_set_holds_and_the_estimate_uses_them() -> None:
    current, review, truth = _sets(80, [3, 7, 11])
    before = current.confusion()
    out = reviewed_into(current, review)
    assert out.labelled == 3 and out.added == 0
    got = out.calibration_set
    assert got.n_cases == 80 and got.n_rows == current.n_rows and got.estimator == "dawid-skene"
    first = {c: t for c, t in zip(got.case_ids, got.truth.tolist())}
    assert [first[f"c{i}"] for i in (3, 7, 11)] == truth[[3, 7, 11]].tolist()
    assert sum(t >= 0 for t in first.values()) == 3
    assert not np.allclose(got.confusion(), before)  # estimated again, the three fixed to their truth
    assert got.source == "run reports + reviews of run r"
    assert out.message == ("3 reviewed cases of the set now have the reviewer's label. The calibration set has "
                           "3 labelled of 80 cases (see the Calibration sets page).")


def test_reviews_of_cases_the_set_lacks_come_in_as_rows() -> None:
    current, review, _ = _sets(40, [1, 2])
    _, other, _ = _sets(40, [5])
    later = from_matrix(["new-1"], other.truth[:1], other.report.reshape(1, -1), LABELS, "reviews of run r")
    both = from_matrix(["c1", "new-1"], np.r_[review.truth[0], later.truth[0]],
                       np.stack([review.report[:3], later.report]), LABELS, "reviews of run r")
    out = reviewed_into(current, both)
    assert (out.labelled, out.added) == (1, 1) and out.calibration_set.n_cases == 41
    assert out.message.startswith("1 reviewed case of the set now has the reviewer's label; 1 reviewed case "
                                  "joined the set as new rows.")
    alone = reviewed_into(None, review)
    assert alone.calibration_set is review and (alone.labelled, alone.added) == (0, 2)


def test_a_set_from_another_source_or_with_another_label_is_refused() -> None:
    current, review, truth = _sets(40, [4])
    changed = CalibrationSet(current.labels, current.agents, current.case_ids, current.truth, current.agent,
                             np.where(np.array(current.case_ids) == "c4", (current.report + 1) % 3, current.report),
                             "other run", estimator="dawid-skene")
    with pytest.raises(InputError, match="case 'c4' is in the calibration set with other reports"):
        reviewed_into(changed, review)
    labelled = from_matrix([f"c{i}" for i in range(40)], (truth + 1) % 3, _panel(40)[1], LABELS, "labelled")
    with pytest.raises(InputError, match="case 'c4' already has the label") as info:
        reviewed_into(labelled, review)
    assert str(info.value).endswith("build the set from the run's reports without their labels to take the "
                                    "reviewers' labels instead")
    renamed = from_matrix([f"c{i}" for i in range(40)], truth, _panel(40)[1], ("a", "b", "c"), "renamed")
    with pytest.raises(InputError, match="labels"):
        reviewed_into(renamed, review)
