"""Reading a calibration CSV file into label and agent indices.

Format (also documented for users in ``docs/calibration_csv.md``):

* UTF-8 text (a leading byte-order mark is accepted), comma-separated, standard CSV
  quoting (a value containing a comma is written in double quotes).
* Line 1 is a header naming the columns, in any order::

      case_id,agent,reported_label,true_label

  ``true_label`` may be left out (unlabelled reports) or left blank on a case's rows
  (that case has no label); such rows get the truth index -1, and the set's confusions
  are then estimated from the reports (:mod:`dcem.calibration.label_free_sets`).

  Header names are matched case-insensitively after stripping surrounding spaces;
  spaces and hyphens inside a name count as underscores (``"Case ID"`` is
  ``case_id``).  Other columns are ignored and reported in the warnings.
* One row per (case, agent): what ``agent`` reported for case ``case_id`` and the
  case's true label.  Every row of a case must give the same ``true_label`` (or leave
  it blank on every row); a
  (case_id, agent) pair may appear only once.  An agent may skip cases (reported as a
  warning): its confusion matrix then uses only the cases it answered.
* Values are stripped of surrounding spaces and compared exactly (labels and agent
  names are case-sensitive).  Rows whose every field is blank are skipped.
* Labels: if the caller gives a label list, every ``true_label`` and
  ``reported_label`` must be in it, and every listed label must occur as a
  ``true_label`` when every case is labelled (an empty class is an error).  Otherwise
  the labels are the sorted union of the true and reported labels (plain string order,
  so ``"k10"`` sorts before ``"k2"``); a label that only ever appears as a report is then
  a warning (not for a file with unlabelled cases, whose confusions are estimated).
* Limits: ``max_bytes`` (default 5,000,000) and ``max_rows`` data rows (default
  200,000); at least two labels and one data row.  The caps on the set's shape
  (:mod:`dcem.calibration.csv_limits`) are checked as each row is read, before any table
  is allocated.  Warnings are computed from row counts per agent.

Line numbers in messages count the header as line 1 (the physical line on which the
offending CSV record ends).  Every problem raises :class:`common.errors.InputError`
with a message naming the line, column, value or limit; no csv or pandas traceback
escapes.
"""
from __future__ import annotations

import csv
import io
from array import array
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from common.errors import InputError
from common.fields import Whole, check

from dcem.calibration.csv_limits import (CSV_COLUMNS, MAX_AGENTS, MAX_BYTES, MAX_LABELS, MAX_LISTED_WARNINGS,
                                         MAX_ROWS, MAX_TABLE_CELLS, check_table_size, validate_label_list)
from dcem.calibration.csv_header import header_index as _header_index
from dcem.calibration.csv_header import is_header_row
from dcem.calibration.csv_limits import _CELLS_EXAMPLE
from dcem.calibration.csv_limits import listed as _listed
from dcem.calibration.csv_limits import show_value as _show

__all__ = ["CSV_COLUMNS", "MAX_AGENTS", "MAX_BYTES", "MAX_LABELS", "MAX_ROWS", "MAX_TABLE_CELLS",
           "ParsedCsv", "check_table_size", "parse_csv_rows", "validate_label_list"]


@dataclass(frozen=True, eq=False)
class ParsedCsv:
    """The rows of a valid calibration CSV, as indices.

    labels, agents : tuples of names (agents in order of first appearance)
    case_ids : tuple of str, one per row
    truth, agent, report : int64 arrays, one entry per row (indices into labels/agents;
        truth -1 where the case has no label)
    warnings : tuple of user-readable warnings
    """

    labels: tuple[str, ...]
    agents: tuple[str, ...]
    case_ids: tuple[str, ...]
    truth: np.ndarray
    agent: np.ndarray
    report: np.ndarray
    warnings: tuple[str, ...]


def _positive_int(value: object, field: str) -> int:
    return int(check(field, value, Whole(1, numpy=True, msg="must be a positive integer, got {value!r}"),
                     error=InputError))


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


@dataclass(eq=False)
class _Scan:
    """What one pass over the records collects.  Labels, agents and cases are numbered in
    order of first appearance (given labels first, in the given order); ``row_*`` hold one
    entry per data row."""

    warnings: list[str] = field(default_factory=list)
    label_index: dict[str, int] = field(default_factory=dict)
    agent_index: dict[str, int] = field(default_factory=dict)
    case_index: dict[str, int] = field(default_factory=dict)
    case_truth: array = field(default_factory=lambda: array("q"))
    case_line: array = field(default_factory=lambda: array("q"))
    row_line: array = field(default_factory=lambda: array("q"))
    row_case: array = field(default_factory=lambda: array("q"))
    row_agent: array = field(default_factory=lambda: array("q"))
    row_truth: array = field(default_factory=lambda: array("q"))
    row_report: array = field(default_factory=lambda: array("q"))


