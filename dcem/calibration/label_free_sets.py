"""Calibration sets whose cases may lack a true label: the label-free estimate of a
:class:`~dcem.calibration.sets.CalibrationSet` and labels added to it later.

A set's ``estimator`` says where its confusions and prior come from: ``counts`` (the
labelled rows, every case labelled) or ``dawid-skene`` / ``one-coin``
(:func:`dcem.calibration.dawid_skene.estimate_without_labels` over every case, the
labelled ones fixed to their truth).  A label-free estimate needs every agent's report
on every case; an estimate with problems (label switching, a panel too small, two agents
without the labelled cases that settle which one is right, a ranking or agreement the data
contradict ...) is refused with them named.  :func:`with_labels` gives cases their true labels (the
reviewed escalations of the review page, say), so the same reports can be estimated
again with more labels or, once every case has one, counted.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

import numpy as np
import pandas as pd

from common.errors import InputError
from dcem.calibration.dawid_skene import LABEL_FREE_METHODS, LabelFreeEstimate, estimate_without_labels

if TYPE_CHECKING:
    from dcem.calibration.sets import CalibrationSet

__all__ = ["AUTO", "ESTIMATORS", "UNKNOWN", "choose_estimator", "estimator_note", "set_estimate", "usable_estimate",
           "with_labels"]

ESTIMATORS = ("counts", *LABEL_FREE_METHODS)
AUTO = "auto"
"""Estimator choice: ``counts`` when every case is labelled, else :func:`choose_estimator`."""
UNKNOWN = -1  # the truth index of a case without a label


def choose_estimator(estimator: str, n_agents: int, unlabelled: bool) -> str:
    """The estimator to use.  ``counts`` when no case is ``unlabelled`` (the choice is for
    cases without a label, and counting every labelled case is what the estimate would
    fix them to anyway); else ``estimator`` itself, or for :data:`AUTO` ``dawid-skene``
    with three or more agents (full matrices are identified) and ``one-coin`` with fewer."""
    if estimator != AUTO and estimator not in ESTIMATORS:
        raise InputError("estimator", f"must be {AUTO} or one of {', '.join(ESTIMATORS)}, got {estimator!r}")
    if not unlabelled:
        return "counts"
    if estimator == AUTO:
        return "dawid-skene" if n_agents >= 3 else "one-coin"
    return estimator


def estimator_note(cset: "CalibrationSet") -> str:
    """Where the set's confusions and prior come from, in one sentence."""
    n = cset.n_cases
    labelled = int(cset.class_counts().sum())
    if cset.estimator == "counts":
        return f"Confusions and prior counted from the {n:,} labelled cases."
    name = "Dawid-Skene (a full matrix per agent)" if cset.estimator == "dawid-skene" else \
        "one-coin Dawid-Skene (one accuracy per agent)"
    seeded = (f"; the {labelled:,} labelled cases are fixed to their truth" if labelled
              else "; no case has a label")
    return f"Confusions and prior estimated without labels by {name} from the reports on {n:,} cases{seeded}."


def _matrix(cset: "CalibrationSet") -> tuple[np.ndarray, np.ndarray]:
    """The (cases, agents) report matrix and each case's truth (or -1), cases in order of
    first appearance; every agent must have reported on every case."""
    cases = pd.Index(cset.case_ids)
    codes, uniques = pd.factorize(cases)
    n, a = len(uniques), cset.n_agents
    if len(cset.case_ids) != n * a:
        raise InputError("reports", f"a label-free estimate needs every agent's report on every case: "
                         f"{len(cset.case_ids):,} rows for {n:,} cases x {a} agents")
    reports = np.full((n, a), -1, dtype=np.int64)
    reports[codes, cset.agent] = cset.report
    truth = np.full(n, UNKNOWN, dtype=np.int64)
    truth[codes] = cset.truth
    return reports, truth


def set_estimate(cset: "CalibrationSet", alpha: float) -> LabelFreeEstimate:
    """The label-free estimate of a set whose estimator is ``dawid-skene`` or ``one-coin``
    (made once per smoothing ``alpha`` and kept with the set, which is immutable)."""
    cache: dict[float, LabelFreeEstimate] = cset.__dict__.setdefault("_estimates", {})
    key = float(alpha)
    if key not in cache:
        reports, truth = _matrix(cset)
        cache[key] = estimate_without_labels(reports, cset.n_labels, method=cset.estimator, truth=truth, alpha=alpha,
                                             agents=cset.agents)
    return cache[key]


def usable_estimate(cset: "CalibrationSet", alpha: float) -> LabelFreeEstimate:
    """:func:`set_estimate`, refused with its problems named when it has any."""
    est = set_estimate(cset, alpha)
    if not est.usable:
        raise InputError("calibration", f"the {cset.estimator} estimate of {cset.source or 'this set'} cannot be "
                         f"used: {'; '.join(est.problems)}")
    return est


def with_labels(cset: "CalibrationSet", labels: Mapping[str, str], *, source: str | None = None
                ) -> "CalibrationSet":
    """The set with true labels given to some cases (case id -> label name).  A case the
    set does not hold, a label outside the set's labels, or a case that already has a
    different label is refused; giving a case its own label again changes nothing."""
    from dcem.calibration.sets import CalibrationSet

    index = {lab: i for i, lab in enumerate(cset.labels)}
    known = set(cset.case_ids)
    truth = cset.truth.copy()
    case_ids = np.asarray(cset.case_ids, dtype=object)
    for case, label in labels.items():
        if case not in known:
            raise InputError("case_id", f"case {case!r} is not in this calibration set")
        if label not in index:
            raise InputError("true_label", f"{label!r} is not one of the set's labels ({', '.join(cset.labels)})")
        rows = case_ids == case
        current = set(truth[rows].tolist()) - {UNKNOWN}
        if current and current != {index[label]}:
            raise InputError("true_label", f"case {case!r} already has the label "
                             f"{cset.labels[current.pop()]!r}, not {label!r}")
        truth[rows] = index[label]
    return CalibrationSet(cset.labels, cset.agents, cset.case_ids, truth, cset.agent, cset.report,
                          source if source is not None else cset.source, estimator=cset.estimator)
