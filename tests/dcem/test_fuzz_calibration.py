"""Fuzz tests of the calibration CSV upload and the Calibration sets page's steps after it.

Each input is an upload (bytes: near-valid calibration files with mutations, quoting and
encoding accidents, files at and beyond the label/agent/table caps, complete panels'
reports without labels, arbitrary text and bytes), the typed label order, the smoothing alpha and the prior mode.  The page's steps
(:func:`studio.views.calibration_view.load_upload`, ``calibration_view``,
``prior_table``) must end in a clean :class:`common.errors.InputError` whose message names
its field, or in a valid set: labels and agents only from the file (or exactly the given
order), every index in range, counts that add up, finite confusion rows summing to 1, a
finite prior, recall in [0, 1] or NaN, and short warnings.  ``pytest -m fuzz_large -s``
tries 10,000 inputs and prints the counts.
"""
from __future__ import annotations

import csv
import io
import math
import re
from typing import Any

import numpy as np
import pytest
from hypothesis import settings
from hypothesis import strategies as st

from studio.views.calibration_view import (ALPHA_MAX, ALPHA_MIN, calibration_view, label_order, load_upload,
                                            prior_table)
from dcem.calibration.csv_import import CSV_COLUMNS, MAX_AGENTS, MAX_LABELS, MAX_TABLE_CELLS
from dcem.calibration.sets import parse_calibration_csv
from common.errors import ProjectError, InputError
from tests.dcem.fuzz_support import DEFAULT, LARGE, run_budget

FIELDS = {"file", "labels", "agent", "case_id", "reported_label", "true_label", "alpha", "prior",
          "agents", "reports", "calibration"}  # the last three: a label-free estimate refused

_CASES = ["c1", "c2", "c3", "c4", "c5", "case 6", " c1 ", "c1\n2", "", "  ", '"c7"', "x,y"]
_AGENTS = ["A", "B", "C", "dr \"x\"", " A", "a", "", "agent, one", "é"]
_LABELS = ["k0", "k1", "k2", "k10", "K0", " k1", "flu, severe", "é", "", "\u2028", "nan", "0", "k 1",
           "a\"b", "\ufeffk0", "\x1c", "x" * 300]
_HEADERS = [list(CSV_COLUMNS), ["Case ID", " AGENT", "Reported-Label", "true_label "],
            ["true_label", "reported_label", "agent", "case_id"], ["case_id", "agent", "reported_label"],
            ["case_id", "agent", "agent", "reported_label", "true_label"],
            ["case_id", "agent", "reported_label", "true_label", "notes", ""]]
_NEWLINES = ["\n", "\r\n", "\r"]
_SPECIALS = ['"', ",", "\n", "\r", "\x00", " ", ";", "\t", "\ufeff", "\\", "'", "\u0301"]


def _write(header: list[str], rows: list[list[str]], newline: str, quoted: bool) -> str:
    if quoted:
        out = io.StringIO()
        csv.writer(out, lineterminator=newline).writerows([header, *rows])
        return out.getvalue()
    return newline.join(",".join(r) for r in [header, *rows]) + newline


@st.composite
def _structured(draw: Any) -> str:
    """A calibration file from small pools: mostly well formed, often subtly not."""
    header = draw(st.sampled_from(_HEADERS[:3] * 3 + _HEADERS))
    case_pool = draw(st.sampled_from([_CASES[:5]] * 3 + [_CASES]))
    agent_pool = draw(st.sampled_from([_AGENTS[:3]] * 3 + [_AGENTS]))
    label_pool = draw(st.sampled_from([_LABELS[:3], _LABELS[:5], _LABELS]))
    pairs = draw(st.lists(st.tuples(st.sampled_from(case_pool), st.sampled_from(agent_pool)),
                          unique=True, min_size=draw(st.sampled_from([0, 2, 2, 2])), max_size=25))
    if pairs and draw(st.sampled_from([False] * 15 + [True])):  # a repeated (case, agent) pair
        pairs.insert(draw(st.integers(0, len(pairs))), draw(st.sampled_from(pairs)))
    truth_of = {c: draw(st.sampled_from(label_pool)) for c in case_pool}
    if draw(st.sampled_from([False] * 3 + [True])):  # some cases without a label (blank cells)
        truth_of |= {c: "" for c in draw(st.lists(st.sampled_from(case_pool), max_size=len(case_pool)))}
    rows = []
    for case, agent in pairs:
        true = truth_of[case] if draw(st.sampled_from([True] * 20 + [False])) else draw(st.sampled_from(label_pool))
        report = true if draw(st.booleans()) else draw(st.sampled_from(label_pool))
        values = {"case_id": case, "agent": agent, "reported_label": report, "true_label": true,
                  "notes": "n", "": ""}
        row = [values.get(h.strip().lower().replace(" ", "_").replace("-", "_"), "v") for h in header]
        accident = draw(st.sampled_from(["none"] * 40 + ["short", "long", "blank"]))
        if accident == "short" or accident == "long":
            row = row[:-1] if accident == "short" else [*row, "extra"]
        elif accident == "blank":
            row = [""] * len(row)
        rows.append(row)
    return _write(header, rows, draw(st.sampled_from(_NEWLINES)), draw(st.sampled_from([True, True, True, False])))


