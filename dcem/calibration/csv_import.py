"""Reading a calibration CSV file into label and agent indices.

Format (also documented for users in ``docs/calibration_csv.md``):

* UTF-8 text (a leading byte-order mark is accepted), comma-separated, standard CSV
  quoting (a value containing a comma is written in double quotes).
* Line 1 is a header naming the four required columns, in any order::

      case_id,agent,reported_label,true_label

  Header names are matched case-insensitively after stripping surrounding spaces;
  spaces and hyphens inside a name count as underscores (``"Case ID"`` is
  ``case_id``).  Other columns are ignored and reported in the warnings.
* One row per (case, agent): what ``agent`` reported for case ``case_id`` and the
  case's true label.  Every row of a case must give the same ``true_label``; a
  (case_id, agent) pair may appear only once.  An agent may skip cases (reported as a
  warning): its confusion matrix then uses only the cases it answered.
* Values are stripped of surrounding spaces and compared exactly (labels and agent
  names are case-sensitive).  Rows whose every field is blank are skipped.
* Labels: if the caller gives a label list, every ``true_label`` and
  ``reported_label`` must be in it, and every listed label must occur as a
  ``true_label`` (an empty class is an error).  Otherwise the labels are the sorted
  union of the true and reported labels (plain string order, so ``"k10"`` sorts before
  ``"k2"``); a label that only ever appears as a report is then a warning.
* Limits: ``max_bytes`` (default 5,000,000) and ``max_rows`` data rows (default
  200,000).  At least two labels and one data row are required.

Line numbers in messages count the header as line 1 (the physical line on which the
offending CSV record ends).  Every problem raises :class:`dcem.errors.InputError`
with a message naming the line, column, value or limit; no csv or pandas traceback
escapes.
"""
from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from dcem.errors import InputError

__all__ = ["CSV_COLUMNS", "MAX_BYTES", "MAX_ROWS", "ParsedCsv", "parse_csv_rows",
           "validate_label_list"]

CSV_COLUMNS = ("case_id", "agent", "reported_label", "true_label")
MAX_BYTES = 5_000_000
MAX_ROWS = 200_000
_SEPARATOR_HINTS = {";": "semicolons", "\t": "tabs", "|": "vertical bars"}


@dataclass(frozen=True, eq=False)
class ParsedCsv:
    """The rows of a valid calibration CSV, as indices.

    labels, agents : tuples of names (agents in order of first appearance)
    case_ids : tuple of str, one per row
    truth, agent, report : int64 arrays, one entry per row (indices into labels/agents)
    warnings : tuple of user-readable warnings
    """

    labels: tuple[str, ...]
    agents: tuple[str, ...]
    case_ids: tuple[str, ...]
    truth: np.ndarray
    agent: np.ndarray
    report: np.ndarray
    warnings: tuple[str, ...]


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
        raise InputError(field, f"every label must be a non-empty string, got {bad[0]!r}")
    out = tuple(x.strip() for x in out)
    seen: set[str] = set()
    for x in out:
        if x in seen:
            raise InputError(field, f"label {x!r} is listed twice")
        seen.add(x)
    if len(out) < 2:
        raise InputError(field, f"at least 2 labels are needed, got {len(out)}")
    return out


