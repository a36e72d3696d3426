"""A researcher's own cases: a JSONL or CSV case file read into a :class:`ClinicalDataset`.

One case per line (JSONL: a JSON object per line; CSV: a header row, then one row per
case), with the columns

- ``id``: the case's own id (text, unique in the file);
- ``text``: what a member reads of the whole case;
- ``label``: the case's true class;
- ``views`` (optional): an object of view name to text (in CSV: that object as JSON), so a
  member ``MODEL@VIEW`` or ``stat:tfidf-lr@VIEW`` reads only that part of the case;
- ``split`` (optional): ``cal``, ``test`` or ``train``.  Given on every case or on none:
  with it CAL and TEST are those cases (``train`` cases are never drawn); without it each
  seed draws a class-stratified CAL/TEST split.

The label set is the labels that occur, sorted, or :attr:`CaseFileOptions.labels` to fix
their order (and to name a class that must occur).  The loss is the three-level loss of
Appendix E over :attr:`CaseFileOptions.high_risk` with ``l_high``, or a full matrix read
from a JSON file (:func:`read_loss_file`; the high-risk classes then still name the cells
the safety metrics count).  Everything is checked before anything is
stored: a bad file gives one :class:`~common.errors.InputError` naming the line.
See ``docs/own_cases.md``.
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from clinical.datasets import ClinicalCase, ClinicalDataset, file_dataset_name
from common.errors import InputError
from common.loss import three_level_loss

__all__ = ["CaseFileOptions", "read_case_file", "parse_case_file", "read_loss_file", "MAX_BYTES", "MAX_CASES",
           "MAX_TEXT", "MAX_LABELS", "MAX_LOSS", "MAX_VIEWS", "MAX_ID", "SPLITS", "MIN_PER_CLASS"]

MAX_BYTES = 50_000_000
MAX_CASES = 20_000
MAX_TEXT = 32_000
MAX_LABELS = 50
MAX_VIEWS = 16
MAX_ID = 200
MAX_LOSS = 1000.0
"""The largest entry a loss file may give (the three-level loss's l_high has the same bound)."""
SPLITS = ("cal", "test", "train")
MIN_PER_CLASS = 2
"""Cases of each class a drawn split needs: one for CAL, one for TEST."""
_FIELD = "case_file"


@dataclass(frozen=True)
class CaseFileOptions:
    """How to read the labels and the loss: the label order (None: the labels that occur,
    sorted), the high-risk classes and l_high of the three-level loss, or a loss file."""

    labels: tuple[str, ...] | None = None
    high_risk: tuple[str, ...] = ()
    l_high: float = 5.0
    loss_file: str | None = None

    def __post_init__(self) -> None:
        if self.labels is not None:
            if not self.labels or any(not str(x).strip() for x in self.labels):
                raise InputError("labels", "give the labels as A,B,... with no empty name")
            if len(set(self.labels)) != len(self.labels):
                twice = sorted({x for x in self.labels if self.labels.count(x) > 1})
                raise InputError("labels", f"{', '.join(twice)} listed twice")
        if not isinstance(self.l_high, (int, float)) or not np.isfinite(self.l_high) or not 0 <= self.l_high <= 1000:
            raise InputError("l_high", f"must be a number from 0 to 1000, got {self.l_high!r}")


@dataclass(frozen=True)
class _Row:
    line: int
    fields: dict[str, Any]


def _decode(data: bytes, name: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise InputError(_FIELD, f"{name} is not UTF-8: line {line}, byte {column} (0x{data[exc.start]:02x}); "
                                 "save the file as UTF-8") from None


def _no_constant(token: str) -> Any:
    raise ValueError(f"{token} is not a JSON value")


def _jsonl_rows(text: str, name: str) -> list[_Row]:
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            value = json.loads(line, parse_constant=_no_constant)
        except json.JSONDecodeError as exc:
            raise InputError(_FIELD, f"{name} line {number} is not JSON ({exc.msg} at column {exc.colno})") from None
        except RecursionError:
            raise InputError(_FIELD, f"{name} line {number} nests too deeply to be a case") from None
        except ValueError as exc:  # NaN or Infinity, which JSON does not have
            raise InputError(_FIELD, f"{name} line {number} is not JSON ({exc})") from None
        if not isinstance(value, dict):
            raise InputError(_FIELD, f"{name} line {number} is a JSON {type(value).__name__}, not an object "
                                     "with id, text and label")
        rows.append(_Row(number, value))
        if len(rows) > MAX_CASES:
            raise InputError(_FIELD, f"{name} has more than {MAX_CASES:,} cases (the limit)")
    return rows


def _csv_rows(text: str, name: str) -> list[_Row]:
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
        if header is None:
            return []
        header = [h.strip() for h in header]
        unknown = [h for h in header if h not in ("id", "text", "label", "views", "split")]
        if unknown:
            raise InputError(_FIELD, f"{name} line 1: unknown column {unknown[0]!r} (columns: id, text, label, "
                                     "views, split)")
        if len(set(header)) != len(header):
            raise InputError(_FIELD, f"{name} line 1 names a column twice")
        rows = []
        for values in reader:
            number = reader.line_num
            if not any(v.strip() for v in values):
                continue
            if len(values) != len(header):
                raise InputError(_FIELD, f"{name} line {number} has {len(values)} fields, the header "
                                         f"{len(header)}")
            fields: dict[str, Any] = dict(zip(header, values))
            if fields.get("views", "").strip():
                try:
                    fields["views"] = json.loads(fields["views"])
                except json.JSONDecodeError as exc:
                    raise InputError(_FIELD, f"{name} line {number}: views is not a JSON object ({exc.msg})") from None
            else:
                fields.pop("views", None)
            if not str(fields.get("split", "")).strip():
                fields.pop("split", None)
            rows.append(_Row(number, fields))
            if len(rows) > MAX_CASES:
                raise InputError(_FIELD, f"{name} has more than {MAX_CASES:,} cases (the limit)")
    except csv.Error as exc:
        raise InputError(_FIELD, f"{name} line {reader.line_num} is not CSV ({exc})") from None
    return rows


def _text(row: _Row, key: str, name: str, limit: int) -> str:
    value = row.fields.get(key)
    if isinstance(value, int) and not isinstance(value, bool) and key != "text":
        value = str(value)  # a numbered id or label
    if not isinstance(value, str) or not value.strip():
        what = "missing" if value is None else "empty" if isinstance(value, str) else f"a {type(value).__name__}"
        raise InputError(_FIELD, f"{name} line {row.line}: {key} is {what}; every case needs id, text and label "
                                 "as text")
    if len(value) > limit:
        raise InputError(_FIELD, f"{name} line {row.line}: {key} has {len(value):,} characters, over the "
                                 f"{limit:,} limit")
    if key != "text" and not value.strip().isprintable():
        raise InputError(_FIELD, f"{name} line {row.line}: {key} holds a control character; ids and labels are "
                                 "printable text")
    return value.strip() if key != "text" else value


def _views(row: _Row, name: str) -> tuple[tuple[str, str], ...]:
    value = row.fields.get("views")
    if value is None:
        return ()
    if not isinstance(value, dict):
        raise InputError(_FIELD, f"{name} line {row.line}: views must be an object of view name to text")
    out = []
    for view, text in value.items():
        view = str(view).strip()
        if not view or view == "all" or not view.replace("-", "").replace("_", "").isalnum():
            raise InputError(_FIELD, f"{name} line {row.line}: view name {view!r} must be letters, digits, - or _ "
                                     "(and not 'all', which is the whole case)")
        if not isinstance(text, str) or not text.strip():
            raise InputError(_FIELD, f"{name} line {row.line}: view {view!r} has no text")
        if len(text) > MAX_TEXT:
            raise InputError(_FIELD, f"{name} line {row.line}: view {view!r} has {len(text):,} characters, over the "
                                     f"{MAX_TEXT:,} limit")
        out.append((view, text))
    return tuple(out)


def _split(row: _Row, name: str) -> str:
    value = row.fields.get("split")
    if value is None:
        return ""
    if not isinstance(value, str) or value.strip().lower() not in SPLITS:
        raise InputError(_FIELD, f"{name} line {row.line}: split must be one of {', '.join(SPLITS)}, got {value!r}")
    return value.strip().lower()


def _labels(found: Sequence[str], options: CaseFileOptions, lines: dict[str, int], name: str) -> tuple[str, ...]:
    present = sorted(set(found))
    if options.labels is None:
        labels = tuple(present)
    else:
        labels = tuple(x.strip() for x in options.labels)
        outside = [x for x in present if x not in labels]
        if outside:
            raise InputError("labels", f"{name} line {lines[outside[0]]}: label {outside[0]!r} is not in --labels "
                                       f"({', '.join(labels)})")
    if len(labels) < 2:
        raise InputError(_FIELD, f"{name} has a single class ({labels[0] if labels else 'none'}): a panel needs "
                                 "cases of at least two classes")
    if len(labels) > MAX_LABELS:
        raise InputError(_FIELD, f"{name} has {len(labels)} classes, over the {MAX_LABELS} limit")
    return labels


def _check_counts(cases: Sequence[ClinicalCase], labels: Sequence[str], name: str) -> None:
    fixed = any(c.split for c in cases)
    for k, label in enumerate(labels):
        mine = [c for c in cases if c.label == k]
        if fixed:
            for part in ("cal", "test"):
                if not any(c.split == part for c in mine):
                    raise InputError(_FIELD, f"{name}: class {label!r} has no {part} case; the split the file gives "
                                             "needs at least one cal and one test case of each class")
        elif len(mine) < MIN_PER_CLASS:
            raise InputError(_FIELD, f"{name}: class {label!r} has {len(mine)} case{'s' if len(mine) != 1 else ''}; "
                                     f"the drawn CAL/TEST split needs at least {MIN_PER_CLASS} of each class "
                                     "(one CAL, one TEST)")


def read_loss_file(path: str | Path, labels: Sequence[str]) -> np.ndarray:
    """A full loss matrix ``L[d, y]`` from JSON: ``{"labels": [...], "loss": [[...], ...]}``
    (its labels reordered to ``labels``) or the bare K x K list in label order."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("loss", f"{path.name}: no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError("loss", f"{path.name} is not a JSON loss matrix ({exc})") from None
    if isinstance(data, dict):
        given = data.get("labels")
        if not isinstance(given, list) or sorted(map(str, given)) != sorted(labels):
            raise InputError("loss", f"{path.name}: labels must list the case file's classes ({', '.join(labels)}), "
                                     f"got {given!r}")
        matrix = np.asarray(_loss_rows(data.get("loss"), path.name), dtype=float)
        if matrix.shape != (len(given), len(given)):
            raise InputError("loss", f"{path.name}: expected a {len(given)} x {len(given)} matrix, got shape "
                                     f"{matrix.shape}")
        order = [[str(x) for x in given].index(x) for x in labels]
        matrix = matrix[np.ix_(order, order)]
    else:
        matrix = np.asarray(_loss_rows(data, path.name), dtype=float)
    k = len(labels)
    if matrix.shape != (k, k):
        raise InputError("loss", f"{path.name}: expected a {k} x {k} matrix, got shape {matrix.shape}")
    bad = np.argwhere(~np.isfinite(matrix) | (matrix < 0) | (matrix > MAX_LOSS))
    if bad.size:
        d, y = bad[0]
        raise InputError("loss", f"{path.name}: entry [{d}][{y}] is {matrix[d, y]:g}; losses must be from 0 to "
                                 f"{MAX_LOSS:g}")
    if np.any(np.diag(matrix) != 0):
        raise InputError("loss", f"{path.name}: a right answer must cost 0 (the diagonal)")
    return matrix


def _loss_rows(value: object, name: str) -> list[list[float]]:
    if (not isinstance(value, list) or not value
            or not all(isinstance(r, list) and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in r)
                       for r in value)):
        raise InputError("loss", f"{name}: loss must be a list of rows of numbers")
    if len({len(r) for r in value}) != 1:  # type: ignore[union-attr]
        raise InputError("loss", f"{name}: the loss matrix's rows differ in length")
    return value  # type: ignore[return-value]


def parse_case_file(data: bytes, name: str, options: CaseFileOptions = CaseFileOptions()) -> ClinicalDataset:
    """The dataset the bytes of a case file named ``name`` hold (``.csv``: CSV, else JSONL)."""
    if len(data) > MAX_BYTES:
        raise InputError(_FIELD, f"{name} has {len(data):,} bytes, over the {MAX_BYTES:,} limit")
    text = _decode(data, name).lstrip("\ufeff")
    rows = _csv_rows(text, name) if name.lower().endswith(".csv") else _jsonl_rows(text, name)
    if not rows:
        raise InputError(_FIELD, f"{name} holds no case")
    seen: dict[str, int] = {}
    parsed = []
    for row in rows:
        case_id = _text(row, "id", name, MAX_ID)
        if case_id in seen:
            raise InputError(_FIELD, f"{name} line {row.line}: id {case_id!r} is already on line {seen[case_id]}")
        seen[case_id] = row.line
        parsed.append((case_id, _text(row, "text", name, MAX_TEXT), _text(row, "label", name, MAX_ID),
                       _views(row, name), _split(row, name), row.line))
    splits = [p[4] for p in parsed]
    if any(splits) and not all(splits):
        missing = [p[5] for p in parsed if not p[4]]
        raise InputError(_FIELD, f"{name}: split is given on {sum(map(bool, splits))} cases and missing on "
                                 f"{len(missing)} (line {missing[0]} first); give it on every case or on none")
    views = sorted({v for p in parsed for v, _ in p[3]})
    if len(views) > MAX_VIEWS:
        raise InputError(_FIELD, f"{name} names {len(views)} views, over the {MAX_VIEWS} limit")
    first_line = {}
    for p in parsed:
        first_line.setdefault(p[2], p[5])
    labels = _labels([p[2] for p in parsed], options, first_line, name)
    index = {x: k for k, x in enumerate(labels)}
    cases = tuple(ClinicalCase(p[0], index[p[2]], p[1], views=p[3], split=p[4]) for p in parsed)
    _check_counts(cases, labels, name)
    unknown = [x for x in options.high_risk if x.strip() not in index]
    if unknown:
        raise InputError("high_risk", f"{unknown[0]!r} is not a class of {name} ({', '.join(labels)})")
    high_risk = tuple(sorted({index[x.strip()] for x in options.high_risk}))
    if options.loss_file is not None:  # the matrix from the file; the high-risk classes still name the metrics' cells
        loss = read_loss_file(options.loss_file, labels)
    else:
        loss = three_level_loss(len(labels), high_risk, float(options.l_high))
    return ClinicalDataset(file_dataset_name(name), labels, high_risk, loss, cases,
                           frozenset(c.source_id for c in cases if c.split == "train"), views=tuple(views),
                           sha256=hashlib.sha256(data).hexdigest())


def read_case_file(path: str | Path, options: CaseFileOptions = CaseFileOptions()) -> ClinicalDataset:
    """:func:`parse_case_file` on the file at ``path``."""
    path = Path(path)
    if not path.is_file():
        raise InputError(_FIELD, f"{path.name}: no such file")
    size = path.stat().st_size
    if size > MAX_BYTES:
        raise InputError(_FIELD, f"{path.name} has {size:,} bytes, over the {MAX_BYTES:,} limit")
    return parse_case_file(path.read_bytes(), path.name, options)
