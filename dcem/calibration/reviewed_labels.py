"""Reviewed cases into a calibration set: labels for the cases it holds, rows for the rest.

The Escalation review page turns a run's reviewed cases into calibration rows (the
agents' round-1 reports, the reviewer's final label as the truth).  A loaded set may
already hold those cases, without a label (a set built from the same run's reports for a
label-free estimate) or with one: then the review gives the case its label
(:func:`~dcem.calibration.label_free_sets.with_labels`) instead of adding the case twice.
A case the set holds with other reports than the reviewed rows is refused: the set is
not from that run, and a label would be attached to someone else's answers.  Cases the
set does not hold are added as new rows (:meth:`CalibrationSet.merge`).  A label-free set
is estimated again at once, so one whose new estimate has problems is refused with them
named.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from common.errors import InputError
from dcem.calibration.fitting import ALPHA
from dcem.calibration.label_free_sets import usable_estimate, with_labels
from dcem.calibration.sets import CalibrationSet

__all__ = ["ReviewedInto", "reviewed_into"]


@dataclass(frozen=True, eq=False)
class ReviewedInto:
    """The set after the reviews, how many of its cases got a label (``labelled``) and how
    many reviewed cases came in as new rows (``added``)."""

    calibration_set: CalibrationSet
    labelled: int
    added: int

    @property
    def message(self) -> str:
        total = self.calibration_set
        held = int(total.class_counts().sum())
        parts = []
        if self.labelled:
            plural = self.labelled != 1
            parts.append(f"{self.labelled} reviewed case{'s' * plural} of the set now {'have' if plural else 'has'} "
                         "the reviewer's label")
        if self.added:
            parts.append(f"{self.added} reviewed case{'s' * (self.added != 1)} joined the set as new rows")
        return (f"{'; '.join(parts)}. The calibration set has {held} labelled of {total.n_cases} cases "
                "(see the Calibration sets page).")


def _rows_by_case(cset: CalibrationSet, cases: set[str]) -> dict[str, dict[str, int]]:
    """case -> {agent name: reported label index} for the set's rows of ``cases``."""
    out: dict[str, dict[str, int]] = {}
    for case, a, r in zip(cset.case_ids, cset.agent.tolist(), cset.report.tolist()):
        if case in cases:
            out.setdefault(case, {})[cset.agents[a]] = r
    return out


def _check_same_reports(current: CalibrationSet, reviewed: CalibrationSet, cases: set[str]) -> None:
    mine, theirs = _rows_by_case(current, cases), _rows_by_case(reviewed, cases)
    for case in sorted(cases):
        a, b = mine[case], theirs[case]
        if a != b:
            raise InputError("case_id", f"case {case!r} is in the calibration set with other reports than the "
                             "reviewed run's round-1 reports; the set is not from this run, so its labels cannot "
                             "come from these reviews")


def reviewed_into(current: CalibrationSet | None, reviewed: CalibrationSet) -> ReviewedInto:
    """``reviewed`` (one row per reviewed case and agent, every case labelled) into
    ``current``: see the module docstring.  Without a current set, the reviewed set."""
    if current is None:
        return ReviewedInto(reviewed, 0, reviewed.n_cases)
    if reviewed.labels != current.labels:
        raise InputError("labels", f"the reviewed run's labels ({', '.join(reviewed.labels)}) differ from the "
                         f"calibration set's ({', '.join(current.labels)})")
    held = set(current.case_ids) & set(reviewed.case_ids)
    _check_same_reports(current, reviewed, held)
    # every row of a case carries the case's one truth (the set checks it)
    labels = {c: reviewed.labels[t] for c, t in zip(reviewed.case_ids, reviewed.truth.tolist()) if c in held}
    try:
        result = with_labels(current, labels, source=f"{current.source} + {reviewed.source}") if labels else current
    except InputError as exc:
        said = str(exc).removeprefix(f"{exc.field}: ")
        raise InputError(exc.field, f"{said}: the set labels that case otherwise than its reviewer; "
                         "build the set from the run's reports without their labels to take the reviewers' "
                         "labels instead") from None
    new_rows = np.array([c not in held for c in reviewed.case_ids])
    if new_rows.any():
        idx = np.flatnonzero(new_rows)
        extra = CalibrationSet(reviewed.labels, reviewed.agents, tuple(reviewed.case_ids[i] for i in idx),
                               reviewed.truth[idx], reviewed.agent[idx], reviewed.report[idx], reviewed.source)
        result = result.merge(extra, source=f"{current.source} + {reviewed.source}")
    if result.estimator != "counts":
        usable_estimate(result, ALPHA)
    return ReviewedInto(result, len(labels), len(set(reviewed.case_ids) - held))