def _new_label(scan: _Scan, value: str, line: int) -> int:
    index = scan.label_index[value] = len(scan.label_index)
    n_labels = index + 1
    if n_labels > MAX_LABELS:
        raise InputError("labels", f"line {line}: {_show(value)} is distinct label number {n_labels:,}; "
                         f"a calibration file may have at most {MAX_LABELS:,} labels (true and reported)")
    _check_cells(len(scan.agent_index), n_labels, line)
    return index


def _new_agent(scan: _Scan, value: str, line: int) -> int:
    index = scan.agent_index[value] = len(scan.agent_index)
    n_agents = index + 1
    if n_agents > MAX_AGENTS:
        raise InputError("agent", f"line {line}: {_show(value)} is agent number {n_agents:,}; a "
                         f"calibration file may have at most {MAX_AGENTS:,} agents")
    _check_cells(n_agents, len(scan.label_index), line)
    return index


def _check_cells(n_agents: int, n_labels: int, line: int) -> None:
    cells = n_agents * n_labels * n_labels
    if cells > MAX_TABLE_CELLS:
        raise InputError("file", f"line {line}: {n_agents:,} agents and {n_labels:,} labels need "
                         f"{cells:,} confusion-matrix entries (agents x labels²); the limit is "
                         f"{MAX_TABLE_CELLS:,} {_CELLS_EXAMPLE}")


def _label(scan: _Scan, col: str, value: str, line: int, given: tuple[str, ...] | None) -> int:
    """Index of a label not seen before: an error with a given label list, else a new label."""
    if given is not None:
        raise InputError(col, f"line {line}: label {_show(value)} is not one of the given labels "
                         f"({_listed(given)})")
    return _new_label(scan, value, line)


def _add_row(scan: _Scan, line: int, case: str, agent: str, reported: str, true: str,
             given: tuple[str, ...] | None) -> None:
    """Check one data row (empty values, labels, caps, duplicates, truth) and record it.
    A blank ``true`` is a case without a label (truth index -1)."""
    if not (case and agent and reported):
        col = next(c for c, v in zip(CSV_COLUMNS, (case, agent, reported)) if not v)
        raise InputError(col, f"line {line} has an empty {col}")
    if agent.lower() == "agent" and is_header_row((case, agent, reported, true)):
        raise InputError("file", f"line {line} repeats the header (line 1); a header line stands only at "
                         "the top, remove it (files joined together?)")
    t = scan.label_index.get(true, -1) if true else -1
    if t < 0 and true:
        t = _label(scan, "true_label", true, line, given)
    r = scan.label_index.get(reported)
    if r is None:
        r = _label(scan, "reported_label", reported, line, given)
    a = scan.agent_index.get(agent)
    if a is None:
        a = _new_agent(scan, agent, line)
    c = scan.case_index.get(case)
    if c is None:
        c = scan.case_index[case] = len(scan.case_index)
        scan.case_truth.append(t)
        scan.case_line.append(line)
    elif scan.case_truth[c] != t:
        _truth_conflict(scan, c, case, true, line)
    scan.row_line.append(line)
    scan.row_case.append(c)
    scan.row_agent.append(a)
    scan.row_truth.append(t)
    scan.row_report.append(r)


def _truth_conflict(scan: _Scan, c: int, case: str, true: str, line: int) -> None:
    """Raise for a row whose true label (or blank) differs from the case's first row."""
    first = scan.case_truth[c]
    known = next((lab for lab, i in scan.label_index.items() if i == first), "")
    said = f"true label {_show(true)}" if true else "no true label"
    earlier = f"gives {_show(known)}" if known else "leaves it blank"
    raise InputError("true_label", f"line {line}: case {_show(case)} has {said} but line {scan.case_line[c]} "
                     f"{earlier}; a case has one true label, given on every row or on none")


def _check_pairs(scan: _Scan, row_case: np.ndarray, row_agent: np.ndarray) -> None:
    """Raise for the first row (in file order) that repeats an earlier (case, agent) pair.

    One stable sort of the pair keys, so the cost grows as n log n in the rows.
    """
    key = row_case * len(scan.agent_index) + row_agent
    order = np.argsort(key, kind="stable")
    repeat = key[order[1:]] == key[order[:-1]]
    if not repeat.any():
        return
    row = int(order[1:][repeat].min())
    first = int(np.flatnonzero(key == key[row])[0])
    lines = _int64(scan.row_line)
    case, agent = list(scan.case_index)[row_case[row]], list(scan.agent_index)[row_agent[row]]
    raise InputError("file", f"line {lines[row]}: case {_show(case)} already has a row for agent "
                     f"{_show(agent)} (line {lines[first]}); give one row per case and agent")