@st.composite
def _mutated(draw: Any) -> str:
    """A structured file with a few characters inserted, deleted or replaced."""
    text = draw(_structured())
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(text)))
        op = draw(st.sampled_from(["insert", "delete", "replace", "cut"]))
        char = draw(st.sampled_from(_SPECIALS) | st.characters())
        if op == "insert":
            text = text[:i] + char + text[i:]
        elif op == "delete":
            text = text[:i] + text[i + 1:]
        elif op == "replace":
            text = text[:i] + char + text[i + 1:]
        else:
            text = text[:i]
    return text


@st.composite
def _at_the_caps(draw: Any) -> str:
    """Files at and just beyond the label, agent and table caps (a few hundred rows)."""
    kind = draw(st.sampled_from(["labels", "agents", "cells", "reported"]))
    extra = draw(st.sampled_from([-1, 0, 1]))
    if kind == "labels":
        rows = [f"c{i},A,L{i},L{i}" for i in range(MAX_LABELS + extra)]
    elif kind == "reported":  # two true labels, the rest only reported
        rows = [f"c{i},A,R{i},L{i % 2}" for i in range(MAX_LABELS - 2 + extra)] + ["t0,A,L0,L0", "t1,A,L1,L1"]
    elif kind == "agents":
        rows = [f"c{i % 7},a{i},k{i % 2},k{(i % 7) % 2}" for i in range(MAX_AGENTS + extra)]
    else:  # 200 labels: 100 agents fill the table cap exactly
        n_agents = MAX_TABLE_CELLS // MAX_LABELS ** 2 + extra
        rows = [f"c{i},a0,L{i},L{i}" for i in range(MAX_LABELS)] + [f"x{a},a{a},L0,L0" for a in range(1, n_agents)]
    return ",".join(CSV_COLUMNS) + "\n" + "\n".join(rows) + "\n"


@st.composite
def _repeated_header(draw: Any) -> str:
    """A well-formed file with its header line, or a respelled header, repeated at some line
    below line 1 (two files joined together): it must never be read as a data row."""
    header = ",".join(draw(st.sampled_from(_HEADERS[:3]))) + "\n"
    names = [h.strip().lower().replace(" ", "_").replace("-", "_") for h in header.strip().split(",")]
    lines = [header]
    for case in draw(st.lists(st.sampled_from(_CASES[:5]), min_size=1, max_size=5, unique=True)):
        truth = draw(st.sampled_from(_LABELS[:3]))
        for agent in draw(st.lists(st.sampled_from(_AGENTS[:3]), min_size=1, max_size=3, unique=True)):
            values = {"case_id": case, "agent": agent, "true_label": truth,
                      "reported_label": draw(st.sampled_from(_LABELS[:3]))}
            lines.append(",".join(values[n] for n in names) + "\n")
    again = draw(st.sampled_from([header, header.upper(), header.replace("_", " "), header.replace("_", "-"),
                                  '"case_id","agent","reported_label","true_label"\n', ",".join(CSV_COLUMNS) + "\n"]))
    at = draw(st.integers(1, max(1, len(lines))))
    return "".join(lines[:at] + [again] + lines[at:])


