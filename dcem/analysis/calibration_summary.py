"""What ``python -m dcem calibrate`` prints: a calibration CSV read into a set and its
confusion matrices and prior, counted or (cases without a label) estimated by the
Dawid-Skene model, as text or JSON.

The set comes from :func:`dcem.calibration.sets.parse_calibration_csv`, so the file's
format, its errors and the label-free estimator are those of the Calibration sets page
(``docs/calibration_csv.md``); an estimate with problems is refused with them named.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from common.bounded_read import read_at_most
from dcem.calibration.csv_limits import MAX_BYTES
from dcem.calibration.label_free_sets import estimator_note
from dcem.calibration.sets import CalibrationSet, parse_calibration_csv

__all__ = ["read_calibration_file", "calibration_summary", "summary_text"]


def read_calibration_file(path: str, *, labels: Sequence[str] | None = None, estimator: str = "auto",
                          max_bytes: int | None = None) -> tuple[CalibrationSet, list[str]]:
    """The set in the CSV file at ``path`` and the reader's warnings.  At most ``max_bytes``
    (default :data:`~dcem.calibration.csv_limits.MAX_BYTES`) are read: the bytes are
    counted as they come, so a device or a pipe that never ends (``/dev/zero``) stops at
    the limit with one line, as a large file does before it is read."""
    data = read_at_most(Path(path), MAX_BYTES if max_bytes is None else max_bytes)
    return parse_calibration_csv(data, labels=labels, source=Path(path).name, estimator=estimator)


def _number(value: float) -> float | None:
    return None if math.isnan(value) else round(float(value), 6)


def calibration_summary(cset: CalibrationSet, warnings: Sequence[str], *, alpha: float,
                        prior_mode: str) -> dict[str, Any]:
    """The set as JSON-ready values: shape, where the matrices come from, each agent's
    smoothed confusion matrix (rows = true label), its accuracy on the labelled cases
    (None without any), the prior and the reader's warnings."""
    confusion = cset.confusion(alpha)
    labelled = int(cset.class_counts().sum())
    return {
        "source": cset.source, "estimator": cset.estimator, "how": estimator_note(cset),
        "n_cases": cset.n_cases, "n_labelled": labelled, "labels": list(cset.labels), "agents": list(cset.agents),
        "alpha": alpha, "prior_mode": prior_mode,
        "confusion": np.round(confusion, 6).tolist(),
        "accuracy_on_labelled": [_number(v) for v in cset.accuracy()],
        "prior": [round(float(p), 6) for p in cset.prior(prior_mode, alpha)],
        "warnings": list(warnings),
    }


def summary_text(summary: dict[str, Any]) -> str:
    """The summary as a few lines for a terminal: shape, source of the matrices, warnings,
    each agent's diagonal (and accuracy on labelled cases) and the prior."""
    labels = summary["labels"]
    lines = [f"{summary['source']}: {summary['n_cases']:,} cases ({summary['n_labelled']:,} labelled), "
             f"{len(summary['agents'])} agents, labels {', '.join(labels)}", summary["how"]]
    lines += [f"warning: {w}" for w in summary["warnings"]]
    word = "estimated" if summary["estimator"] != "counts" else "smoothed"
    for name, matrix, acc in zip(summary["agents"], summary["confusion"], summary["accuracy_on_labelled"]):
        diagonal = ", ".join(f"{lab} {matrix[i][i]:.2f}" for i, lab in enumerate(labels))
        counted = "no labelled cases" if acc is None else f"accuracy on labelled cases {acc:.3f}"
        lines.append(f"{name}: {word} recall {diagonal}; {counted}")
    prior = ", ".join(f"{lab} {p:.3f}" for lab, p in zip(labels, summary["prior"]))
    lines.append(f"prior ({summary['prior_mode']}, alpha {summary['alpha']:g}): {prior}")
    return "\n".join(lines) + "\n"