def _positive_int(value: object, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
        raise InputError(field, f"must be a positive integer, got {value!r}")
    return int(value)


def _decode(data: bytes | str, max_bytes: int) -> str:
    if isinstance(data, str):
        size = len(data.encode("utf-8", errors="surrogatepass"))
        text = data
    elif isinstance(data, (bytes, bytearray, memoryview)):
        raw = bytes(data)
        size = len(raw)
        if size > max_bytes:  # check before decoding a huge upload
            raise InputError("file", f"is {size:,} bytes; the limit is {max_bytes:,} bytes")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError("file", f"is not UTF-8 text (undecodable byte at position {exc.start}); "
                             "save it as 'CSV UTF-8'") from None
    else:
        raise InputError("file", f"expected the file's bytes or text, got {type(data).__name__}")
    if size > max_bytes:
        raise InputError("file", f"is {size:,} bytes; the limit is {max_bytes:,} bytes")
    text = text.removeprefix("\ufeff")
    if not text.strip():
        raise InputError("file", "is empty; expected a header line and calibration rows")
    if "\x00" in text:
        raise InputError("file", "contains NUL bytes; it looks like a binary file, not CSV text")
    return text


def _norm(name: str) -> str:
    return re.sub(r"[\s\-]+", "_", name.strip().lower())


def _header_index(header: list[str], warnings: list[str]) -> dict[str, int]:
    names = [_norm(h) for h in header]
    index: dict[str, int] = {}
    for pos, name in enumerate(names):
        if name in CSV_COLUMNS:
            if name in index:
                raise InputError("file", f"column {name} appears more than once in the header (line 1)")
            index[name] = pos
    missing = [c for c in CSV_COLUMNS if c not in index]
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
                         f"(line 1 must name {', '.join(CSV_COLUMNS)}; found {found}){hint}")
    extra = [h.strip() for pos, h in enumerate(header) if pos not in index.values()]
    named = [h for h in extra if h]
    if named:
        warnings.append(f"ignored extra column{'s' if len(named) > 1 else ''}: {', '.join(named)}")
    if len(extra) > len(named):
        warnings.append(f"ignored {len(extra) - len(named)} column(s) without a header name")
    return index


def _records(text: str, max_rows: int) -> tuple[dict[str, int], list[tuple[int, list[str]]], list[str]]:
    """Header index, the non-blank data records as (line, values) and warnings."""
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    warnings: list[str] = []
    rows: list[tuple[int, list[str]]] = []
    index: dict[str, int] | None = None
    n_fields = 0
    blank = 0
    try:
        for rec in reader:
            line = reader.line_num
            if not rec or all(not f.strip() for f in rec):
                blank += 1 if len(rec) > 1 else 0
                continue
            if index is None:
                index, n_fields = _header_index(rec, warnings), len(rec)
                continue
            if len(rec) != n_fields:
                raise InputError("file", f"line {line} has {len(rec)} fields but the header has "
                                 f"{n_fields}; every row needs the same columns (a value containing "
                                 "a comma must be quoted)")
            if len(rows) >= max_rows:
                raise InputError("file", f"has more than {max_rows:,} data rows; the limit is "
                                 f"{max_rows:,} rows")
            rows.append((line, [rec[index[c]].strip() for c in CSV_COLUMNS]))
    except csv.Error as exc:
        raise InputError("file", f"line {reader.line_num} is not valid CSV ({exc})") from None
    if index is None:  # unreachable: non-blank text always yields a header
        raise InputError("file", "is empty; expected a header line and calibration rows")
    if blank:
        warnings.append(f"skipped {blank} row(s) with only empty values")
    return index, rows, warnings


_Row = tuple[int, list[str]]  # (line, [case_id, agent, reported_label, true_label])


def _check_row(line: int, values: list[str], given_set: set[str] | None, given_text: str) -> None:
    """Reject a row with an empty value or (with a given label list) an unknown label."""
    for col, value in zip(CSV_COLUMNS, values):
        if not value:
            raise InputError(col, f"line {line} has an empty {col}")
    if given_set is not None:
        _, _, reported, true = values
        for col, value in (("true_label", true), ("reported_label", reported)):
            if value not in given_set:
                raise InputError(col, f"line {line}: label {value!r} is not one of the given "
                                 f"labels ({given_text})")


def _index_rows(rows: list[_Row], given: tuple[str, ...] | None
                ) -> tuple[dict[tuple[str, str], int], dict[str, tuple[str, int]], dict[str, int]]:
    """Check every row in file order; index them.

    Returns the first line of each (case, agent) pair, each case's (true label, first
    line) and each agent's position of first appearance.  Raises on duplicated pairs
    and on cases with conflicting true labels.
    """
    given_set = set(given) if given is not None else None
    given_text = ", ".join(given) if given is not None else ""
    pair_line: dict[tuple[str, str], int] = {}
    case_truth: dict[str, tuple[str, int]] = {}
    agent_order: dict[str, int] = {}
    for line, values in rows:
        _check_row(line, values, given_set, given_text)
        case, agent, _, true = values
        first = pair_line.setdefault((case, agent), line)
        if first != line:
            raise InputError("file", f"line {line}: case {case!r} already has a row for agent "
                             f"{agent!r} (line {first}); give one row per case and agent")
        known = case_truth.setdefault(case, (true, line))
        if known[0] != true:
            raise InputError("true_label", f"line {line}: case {case!r} has true label {true!r} but "
                             f"line {known[1]} gives {known[0]!r}; a case has one true label")
        agent_order.setdefault(agent, len(agent_order))
    return pair_line, case_truth, agent_order


