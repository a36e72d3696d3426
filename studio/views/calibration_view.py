"""What the Calibration sets page shows, computed without Streamlit.

The page's steps after a file is chosen: reading the optional label order, parsing the
upload into a :class:`~dcem.calibration.sets.CalibrationSet` with its warnings, and the
tables drawn for a loaded set (counts, smoothed confusion matrices, recall, class counts
and prior), what a set is for and where it can go next (:data:`SET_PURPOSE`,
:data:`SET_USES`, :func:`set_download`).  Every invalid input raises :class:`common.errors.InputError` with a message
the page shows as is; the tables are bounded by the set's size caps
(:func:`dcem.calibration.csv_import.check_table_size`).  The page only lays the results
out in widgets.

The loaded set lives in the session under :data:`CALIB_SET_KEY` (``"calib_set"``): the
Calibration sets page puts it there when a set loads and removes it when a load fails;
the Escalation review page adds reviewed cases to it; the Loss and thresholds (what-if)
page offers to re-score a stored run with it (:mod:`dcem.analysis.whatif_calibration`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from dcem.calibration.fitting import ALPHA
from dcem.calibration.sets import CalibrationSet, parse_calibration_csv, recall_from_counts, smoothed_confusion
from common.errors import InputError
from common.fields import Instance, Number, check
# names its page imports from here (pages import from studio only)
from dcem.calibration.csv_import import MAX_AGENTS, MAX_LABELS
from dcem.analysis.calibration_sources import (
    example_csv,
    stored_run_calibration_set,
    synthetic_calibration_set,
)
from dcem.calibration.sets import CSV_COLUMNS
from dcem.calibration.label_free_sets import AUTO, estimator_note, usable_estimate
from dcem.core.vocabulary import SCENARIOS
from studio.views.session_keys import CALIB_SET as CALIB_SET_KEY

__all__ = ["CALIB_SET_KEY", "SET_PURPOSE", "SET_USES", "SetUse", "set_download", "MAX_SHOWN_AGENTS",
           "MAX_CAPTION_LABELS", "ESTIMATOR_CHOICES", "ESTIMATOR_NAMES", "LABEL_FREE_NOTE", "ALPHA_MIN", "ALPHA_MAX", "CalibrationView", "label_order", "load_upload",
           "calibration_view", "prior_table", "set_caption", "shown_agents"]

MAX_SHOWN_AGENTS = 4
"""Confusion heatmaps drawn at once; with more agents the page offers a choice."""
MAX_CAPTION_LABELS = 20
ALPHA_MIN, ALPHA_MAX = 0.01, 10.0
"""The smoothing alpha the page offers."""
PRIOR_MODES = ("uniform", "empirical")
ESTIMATOR_CHOICES = (AUTO, "dawid-skene", "one-coin")
"""How cases without a true label are estimated: automatic (Dawid-Skene with 3 or more
agents, else one-coin), or one of the two named."""
ESTIMATOR_NAMES = {AUTO: "automatic (Dawid-Skene with 3+ agents, else one-coin)",
                   "dawid-skene": "Dawid-Skene (a full matrix per agent; 3+ agents)",
                   "one-coin": "one-coin Dawid-Skene (one accuracy per agent)"}
LABEL_FREE_NOTE = (
    "cases without a label are estimated from the agents' reports by the Dawid-Skene model (the labelled ones fixed to "
    "their truth), which needs every agent's report on every case and at least 10 cases. With two agents the reports "
    "cannot tell which one is right when they disagree, so at least 6 labelled cases on which exactly one of them is "
    "right, all for the same agent, are needed. An estimate whose classes look permuted, whose agents come out worse "
    "than chance, or that ranks the agents against the labelled cases or their agreement is refused with the reason. "
    "Labels still matter: see the Glossary's entry on confusions without labels.")
"""Session-state key of the loaded calibration set (a :class:`CalibrationSet`)."""

SET_PURPOSE = (
    "**What a calibration set is for.** The mediator does not take an agent's report at face value: it turns "
    "the report into a posterior over the true condition through that agent's confusion matrix (row = true "
    "label, column = reported label) and the prior. An agent's reliability, the posterior weight on its own "
    "report that sets its share of the pooled belief, follows from the same matrix. The matrices and the "
    "prior are estimated from a calibration set: reports like these, counted against their labels or, for cases "
    "without one, estimated by the Dawid-Skene model. A set can therefore serve as "
    "a run's calibration (its smoothed matrices and prior become the panel the mediator reasons with), or "
    "as labelled cases on which the stopping thresholds (eps_safe, eps_low, m_safe, delta) are re-fitted.")


@dataclass(frozen=True)
class SetUse:
    """A page the set relates to: its path, its title, what it does with a set today and
    the label of the link to it (``link``; the title when empty)."""

    page: str
    title: str
    does: str
    link: str = ""

    @property
    def label(self) -> str:
        return self.link or self.title


SET_USES: tuple[SetUse, ...] = (
    SetUse("pages/review.py", "Escalation review",
           "adds the cases a reviewer has labelled to this set (button under *Use the reviews*): a case the set "
           "holds (a set from the same run's reports) gets the reviewer's final label, the others join as rows."),
    SetUse("pages/whatif.py", "Loss and thresholds",
           "re-scores a stored run with this set: its switch \"Use the loaded calibration set\" gives every cell "
           f"of the run this set's confusion matrices (smoothed with alpha = {ALPHA:g}, as the run's own were, "
           "whatever smoothing this page shows) and, for cells with the empirical prior, its prior. The thresholds, "
           "the loss and the recorded reports stay the run's, and the changes against the run's own calibration "
           "show the effect. The set must have the run's labels (any order) and as many agents as each cell "
           "of the run (matched by position); otherwise that page says what differs.",
           link="Use in Loss and thresholds"),
    SetUse("pages/experiments.py", "Experiments",
           "launches synthetic runs whose calibration data are drawn from the scenario itself; a new run cannot "
           "take this set as its calibration."),
)
"""Where a loaded set can go from the Calibration sets page, said honestly."""


def set_download(calib: CalibrationSet) -> tuple[bytes, str]:
    """The set as CSV bytes in the upload format (the page can load them again) and a file
    name made from its source (letters, digits, ``.``, ``_`` and ``-`` only)."""
    calib = _calibration_set(calib)
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", calib.source.removesuffix(".csv")).strip("-.")[:60] or "set"
    return calib.to_csv().encode("utf-8"), f"calibration-{stem}.csv"


def label_order(text: str | None) -> list[str] | None:
    """The comma-separated label order typed on the page, or None when it is blank."""
    if text is None:
        return None
    check("labels", text, Instance(str, msg="expected comma-separated label names, got {type}"), error=InputError)
    labels = [x.strip() for x in text.split(",") if x.strip()]
    return labels or None


def load_upload(data: bytes | str, order: str | None, name: str,
                estimator: str = AUTO) -> tuple[CalibrationSet, list[str]]:
    """Parse an uploaded calibration CSV (with the typed label order, if any; cases
    without a true label estimated with ``estimator``, :data:`ESTIMATOR_CHOICES`).

    Returns the set (its source is the file name) and the parser's warnings; raises
    :class:`InputError` naming the problem (line, column, value, limit, or the problems
    of a label-free estimate).
    """
    return parse_calibration_csv(data, labels=label_order(order), source=str(name) or "uploaded CSV",
                                 estimator=_estimator(estimator))


def _estimator(value: object) -> str:
    if value not in ESTIMATOR_CHOICES:
        raise InputError("estimator", f"must be one of {', '.join(ESTIMATOR_CHOICES)}, got {value!r}")
    return str(value)


@dataclass(frozen=True, eq=False)
class CalibrationView:
    """The tables of a loaded set as the page shows them.

    counts : int64 (A, K, K), over the labelled rows; smoothed : float (A, K, K), rows sum
    to 1 (counted, or for a label-free set the estimate); recall : float (A, K), NaN where
    an agent has no rows of a class (for a label-free set the estimate's diagonal);
    estimated : whether the matrices come from a label-free estimate
    """

    counts: np.ndarray
    smoothed: np.ndarray
    recall: np.ndarray
    estimated: bool = False

    def matrix_title(self, agent: str) -> str:
        """The heading of one agent's heatmap."""
        if self.estimated:
            return f"{agent}: estimated probabilities"
        return f"{agent}: counts and smoothed probabilities"

    @property
    def recall_title(self) -> str:
        return "Per-class recall, estimated (the matrices' diagonal)" if self.estimated else "Per-class recall"


def _alpha(value: object) -> float:
    return float(check("alpha", value, Number(numpy=True, msg="must be a number, got {value!r}"),
                       Number(ALPHA_MIN, ALPHA_MAX, numpy=True, msg=f"smoothing must lie in {ALPHA_MIN}..{ALPHA_MAX}, "
                                                                    "got {value!r}"), error=InputError))


def _calibration_set(calib: object) -> CalibrationSet:
    return check("calibration set", calib, Instance(CalibrationSet, msg="expected a CalibrationSet, got {type}"),
                 error=InputError)


def set_caption(calib: CalibrationSet) -> str:
    """Cases (and how many are labelled), agents, the labels (the first
    :data:`MAX_CAPTION_LABELS`, then a count) and where the confusions come from."""
    calib = _calibration_set(calib)
    labels = list(calib.labels)
    shown = ", ".join(labels[:MAX_CAPTION_LABELS])
    if len(labels) > MAX_CAPTION_LABELS:
        shown += f", ... ({len(labels)} labels)"
    labelled = int(calib.class_counts().sum())
    cases = f"{calib.n_cases} cases" + ("" if labelled == calib.n_cases else f" ({labelled} labelled)")
    return f"{cases}, {calib.n_agents} agents, labels {shown}. {estimator_note(calib)}"


def calibration_view(calib: CalibrationSet, alpha: float) -> CalibrationView:
    """Counts, smoothed confusions (``alpha``) and recall of ``calib``."""
    calib = _calibration_set(calib)
    alpha = _alpha(alpha)
    counts = calib.counts()  # once: the (A, K, K) tables are the largest arrays of the page
    if calib.estimator != "counts":
        smoothed = calib.confusion(alpha)
        return CalibrationView(counts=counts, smoothed=smoothed,
                               recall=np.diagonal(smoothed, axis1=1, axis2=2).copy(), estimated=True)
    return CalibrationView(counts=counts, smoothed=smoothed_confusion(counts, alpha),
                           recall=recall_from_counts(counts))


def prior_table(calib: CalibrationSet, prior_mode: str, alpha: float) -> dict[str, list]:
    """The prior as the page's table: columns label, cases (distinct labelled cases per
    class), for a label-free set estimated cases (the EM's class shares summed), and
    prior (``prior_mode`` uniform or empirical, smoothed with ``alpha``), K rows each."""
    calib = _calibration_set(calib)
    alpha = _alpha(alpha)
    if prior_mode not in PRIOR_MODES:
        raise InputError("prior", f"must be 'uniform' or 'empirical', got {prior_mode!r}")
    table = {"label": list(calib.labels), "cases": calib.class_counts().tolist()}
    if calib.estimator != "counts":  # the EM's share of every case, labelled or not
        table["estimated cases"] = [round(float(v), 1) for v in usable_estimate(calib, alpha).posteriors.sum(axis=0)]
    return table | {"prior": [round(float(p), 4) for p in calib.prior(prior_mode, alpha)]}


def shown_agents(calib: CalibrationSet, picked: Sequence[str] | None = None) -> list[int]:
    """Indices of the agents whose heatmaps are drawn: every agent when there are at most
    :data:`MAX_SHOWN_AGENTS`, else the picked names (known ones, at most that many) or the
    first agents when none is picked."""
    if calib.n_agents <= MAX_SHOWN_AGENTS:
        return list(range(calib.n_agents))
    position = {a: i for i, a in enumerate(calib.agents)}
    chosen = [position[a] for a in (picked or ()) if a in position][:MAX_SHOWN_AGENTS]
    return chosen or list(range(MAX_SHOWN_AGENTS))
