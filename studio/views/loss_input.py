"""Strict reading of a loss matrix typed as text (the what-if page's loss editor).

A browser's numeric table cell silently drops a comma as a thousands separator, so
"2,5" would become 25.  The editor therefore holds text, and this module reads it:
a cell is a plain decimal number with a point as the decimal separator (``2.5``,
``.5``, ``3``, ``1e-3``), finite, at least 0 and at most :data:`~dcem.core.panel.MAX_LOSS`.
Every refusal is an :class:`~common.errors.InputError` on field ``loss`` whose message
names the cell by its classes -- the decision (row) and the true label (column) --
never by matrix indices.

:func:`format_loss_cell` writes a number so that reading it back gives the same float,
so an untouched table reads back to exactly the run's loss (:func:`loss_change` is then
None and the run's own loss is kept).

The high-risk classes and l_high above the table are the page's own state, not read back
from the matrix: with l_high = 1 every miss costs 1 and the matrix no longer says which
classes are high-risk, so :func:`three_level_fields` keeps the chosen classes whenever
they (with the chosen l_high) give the matrix shown.  l_high is typed as text and read as
strictly as a cell (:func:`parse_l_high`), so ``abc`` is refused rather than read as 0.
"""
from __future__ import annotations

import math
import re
from typing import Sequence

import numpy as np

from common.loss import three_level_form, three_level_loss
from dcem.core.panel import MAX_LOSS
from common.errors import InputError

__all__ = ["format_loss_cell", "loss_cells", "parse_loss_cell", "parse_loss_table", "loss_change",
           "loss_change_words", "parse_l_high", "l_high_refusal", "three_level_fields"]

_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_NOT_FINITE = {"nan", "inf", "infinity"}


def format_loss_cell(value: float) -> str:
    """The shortest of ``%g`` and ``repr`` that reads back to exactly ``value``."""
    number = float(value)
    short = f"{number:g}"
    return short if float(short) == number else repr(number)


def loss_cells(loss: object) -> list[list[str]]:
    """The editor's text cells of a K x K loss: numbers formatted exactly
    (:func:`format_loss_cell`), text kept as it is, an empty cell as ""."""
    rows = np.asarray(loss, dtype=object)
    if rows.ndim != 2:
        raise InputError("loss", f"expected a square table, got {rows.ndim} dimension(s)")
    return [[_cell_text(v) for v in row] for row in rows]


def _cell_text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        number = float(value)
        return format_loss_cell(number) if math.isfinite(number) else str(number)
    return str(value)


def _where(decision: str, truth: str) -> str:
    return f"decision {decision!r}, true label {truth!r}"


def parse_loss_cell(value: object, decision: str, truth: str) -> float:
    """One cell as a float, or an :class:`InputError` naming the decision and true label."""
    where = _where(decision, truth)
    if isinstance(value, bool):
        raise InputError("loss", f"{where}: {value!r} is not a number")
    if isinstance(value, (int, float, np.integer, np.floating)):
        text = _cell_text(value)
    else:
        text = "" if value is None else str(value).strip()
    if not text:
        raise InputError("loss", f"{where}: the cell is empty; enter a number (0 for no loss)")
    if "," in text:
        raise InputError("loss", f"{where}: {text!r} has a comma; use a point as the decimal separator "
                         f"(for example 2.5) and no thousands separator")
    if text.lower().lstrip("+-") in _NOT_FINITE:
        raise InputError("loss", f"{where}: {text!r} is not a finite number")
    if not _NUMBER.fullmatch(text):
        raise InputError("loss", f"{where}: {text!r} is not a number (write it like 0, 1 or 2.5)")
    number = float(text)
    if not math.isfinite(number):
        raise InputError("loss", f"{where}: {text!r} is too large to be a finite number")
    if number < 0:
        raise InputError("loss", f"{where}: {text} is negative; a loss is 0 or more")
    if number > MAX_LOSS:
        raise InputError("loss", f"{where}: {text} is larger than the largest loss allowed ({MAX_LOSS:g})")
    return number


def parse_l_high(value: object) -> float:
    """l_high typed as text: a plain decimal number from 0 to :data:`~dcem.core.panel.MAX_LOSS`
    (the rules of a loss cell); an :class:`InputError` on field ``l_high`` otherwise."""
    text = "" if value is None else str(value).strip()
    try:
        return parse_loss_cell(text, "", "")
    except InputError as exc:
        said = str(exc).removeprefix("loss: ").removeprefix(f"{_where('', '')}: ")
        said = said.replace("the cell is empty; enter a number (0 for no loss)", "the field is empty; enter a number")
        raise InputError("l_high", said) from None