def _encode(text: str, how: str) -> bytes:
    if how == "utf-8-sig":
        return text.encode("utf-8-sig", errors="surrogatepass")
    if how in ("utf-16", "latin-1"):
        return text.encode(how, errors="replace")
    return text.encode("utf-8", errors="surrogatepass")


@st.composite
def _label_free(draw: Any) -> str:
    """A complete panel's reports on 8 to 40 cases, most or all without a label (no
    true_label column, or blank cells): the label-free estimators' input."""
    n, agents = draw(st.integers(8, 40)), draw(st.integers(1, 4))
    k = draw(st.integers(2, 4))
    accuracy = draw(st.lists(st.floats(0.2, 0.95), min_size=agents, max_size=agents))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    truth = rng.integers(0, k, n)
    column = draw(st.booleans())
    keep = draw(st.sampled_from([0, 0, 1, 3, n // 2]))
    lines = ["case_id,agent,reported_label" + (",true_label" if column else "")]
    for i in range(n):
        for a in range(agents):
            report = truth[i] if rng.random() < accuracy[a] else rng.integers(0, k)
            true = (f",k{truth[i]}" if i < keep else ",") if column else ""
            lines.append(f"case {i},agent {a},k{report}{true}")
    return "\n".join(lines) + "\n"


def _weighted(*choices: tuple[int, st.SearchStrategy[Any]]) -> st.SearchStrategy[Any]:
    """One of the strategies, picked with the given integer weights."""
    table = [strategy for weight, strategy in choices for _ in range(weight)]
    return st.integers(0, len(table) - 1).flatmap(table.__getitem__)


_texts = _weighted((6, _structured()), (2, _label_free()), (2, _mutated()), (2, _repeated_header()), (1, _at_the_caps()),
                   (1, st.text(max_size=80)),
                   (1, st.text(alphabet=",\"\n\r ak0", max_size=60)))
_encodings = _weighted((8, st.just("utf-8")), (1, st.sampled_from(["utf-8-sig", "utf-16", "latin-1"])))
_uploads = _weighted((9, st.tuples(_texts, _encodings).map(lambda t: _encode(*t))), (1, st.binary(max_size=80)))
_orders = _weighted(
    (12, st.just("")),
    (1, st.sampled_from(["k0, k1, k2", "k2,k1,k0", "k0,k1", "k0,k0,k1", "k0", " , ,"])),
    (1, st.lists(st.sampled_from(_LABELS), max_size=6).map(",".join)),
    (1, st.integers(MAX_LABELS - 1, MAX_LABELS + 1).map(lambda n: ",".join(f"L{i}" for i in range(n)))),
    (1, st.text(max_size=20)))
_alphas = _weighted((4, st.floats(ALPHA_MIN, ALPHA_MAX)), (4, st.sampled_from([ALPHA_MIN, 0.5, 1.0, ALPHA_MAX])),
                    (1, st.sampled_from([0.0, -1.0, 0.001, 10.5, 1e308, float("nan"), float("inf"), True, "0.5",
                                         None, 2])))
_priors = _weighted((9, st.sampled_from(["uniform", "empirical"])), (1, st.sampled_from(["flat", ""])))
_inputs = st.tuples(_uploads, _orders, _alphas, _priors)


def _clean(exc: ProjectError) -> None:
    """A clean error: an InputError naming a known field, one short line of message."""
    assert isinstance(exc, InputError), type(exc)
    assert exc.field in FIELDS, exc.field
    text = str(exc)
    assert text.startswith(f"{exc.field}: ") and len(text) < 600, text[:600]
    assert "Traceback" not in text


def _fields(data: bytes) -> set[str]:
    """Every stripped field of the file as a plain csv reader sees it (the oracle for
    which names may appear in a result)."""
    text = data.decode("utf-8").removeprefix("\ufeff")
    return {f.strip() for rec in csv.reader(io.StringIO(text, newline="")) for f in rec}


def _names_the_columns(values: tuple[str, ...]) -> bool:
    """Whether a row's four values are the four column names (a header line)."""
    return tuple(re.sub(r"[\s\-]+", "_", v.strip().lower()) for v in values) == CSV_COLUMNS


def _page_alpha_ok(alpha: object) -> bool:
    """An alpha the page's number input can give (its bounds, a float or an int)."""
    return (not isinstance(alpha, bool) and isinstance(alpha, (int, float)) and math.isfinite(alpha)
            and ALPHA_MIN <= alpha <= ALPHA_MAX)


def check(value: tuple[bytes, str, Any, str]) -> str:
    data, order, alpha, prior_mode = value
    try:
        cset, warnings = load_upload(data, order, "fuzz.csv")
    except ProjectError as exc:
        _clean(exc)
        return "error"
    k, a, n = cset.n_labels, cset.n_agents, cset.n_rows
    assert 2 <= k <= MAX_LABELS and 1 <= a <= MAX_AGENTS and a * k * k <= MAX_TABLE_CELLS
    given = label_order(order)
    fields = _fields(data)
    if given is not None:
        assert cset.labels == tuple(given)
    else:
        assert list(cset.labels) == sorted(cset.labels)
    assert set(cset.labels) <= fields and set(cset.agents) <= fields and set(cset.case_ids) <= fields
    for arr, bound in ((cset.truth, k), (cset.report, k), (cset.agent, a)):
        assert arr.shape == (n,) and arr.min() >= (-1 if arr is cset.truth else 0) and arr.max() < bound
    unlabelled = bool((cset.truth < 0).any())
    assert (cset.estimator != "counts") == unlabelled  # the automatic choice
    labelled_rows = int((cset.truth >= 0).sum())
    rows = zip(cset.case_ids, (cset.agents[i] for i in cset.agent), (cset.labels[i] for i in cset.report),
               (cset.labels[i] if i >= 0 else "" for i in cset.truth))
    assert not any(_names_the_columns(row) for row in rows)  # no header line read as data
    assert all(isinstance(w, str) and 0 < len(w) < 1000 for w in warnings) and len(warnings) <= 30
    try:
        view = calibration_view(cset, alpha)
        table = prior_table(cset, prior_mode, alpha)
    except ProjectError as exc:
        _clean(exc)
        assert not (_page_alpha_ok(alpha) and prior_mode in ("uniform", "empirical")), str(exc)
        return "error"
    assert _page_alpha_ok(alpha) and prior_mode in ("uniform", "empirical")
    assert view.counts.shape == (a, k, k) and view.counts.sum() == labelled_rows and view.counts.min() >= 0
    assert view.estimated == unlabelled
    assert np.isfinite(view.smoothed).all() and view.smoothed.min() > 0
    np.testing.assert_allclose(view.smoothed.sum(axis=2), 1.0, rtol=1e-12)
    rec = view.recall[~np.isnan(view.recall)]
    assert ((rec >= 0) & (rec <= 1)).all()
    prior = cset.prior(prior_mode, alpha)
    assert np.isfinite(prior).all() and prior.min() > 0 and abs(prior.sum() - 1) < 1e-12
    assert table["label"] == list(cset.labels) and sum(table["cases"]) == len(set(
        c for c, t in zip(cset.case_ids, cset.truth.tolist()) if t >= 0))
    if unlabelled:
        assert abs(sum(table["estimated cases"]) - cset.n_cases) < 0.05 * k + 1e-9
    if n <= 300:  # the set's own CSV reads back to the same rows (report-only labels sort back)
        every_class = bool((cset.class_counts() > 0).all())
        back, _ = parse_calibration_csv(cset.to_csv(), labels=cset.labels if every_class or unlabelled else None)
        assert back.labels == cset.labels and back.agents == cset.agents and back.case_ids == cset.case_ids
        assert back.estimator == cset.estimator
        np.testing.assert_array_equal(back.counts(), view.counts)
        np.testing.assert_array_equal(back.truth, cset.truth)
    return "valid"


def _fuzz(budget: settings) -> None:
    counts = run_budget("calibration CSV upload", _inputs, check, budget)
    assert counts["error"] and counts["valid"]


def test_fuzz_calibration_upload() -> None:
    _fuzz(DEFAULT)


@pytest.mark.fuzz_large
def test_fuzz_calibration_upload_large() -> None:
    _fuzz(LARGE)