def _given_labels(given: tuple[str, ...], true_seen: set[str]) -> tuple[str, ...]:
    """The caller's label list, after checking that every class has calibration rows."""
    for lab in given:
        if lab not in true_seen:
            raise InputError("true_label", f"class {lab!r} has no calibration rows (no row has "
                             f"true_label {lab!r}); add cases of it or leave it out of the labels")
    return given


def _found_labels(true_seen: set[str], reported_seen: set[str], warnings: list[str]) -> tuple[str, ...]:
    """Sorted union of true and reported labels; warns about report-only labels."""
    label_tuple = tuple(sorted(true_seen | reported_seen))
    if len(label_tuple) < 2:
        raise InputError("labels", f"found only 1 label ({label_tuple[0]!r}); at least 2 distinct "
                         "labels are needed")
    for lab in label_tuple:
        if lab not in true_seen:
            warnings.append(f"class {lab!r} appears only as a reported label; it has no "
                            "calibration rows, so its confusion rows are the smoothing default")
    return label_tuple


def _skipped_case_warnings(agents: tuple[str, ...], cases: list[str],
                           pair_line: dict[tuple[str, str], int]) -> list[str]:
    """One warning per agent that has no row for some cases."""
    out: list[str] = []
    for name in agents:
        missing = [c for c in cases if (c, name) not in pair_line]
        if missing:
            shown = ", ".join(repr(c) for c in missing[:3]) + (", ..." if len(missing) > 3 else "")
            out.append(f"agent {name!r} has no row for {len(missing)} of {len(cases)} cases "
                       f"({shown}); its confusion matrix uses only the cases it answered")
    return out


def _parsed(rows: list[_Row], label_tuple: tuple[str, ...], agent_order: dict[str, int],
            warnings: list[str]) -> ParsedCsv:
    """The rows as index arrays: truth, agent, report int64 (n_rows,) each."""
    lab_index = {lab: i for i, lab in enumerate(label_tuple)}
    return ParsedCsv(
        labels=label_tuple, agents=tuple(agent_order), case_ids=tuple(v[0] for _, v in rows),
        truth=np.array([lab_index[v[3]] for _, v in rows], dtype=np.int64),
        agent=np.array([agent_order[v[1]] for _, v in rows], dtype=np.int64),
        report=np.array([lab_index[v[2]] for _, v in rows], dtype=np.int64),
        warnings=tuple(warnings))


def parse_csv_rows(data: bytes | str, *, labels: Sequence[str] | None = None,
                   max_bytes: int = MAX_BYTES, max_rows: int = MAX_ROWS) -> ParsedCsv:
    """Parse and validate a calibration CSV (format in the module docstring).

    Raises :class:`InputError` for every invalid input; returns a :class:`ParsedCsv`
    whose ``warnings`` list the non-fatal findings (ignored columns, agents that skip
    cases, labels that only occur as reports).
    """
    max_bytes = _positive_int(max_bytes, "max_bytes")
    max_rows = _positive_int(max_rows, "max_rows")
    given = None if labels is None else validate_label_list(labels)
    text = _decode(data, max_bytes)
    _, rows, warnings = _records(text, max_rows)
    if not rows:
        raise InputError("file", "has a header but no data rows; at least one agent and one case "
                         "are needed")
    pair_line, case_truth, agent_order = _index_rows(rows, given)
    true_seen = {t for t, _ in case_truth.values()}
    reported_seen = {v[2] for _, v in rows}
    if given is not None:
        label_tuple = _given_labels(given, true_seen)
    else:
        label_tuple = _found_labels(true_seen, reported_seen, warnings)
    if not agent_order:  # unreachable with at least one row, kept as a guard
        raise InputError("agent", "at least one agent is required")
    warnings += _skipped_case_warnings(tuple(agent_order), list(case_truth), pair_line)
    return _parsed(rows, label_tuple, agent_order, warnings)