def _scan(text: str, max_rows: int, given: tuple[str, ...] | None) -> _Scan:
    """One pass over the records: header, then every non-blank data row in file order.

    Row checks (field count, empty values, labels, the row/label/agent/table caps, one
    true label per case) happen as the row is read, so an oversized file stops at the
    first row beyond a limit; repeated (case, agent) pairs are found after the pass
    (:func:`_check_pairs`).  Nothing grows faster than the number of rows.
    """
    scan = _Scan()
    if given is not None:
        scan.label_index.update((lab, i) for i, lab in enumerate(given))
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    cols: tuple[int, int, int, int] | None = None
    n_fields = -1  # no record has -1 fields: the fast path waits for the header
    n_rows = blank = 0
    ic = ia = ir = it = 0
    try:
        for rec in reader:
            if len(rec) == n_fields:  # fast path: a data row whose required values are all present
                case, agent, reported = rec[ic].strip(), rec[ia].strip(), rec[ir].strip()
                if case and agent and reported:
                    true = rec[it].strip() if it >= 0 else ""
                    if n_rows >= max_rows:
                        raise InputError("file", f"has more than {max_rows:,} data rows; the limit is "
                                         f"{max_rows:,} rows")
                    n_rows += 1
                    _add_row(scan, reader.line_num, case, agent, reported, true, given)
                    continue
            if not any(rec) or not any(map(str.strip, rec)):
                blank += 1 if len(rec) > 1 else 0
                continue
            line = reader.line_num
            if cols is None:
                index = _header_index(rec, scan.warnings)
                cols, n_fields = (index["case_id"], index["agent"], index["reported_label"],
                                  index.get("true_label", -1)), len(rec)
                ic, ia, ir, it = cols
                continue
            if len(rec) != n_fields:
                raise InputError("file", f"line {line} has {len(rec)} fields but the header has "
                                 f"{n_fields}; every row needs the same columns (a value containing "
                                 "a comma must be quoted)")
            if n_rows >= max_rows:
                raise InputError("file", f"has more than {max_rows:,} data rows; the limit is "
                                 f"{max_rows:,} rows")
            n_rows += 1
            _add_row(scan, line, rec[ic].strip(), rec[ia].strip(), rec[ir].strip(),
                     rec[it].strip() if it >= 0 else "", given)
    except csv.Error as exc:
        raise InputError("file", f"line {reader.line_num} is not valid CSV ({exc})") from None
    if cols is None:  # unreachable: non-blank text always yields a header
        raise InputError("file", "is empty; expected a header line and calibration rows")
    if blank:
        scan.warnings.append(f"skipped {blank} row(s) with only empty values")
    return scan


def _check_given_classes(given: tuple[str, ...], true_seen: np.ndarray) -> None:
    """Every class of the caller's label list must have calibration rows."""
    for i, lab in enumerate(given):
        if not true_seen[i]:
            raise InputError("true_label", f"class {_show(lab)} has no calibration rows (no row has "
                             f"true_label {_show(lab)}); add cases of it or leave it out of the labels")


def _sorted_labels(scan: _Scan, true_seen: np.ndarray, unlabelled: bool
                   ) -> tuple[tuple[str, ...], np.ndarray, list[str]]:
    """Sorted labels, the map from first-appearance to sorted index and the warnings about
    labels that only appear as reports (the first few by name, then a count; none when
    some case is ``unlabelled``: those confusions are estimated, not counted)."""
    names = list(scan.label_index)
    if len(names) < 2:
        raise InputError("labels", f"found only 1 label ({_show(names[0])}); at least 2 distinct "
                         "labels are needed")
    order = sorted(range(len(names)), key=names.__getitem__)
    remap = np.empty(len(names), dtype=np.int64)
    remap[order] = np.arange(len(names), dtype=np.int64)
    label_tuple = tuple(names[i] for i in order)
    only_reported = [] if unlabelled else [names[i] for i in order if not true_seen[i]]
    warnings = [f"class {_show(lab)} appears only as a reported label; it has no calibration rows, "
                "so its confusion rows are the smoothing default"
                for lab in only_reported[:MAX_LISTED_WARNINGS]]
    if len(only_reported) > MAX_LISTED_WARNINGS:
        warnings.append(f"{len(only_reported) - MAX_LISTED_WARNINGS:,} more classes appear only as "
                        f"reported labels ({len(only_reported):,} of {len(names):,} in all); their "
                        "confusion rows are the smoothing default")
    return label_tuple, remap, warnings


