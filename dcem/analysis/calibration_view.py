"""What the Calibration sets page shows, computed without Streamlit.

The page's steps after a file is chosen: reading the optional label order, parsing the
upload into a :class:`~dcem.calibration.sets.CalibrationSet` with its warnings, and the
tables drawn for a loaded set (counts, smoothed confusion matrices, recall, class counts
and prior).  Every invalid input raises :class:`dcem.errors.InputError` with a message
the page shows as is; the tables are bounded by the set's size caps
(:func:`dcem.calibration.csv_import.check_table_size`).  The page only lays the results
out in widgets.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from dcem.calibration.sets import CalibrationSet, parse_calibration_csv, recall_from_counts, smoothed_confusion
from dcem.errors import InputError

__all__ = ["MAX_SHOWN_AGENTS", "MAX_CAPTION_LABELS", "ALPHA_MIN", "ALPHA_MAX", "CalibrationView", "label_order", "load_upload",
           "calibration_view", "prior_table", "set_caption", "shown_agents"]

MAX_SHOWN_AGENTS = 4
"""Confusion heatmaps drawn at once; with more agents the page offers a choice."""
MAX_CAPTION_LABELS = 20
ALPHA_MIN, ALPHA_MAX = 0.01, 10.0
"""The smoothing alpha the page offers."""
PRIOR_MODES = ("uniform", "empirical")


def label_order(text: str | None) -> list[str] | None:
    """The comma-separated label order typed on the page, or None when it is blank."""
    if text is None:
        return None
    if not isinstance(text, str):
        raise InputError("labels", f"expected comma-separated label names, got {type(text).__name__}")
    labels = [x.strip() for x in text.split(",") if x.strip()]
    return labels or None


def load_upload(data: bytes | str, order: str | None, name: str) -> tuple[CalibrationSet, list[str]]:
    """Parse an uploaded calibration CSV (with the typed label order, if any).

    Returns the set (its source is the file name) and the parser's warnings; raises
    :class:`InputError` naming the problem (line, column, value or limit).
    """
    return parse_calibration_csv(data, labels=label_order(order), source=str(name) or "uploaded CSV")


@dataclass(frozen=True, eq=False)
class CalibrationView:
    """The tables of a loaded set as the page shows them.

    counts : int64 (A, K, K); smoothed : float (A, K, K), rows sum to 1
    recall : float (A, K), NaN where an agent has no rows of a class
    """

    counts: np.ndarray
    smoothed: np.ndarray
    recall: np.ndarray


def _alpha(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise InputError("alpha", f"must be a number, got {value!r}")
    alpha = float(value)
    if not ALPHA_MIN <= alpha <= ALPHA_MAX:  # also refuses NaN
        raise InputError("alpha", f"smoothing must lie in {ALPHA_MIN}..{ALPHA_MAX}, got {value!r}")
    return alpha


def _calibration_set(calib: object) -> CalibrationSet:
    if not isinstance(calib, CalibrationSet):
        raise InputError("calibration set", f"expected a CalibrationSet, got {type(calib).__name__}")
    return calib


def set_caption(calib: CalibrationSet) -> str:
    """One line: cases, agents and the labels (the first :data:`MAX_CAPTION_LABELS`, then a count)."""
    calib = _calibration_set(calib)
    labels = list(calib.labels)
    shown = ", ".join(labels[:MAX_CAPTION_LABELS])
    if len(labels) > MAX_CAPTION_LABELS:
        shown += f", ... ({len(labels)} labels)"
    return f"{calib.n_cases} cases, {calib.n_agents} agents, labels {shown}"


def calibration_view(calib: CalibrationSet, alpha: float) -> CalibrationView:
    """Counts, smoothed confusions (``alpha``) and recall of ``calib``."""
    calib = _calibration_set(calib)
    alpha = _alpha(alpha)
    counts = calib.counts()  # once: the (A, K, K) tables are the largest arrays of the page
    return CalibrationView(counts=counts, smoothed=smoothed_confusion(counts, alpha),
                           recall=recall_from_counts(counts))


def prior_table(calib: CalibrationSet, prior_mode: str, alpha: float) -> dict[str, list]:
    """The prior as the page's table: columns label, cases (distinct cases per class) and
    prior (``prior_mode`` uniform or empirical, smoothed with ``alpha``), K rows each."""
    calib = _calibration_set(calib)
    alpha = _alpha(alpha)
    if prior_mode not in PRIOR_MODES:
        raise InputError("prior", f"must be 'uniform' or 'empirical', got {prior_mode!r}")
    return {"label": list(calib.labels), "cases": calib.class_counts().tolist(),
            "prior": [round(float(p), 4) for p in calib.prior(prior_mode, alpha)]}


def shown_agents(calib: CalibrationSet, picked: Sequence[str] | None = None) -> list[int]:
    """Indices of the agents whose heatmaps are drawn: every agent when there are at most
    :data:`MAX_SHOWN_AGENTS`, else the picked names (known ones, at most that many) or the
    first agents when none is picked."""
    if calib.n_agents <= MAX_SHOWN_AGENTS:
        return list(range(calib.n_agents))
    position = {a: i for i, a in enumerate(calib.agents)}
    chosen = [position[a] for a in (picked or ()) if a in position][:MAX_SHOWN_AGENTS]
    return chosen or list(range(MAX_SHOWN_AGENTS))
