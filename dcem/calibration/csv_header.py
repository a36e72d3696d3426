"""The header line of a calibration CSV: where the columns are.

``case_id``, ``agent`` and ``reported_label`` are required; ``true_label`` is optional (a
file without it holds unlabelled reports, :data:`OPTIONAL_COLUMN`).  Names are matched
case-insensitively after stripping surrounding spaces; spaces and hyphens inside a name
count as underscores (``"Case ID"`` is ``case_id``).  Other columns are ignored and named
in the warnings.
"""
from __future__ import annotations

import re

from dcem.calibration.csv_limits import CSV_COLUMNS, MAX_LISTED_WARNINGS
from common.errors import InputError

__all__ = ["OPTIONAL_COLUMN", "header_index", "is_header_row"]

OPTIONAL_COLUMN = "true_label"
"""The column a file may leave out: its cases then have no label."""

_SEPARATOR_HINTS = {";": "semicolons", "\t": "tabs", "|": "vertical bars"}


def _norm(name: str) -> str:
    return re.sub(r"[\s\-]+", "_", name.strip().lower())


def is_header_row(values: tuple[str, str, str, str]) -> bool:
    """Whether a row's case_id, agent, reported_label and true_label values are those
    column names (as the header spells them): a header line repeated below line 1.  A
    blank true_label value (a file without that column) is not compared."""
    names = tuple(_norm(v) for v in values)
    return names == CSV_COLUMNS or (not values[3] and names[:3] == CSV_COLUMNS[:3])


def header_index(header: list[str], warnings: list[str]) -> dict[str, int]:
    """Column positions by name (``true_label`` absent when the file has no such column);
    ignored columns are added to ``warnings``."""
    names = [_norm(h) for h in header]
    index: dict[str, int] = {}
    for pos, name in enumerate(names):
        if name in CSV_COLUMNS:
            if name in index:
                raise InputError("file", f"column {name} appears more than once in the header (line 1)")
            index[name] = pos
    missing = [c for c in CSV_COLUMNS if c not in index and c != OPTIONAL_COLUMN]
    if missing:
        found = ", ".join(repr(h.strip()[:40]) for h in header[:8]) + (", ..." if len(header) > 8 else "")
        hint = ""
        if len(header) == 1:
            for sep, word in _SEPARATOR_HINTS.items():
                if sep in header[0]:
                    hint = f"; the header seems to be separated by {word}, use commas"
                    break
        plural = "s" if len(missing) > 1 else ""
        raise InputError("file", f"missing required column{plural} {', '.join(missing)} in the header "
                         f"(line 1 must name {', '.join(CSV_COLUMNS[:3])} and, for labelled cases, "
                         f"{OPTIONAL_COLUMN}; found {found}){hint}")
    extra = [h.strip() for pos, h in enumerate(header) if pos not in index.values()]
    named = [h for h in extra if h]
    if named:
        listed = ", ".join(h if len(h) <= 40 else h[:40] + "..." for h in named[:MAX_LISTED_WARNINGS])
        more = f", ... ({len(named):,} in all)" if len(named) > MAX_LISTED_WARNINGS else ""
        warnings.append(f"ignored extra column{'s' if len(named) > 1 else ''}: {listed}{more}")
    if len(extra) > len(named):
        warnings.append(f"ignored {len(extra) - len(named)} column(s) without a header name")
    if OPTIONAL_COLUMN not in index:
        hint = (f"; if {'one of them' if len(named) > 1 else 'it'} holds the true labels, name it {OPTIONAL_COLUMN}"
                if named else "")
        warnings.append(f"the header has no {OPTIONAL_COLUMN} column, so no case has a label{hint}")
    return index
