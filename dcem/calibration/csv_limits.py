"""The caps of a calibration set and the checks that enforce them (labels, agents, and
agents x labels², the size of the count and confusion tables); shared by the CSV reader
(:mod:`dcem.calibration.csv_import`) and :class:`dcem.calibration.sets.CalibrationSet`.

:data:`MAX_LABELS` = 200 distinct labels, :data:`MAX_AGENTS` = 1,000 agents, and agents x
labels² at most :data:`MAX_TABLE_CELLS` = 4,000,000 (the entries of the count and
confusion tables); a file beyond them stops at the first offending row.  Warnings name at
most :data:`MAX_LISTED_WARNINGS` agents that skip cases (and as many report-only labels)
one by one; the rest are counted in one line.
"""
from __future__ import annotations

import math
from typing import Sequence

from common.errors import InputError

__all__ = ["CSV_COLUMNS", "MAX_AGENTS", "MAX_BYTES", "MAX_LABELS", "MAX_LISTED_WARNINGS", "MAX_ROWS",
           "MAX_TABLE_CELLS", "check_table_size", "validate_label_list", "show_value", "listed"]

CSV_COLUMNS = ("case_id", "agent", "reported_label", "true_label")
MAX_BYTES = 5_000_000
MAX_ROWS = 200_000
MAX_LABELS = 200
MAX_AGENTS = 1_000
MAX_TABLE_CELLS = 4_000_000
"""Caps on a calibration set: labels, agents and agents x labels² (the entries of the
(A, K, K) count and confusion tables; 4,000,000 entries are 32 MB per float64 table)."""
MAX_LISTED_WARNINGS = 10
"""Agents that skip cases and labels that are only reported: how many are named one by
one in the warnings before the rest are counted in one line."""
def validate_label_list(labels: Sequence[str], field: str = "labels") -> tuple[str, ...]:
    """Return ``labels`` as a tuple after checking: at least two, non-empty, unique strings."""
    if isinstance(labels, str):
        raise InputError(field, "expected a list of label names, got a single string")
    try:
        out = tuple(labels)
    except TypeError:
        raise InputError(field, f"expected a list of label names, got {type(labels).__name__}") from None
    bad = [x for x in out if not isinstance(x, str) or not x.strip()]
    if bad:
        shown = show_value(bad[0]) if isinstance(bad[0], str) else repr(bad[0])[:40]
        raise InputError(field, f"every label must be a non-empty string, got {shown}")
    out = tuple(x.strip() for x in out)
    seen: set[str] = set()
    for x in out:
        if x in seen:
            raise InputError(field, f"label {show_value(x)} is listed twice")
        seen.add(x)
    if len(out) < 2:
        raise InputError(field, f"at least 2 labels are needed, got {len(out)}")
    return out


def show_value(value: str, limit: int = 40) -> str:
    """``repr`` of a value from the file, shortened when long (for messages)."""
    return repr(value) if len(value) <= limit else repr(value[:limit]) + "..."


def listed(labels: Sequence[str], limit: int = MAX_LISTED_WARNINGS) -> str:
    shown = ", ".join(lab if len(lab) <= 40 else lab[:40] + "..." for lab in labels[:limit])
    return shown + (f", ... ({len(labels):,} labels)" if len(labels) > limit else "")


def check_table_size(n_agents: int, n_labels: int) -> None:
    """Raise :class:`InputError` when ``n_agents`` agents and ``n_labels`` labels exceed the
    caps :data:`MAX_AGENTS`, :data:`MAX_LABELS` or :data:`MAX_TABLE_CELLS` (agents x labels²,
    the size of the count and confusion tables)."""
    if n_labels > MAX_LABELS:
        raise InputError("labels", f"{n_labels:,} distinct labels; a calibration set may have at most "
                         f"{MAX_LABELS:,} labels")
    if n_agents > MAX_AGENTS:
        raise InputError("agent", f"{n_agents:,} agents; a calibration set may have at most "
                         f"{MAX_AGENTS:,} agents")
    cells = n_agents * n_labels * n_labels
    if cells > MAX_TABLE_CELLS:
        raise InputError("file", f"{n_agents:,} agents and {n_labels:,} labels need {cells:,} "
                         f"confusion-matrix entries (agents x labels²); the limit is {MAX_TABLE_CELLS:,} "
                         f"{_CELLS_EXAMPLE}")


_CELLS_EXAMPLE = (f"(for example {MAX_TABLE_CELLS // MAX_LABELS ** 2:,} agents with {MAX_LABELS:,} labels, "
                  f"or {MAX_AGENTS:,} agents with {math.isqrt(MAX_TABLE_CELLS // MAX_AGENTS):,} labels)")
