"""Calibration CSV files whose cases lack a true label: no true_label column, or blank
cells.  They read to a set with truth -1 and a label-free estimator; mixed files keep the
labels they give; conflicting and unusable files are refused with the reason."""
from __future__ import annotations

import numpy as np
import pytest

from common.errors import InputError
from dcem.calibration.sets import from_matrix, parse_calibration_csv

LABELS = ("k0", "k1", "k2")


def _reports(n: int, agents: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    truth = rng.choice(3, n, p=(0.5, 0.3, 0.2))
    reports = np.stack([np.where(rng.random(n) < acc, truth, (truth + rng.integers(1, 3, n)) % 3)
                        for acc in (0.85, 0.75, 0.8, 0.7)[:agents]], axis=1)
    return truth, reports


def _csv(truth: np.ndarray, reports: np.ndarray, *, column: bool = True, keep: int = 0) -> str:
    head = "case_id,agent,reported_label" + (",true_label" if column else "")
    lines = [head]
    for i, row in enumerate(reports):
        for a, r in enumerate(row):
            true = f",k{truth[i]}" if i < keep else ","
            lines.append(f"c{i},agent {a + 1},k{r}" + (true if column else ""))
    return "\n".join(lines) + "\n"


def test_a_file_without_the_truth_column_is_estimated_by_dawid_skene_with_three_agents() -> None:
    truth, reports = _reports(400, 3)
    cset, warnings = parse_calibration_csv(_csv(truth, reports, column=False))
    assert cset.estimator == "dawid-skene" and (cset.truth == -1).all() and cset.n_cases == 400
    assert warnings == ["the header has no true_label column, so no case has a label",
                        "400 of 400 cases have no true label: the confusions and the prior are estimated from "
                        "the agents' reports (dawid-skene), not counted"]
    counted = from_matrix([f"c{i}" for i in range(400)], truth, reports, LABELS, "counted")
    assert np.abs(cset.confusion() - counted.confusion()).max() < 0.1
    with pytest.raises(InputError, match="at least 6, all for the same agent") as info:  # two: one-coin, refused
        parse_calibration_csv(_csv(truth, reports[:, :2], column=False))
    assert info.value.field == "agents" and "this set has none" in str(info.value)


def test_blank_cells_leave_some_cases_unlabelled_and_the_labelled_ones_are_kept() -> None:
    truth, reports = _reports(60, 3)
    text = _csv(truth, reports, keep=12)
    cset, warnings = parse_calibration_csv(text)
    assert cset.estimator == "dawid-skene"
    assert int(cset.class_counts().sum()) == 12 and int((cset.truth >= 0).sum()) == 36
    assert warnings[-1].startswith("48 of 60 cases have no true label")
    back, _ = parse_calibration_csv(cset.to_csv())  # blank cells written back, read back the same
    np.testing.assert_array_equal(back.truth, cset.truth)
    assert back.case_ids == cset.case_ids and back.estimator == "dawid-skene"
    one, _ = parse_calibration_csv(text, estimator="one-coin")
    assert one.estimator == "one-coin"
    with pytest.raises(InputError, match="counting needs every case labelled: choose the estimator"):
        parse_calibration_csv(text, estimator="counts")
    # the given-label check (every class needs labelled cases) is for counted files only
    ordered, warnings = parse_calibration_csv(text, labels=["k2", "k1", "k0", "k9"])
    assert ordered.labels == ("k2", "k1", "k0", "k9") and not any("appears only as" in w for w in warnings)


def test_a_labelled_file_is_still_counted_and_its_checks_still_apply() -> None:
    truth, reports = _reports(30, 2)
    cset, warnings = parse_calibration_csv(_csv(truth, reports, keep=30))
    assert cset.estimator == "counts" and (cset.truth >= 0).all() and not warnings
    for choice in ("one-coin", "dawid-skene"):  # the choice is for unlabelled cases: none here, so counted
        assert parse_calibration_csv(_csv(truth, reports, keep=30), estimator=choice)[0].estimator == "counts"
    with pytest.raises(InputError, match="class 'k9' has no calibration rows"):
        parse_calibration_csv(_csv(truth, reports, keep=30), labels=["k0", "k1", "k2", "k9"])


@pytest.mark.parametrize("text, fragment", [
    ("case_id,agent,reported_label\nc1,A,a\nc1,B,b\nc2,A,a\nc2,B,a\ncase_id,agent,reported_label\n",
     "line 6 repeats the header"),
    ("case_id,agent,reported_label,true_label\nc1,A,a,\nc1,B,b,a\n", "case 'c1' has true label 'a' but line 2 "
     "leaves it blank"),
    ("case_id,agent,reported_label\nc1,A,a\nc1,B,b\nc1,C,a\nc2,A,a\nc2,B,a\nc2,C,b\n",
     "only 2 cases: at least 10 are needed"),
    ("case_id,agent,reported_label\nc1,A,a\nc1,B,b\nc2,A,a\nc2,B,a\n",
     "with two agents the reports alone cannot tell which one is right when they disagree"),
    ("case_id,agent,reported_label\nc1,A,a\nc1,B,b\nc2,A,a\n", "every agent's report on every case"),
    ("case_id,agent,reported_label\nc1,A,a\nc2,A,b\n", "one-coin cannot identify the agents' matrices from 1"),
])
def test_unusable_unlabelled_files_are_refused_with_the_reason(text: str, fragment: str) -> None:
    with pytest.raises(InputError) as info:
        parse_calibration_csv(text)
    assert fragment in str(info.value)


def test_dawid_skene_is_refused_for_two_agents_when_asked_for() -> None:
    truth, reports = _reports(50, 2)
    with pytest.raises(InputError, match="dawid-skene cannot identify the agents' matrices from 2"):
        parse_calibration_csv(_csv(truth, reports, column=False), estimator="dawid-skene")
    with pytest.raises(InputError, match="estimator: must be auto or one of"):
        parse_calibration_csv(_csv(truth, reports, column=False), estimator="em")


def test_a_truth_column_under_another_name_is_pointed_out() -> None:
    truth, reports = _reports(40, 3)
    text = _csv(truth, reports, keep=40).replace("true_label", "truth", 1)
    cset, warnings = parse_calibration_csv(text)
    assert cset.estimator == "dawid-skene" and (cset.truth == -1).all()
    assert warnings[:2] == ["ignored extra column: truth", "the header has no true_label column, so no case has a "
                            "label; if it holds the true labels, name it true_label"]