def l_high_refusal(exc: InputError, kept: float) -> str:
    """The page's one line for a refused l_high: what is wrong, and the value that stays."""
    said = str(exc).removeprefix(f"{exc.field}: ")
    return f"l_high: {said}. It stays {format_loss_cell(kept)}."


def three_level_fields(loss: np.ndarray, high: Sequence[int], l_high: float) -> tuple[list[int], float, bool]:
    """The high-risk classes and l_high the fields show beside the matrix ``loss``, given
    the ones chosen (``high``, ``l_high``): the chosen ones when they give exactly this
    matrix (so the classes survive l_high = 1, and no class chosen keeps its l_high);
    else the matrix's own three-level form (a matrix where every miss costs 1 keeps the
    chosen classes at l_high = 1); else the chosen ones, and False (a matrix edited
    cell by cell, without that form)."""
    arr = np.asarray(loss, dtype=float)
    chosen = sorted({int(y) for y in high})
    if arr.ndim == 2 and arr.shape[0] == arr.shape[1] and math.isfinite(float(l_high)) and l_high >= 0 \
            and np.array_equal(three_level_loss(arr.shape[0], chosen, float(l_high)), arr):
        return chosen, float(l_high), True
    form = three_level_form(arr)
    if form is None:
        return chosen, float(l_high), False
    found, found_l = form
    if not found:
        return chosen, 1.0, True
    return found, float(found_l if found_l is not None else 1.0), True


def parse_loss_table(cells: object, labels: Sequence[str]) -> np.ndarray:
    """The K x K loss ``L[d, y]`` read strictly from a table of cells (rows: decision d,
    columns: true label y, both in ``labels`` order); text or numbers, see
    :func:`parse_loss_cell`.  Returns a float array."""
    names = [str(label) for label in labels]
    rows = np.asarray(cells, dtype=object)
    k = len(names)
    if rows.shape != (k, k):
        raise InputError("loss", f"expected one row and one column per class ({k} x {k}: "
                         f"{', '.join(names)}), got a table of shape {rows.shape}")
    out = np.empty((k, k), dtype=float)
    for d in range(k):
        for y in range(k):
            out[d, y] = parse_loss_cell(rows[d, y], names[d], names[y])
    return out


def loss_change(loss: np.ndarray, reference: np.ndarray) -> np.ndarray | None:
    """None when ``loss`` equals the run's own loss ``reference`` entry for entry (each
    cell then keeps its own loss), else ``loss`` (it replaces every cell's loss)."""
    arr, ref = np.asarray(loss, dtype=float), np.asarray(reference, dtype=float)
    if arr.shape == ref.shape and np.array_equal(arr, ref):
        return None
    return arr


def _form_words(form: tuple[list[int], float | None], labels: Sequence[str]) -> str:
    high, l_high = form
    if not high:
        return "no high-risk class (every miss costs 1)"
    return f"high-risk {', '.join(str(labels[y]) for y in high)} at l_high = {format_loss_cell(float(l_high or 0))}"


def loss_change_words(loss: np.ndarray | None, reference: np.ndarray, labels: Sequence[str], shown: int = 3) -> str:
    """One sentence naming how ``loss`` differs from the run's own ``reference`` (empty
    when it does not): the three-level forms when both have one, else the changed cells
    (the first ``shown`` of them, old -> new)."""
    if loss is None or loss_change(loss, reference) is None:
        return ""
    new, old = np.asarray(loss, dtype=float), np.asarray(reference, dtype=float)
    form_new, form_old = three_level_form(new), three_level_form(old)
    if form_new is not None and form_old is not None:
        return (f"Loss matrix set for every cell: {_form_words(form_new, labels)} "
                f"(the run's: {_form_words(form_old, labels)}).")
    changed = list(zip(*np.nonzero(new != old)))
    cells = "; ".join(f"deciding {labels[d]} when the truth is {labels[y]} costs {format_loss_cell(new[d, y])} "
                      f"(was {format_loss_cell(old[d, y])})" for d, y in changed[:shown])
    more = f"; and {len(changed) - shown} more" if len(changed) > shown else ""
    return f"Loss matrix set for every cell, {len(changed)} of {new.size} entries changed: {cells}{more}."