def _skipped_case_warnings(scan: _Scan, row_case: np.ndarray, row_agent: np.ndarray) -> list[str]:
    """Warnings about agents without a row for every case, from the row counts per agent.

    An agent has a row for every case exactly when its row count equals the number of
    cases (pairs are unique).  The first :data:`MAX_LISTED_WARNINGS` such agents are named
    with their first three missing cases (one pass over the rows each); the rest are
    counted in one line.
    """
    agents, cases = list(scan.agent_index), list(scan.case_index)
    n_cases = len(cases)
    per_agent = np.bincount(row_agent, minlength=len(agents))
    skipping = np.flatnonzero(per_agent < n_cases)
    out: list[str] = []
    for a in skipping[:MAX_LISTED_WARNINGS].tolist():
        answered = np.zeros(n_cases, dtype=bool)
        answered[row_case[row_agent == a]] = True
        missing = np.flatnonzero(~answered)
        shown = ", ".join(_show(cases[c]) for c in missing[:3].tolist()) + (", ..." if missing.size > 3 else "")
        out.append(f"agent {_show(agents[a])} has no row for {missing.size} of {n_cases} cases "
                   f"({shown}); its confusion matrix uses only the cases it answered")
    if len(skipping) > MAX_LISTED_WARNINGS:
        out.append(f"{len(skipping) - MAX_LISTED_WARNINGS:,} more agents have no row for some cases "
                   f"({len(skipping):,} of {len(agents):,} agents in all); their confusion matrices "
                   "use only the cases they answered")
    return out


def _int64(values: array) -> np.ndarray:
    return np.frombuffer(values, dtype=np.int64).copy() if len(values) else np.zeros(0, dtype=np.int64)


def _remapped(remap: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Truth indices in the final label order; -1 (no label) stays -1."""
    return np.where(truth >= 0, remap[np.maximum(truth, 0)], -1) if truth.size else truth


def parse_csv_rows(data: bytes | str, *, labels: Sequence[str] | None = None,
                   max_bytes: int = MAX_BYTES, max_rows: int = MAX_ROWS) -> ParsedCsv:
    """Parse and validate a calibration CSV (format in the module docstring).

    Raises :class:`InputError` for every invalid input; returns a :class:`ParsedCsv`
    whose ``warnings`` list the non-fatal findings (ignored columns, agents that skip
    cases, labels that only occur as reports).  Time and memory grow linearly with the
    file; the label, agent and table-size caps are checked as each row is read.
    """
    max_bytes = _positive_int(max_bytes, "max_bytes")
    max_rows = _positive_int(max_rows, "max_rows")
    given = None if labels is None else validate_label_list(labels)
    if given is not None and len(given) > MAX_LABELS:
        raise InputError("labels", f"{len(given):,} labels given; a calibration set may have at most "
                         f"{MAX_LABELS:,} labels")
    text = _decode(data, max_bytes)
    scan = _scan(text, max_rows, given)
    del text
    if not scan.row_case:
        raise InputError("file", "has a header but no data rows; at least one agent and one case "
                         "are needed")
    row_case, row_agent = _int64(scan.row_case), _int64(scan.row_agent)
    _check_pairs(scan, row_case, row_agent)
    case_truth = _int64(scan.case_truth)
    unlabelled = bool((case_truth < 0).any())
    true_seen = np.zeros(len(scan.label_index), dtype=bool)
    true_seen[case_truth[case_truth >= 0]] = True
    warnings = scan.warnings
    if given is not None:
        if not unlabelled:
            _check_given_classes(given, true_seen)
        label_tuple, remap = given, np.arange(len(given), dtype=np.int64)
    else:
        label_tuple, remap, label_warnings = _sorted_labels(scan, true_seen, unlabelled)
        warnings += label_warnings
    warnings += _skipped_case_warnings(scan, row_case, row_agent)
    case_names = list(scan.case_index)
    return ParsedCsv(
        labels=label_tuple, agents=tuple(scan.agent_index),
        case_ids=tuple(case_names[c] for c in scan.row_case),
        truth=_remapped(remap, _int64(scan.row_truth)), agent=row_agent, report=remap[_int64(scan.row_report)],
        warnings=tuple(warnings))
