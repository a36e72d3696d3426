"""Hardening issue, defects 7-8: the calibration CSV upload, and its scaling.

7. Parsing time grew with agents x cases (every agent's skipped cases were looked up
   case by case, every agent was filtered out of the whole frame).
8. Memory grew with the square of the labels outside the page's error handling (dense
   (A, K, K) tables built for any number of labels).

Each test is named after its defect.  The scaling test feeds 5 MB uploads of every
shape through the page's steps (parse, tables, prior) and bounds peak memory.  How long
they take, and how the time grows with the agents, is measured by
``benchmarks/growth_checks.py`` (BENCHMARKS.md), not asserted here: a busy machine
makes any time bound fail.
"""
from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from studio.views.calibration_view import calibration_view, load_upload, prior_table
from dcem.calibration.csv_import import (MAX_AGENTS, MAX_LABELS, MAX_LISTED_WARNINGS, MAX_TABLE_CELLS,
                                         parse_csv_rows)
from dcem.calibration.fitting import estimate_confusion
from dcem.calibration.sets import CalibrationSet, parse_calibration_csv
from common.errors import ProjectError, InputError
from tests.dcem.calibration_files import FIVE_MB, HEADER, SHAPES

PEAK_BOUND = 200_000_000  # bytes, traced peak of parse + tables + prior for a 5 MB upload


def csv_text(rows: list[str]) -> str:
    return HEADER + "\n".join(rows) + "\n"


def error(data: bytes | str, **kwargs: object) -> InputError:
    with pytest.raises(InputError) as info:
        parse_calibration_csv(data, **kwargs)  # type: ignore[arg-type]
    return info.value


def page_steps(data: bytes) -> tuple[CalibrationSet, list[str]]:
    """What the page does with an upload: parse, then the tables and the prior."""
    cset, warnings = load_upload(data, "", "upload.csv")
    view = calibration_view(cset, 0.5)
    table = prior_table(cset, "empirical", 0.5)
    assert view.smoothed.shape == (cset.n_agents, cset.n_labels, cset.n_labels)
    assert np.isfinite(view.smoothed).all() and len(table["prior"]) == cset.n_labels
    return cset, warnings


# ------------------------------------------------------------------ defect 7
def test_defect7_one_case_per_agent_parses_with_counted_warnings() -> None:
    """1,000 agents (the cap) over 200,000 cases, one row each: every agent skips 199,999
    cases.  The old per-agent scan of every case took agents x cases = 2e8 lookups (its
    time, and the growth with agents, are in benchmarks/growth_checks.py)."""
    data = csv_text([f"c{i},a{i % 1000},k{i % 2},k{i % 2}" for i in range(200_000)]).encode()
    cset, warnings = parse_calibration_csv(data)
    assert cset.n_agents == 1000 and cset.n_cases == 200_000
    assert len(warnings) == MAX_LISTED_WARNINGS + 1
    assert warnings[0].startswith("agent 'a0' has no row for 199800 of 200000 cases ('c1', 'c2', 'c3', ...)")
    assert warnings[-1].startswith("990 more agents have no row for some cases (1,000 of 1,000 agents in all)")


def test_defect7_the_issues_16000_agents_stop_at_the_agent_cap() -> None:
    """The issue's file: 16,000 agents, one row each (about 300 KB, 16 s before): the
    error comes at the 1,001st agent's line, so the rows after it are never read."""
    data = csv_text([f"c{i},ag{i},k{i % 2},k{i % 2}" for i in range(16_000)]).encode()
    exc = error(data)
    assert exc.field == "agent"
    assert str(exc) == (f"agent: line {MAX_AGENTS + 2}: 'ag{MAX_AGENTS}' is agent number 1,001; a calibration "
                        "file may have at most 1,000 agents")


def test_defect7_the_growth_files_parse_to_their_agents_and_rows() -> None:
    """The files whose parsing time benchmarks/growth_checks.py compares (250 and 1,000
    agents, 50 rows each, every agent skipping almost every case) parse to what they hold."""
    for n_agents in (250, 1000):
        data = csv_text([f"c{i},a{i % n_agents},k{i % 3},k{i % 3}" for i in range(n_agents * 50)]).encode()
        parsed = parse_csv_rows(data)
        assert len(parsed.agents) == n_agents and len(set(parsed.case_ids)) == len(parsed.case_ids) == n_agents * 50


def test_defect7_skipped_case_warnings_match_the_cases() -> None:
    """The warnings, now computed from row counts, name the right agents and cases."""
    rows = [f"c{c},A,k0,k{c % 2}" for c in range(6)] + ["c0,B,k1,k0", "c4,B,k0,k0", "c5,C,k1,k1"]
    cset, warnings = parse_calibration_csv(csv_text(rows))
    assert warnings == [
        "agent 'B' has no row for 4 of 6 cases ('c1', 'c2', 'c3', ...); its confusion matrix uses only "
        "the cases it answered",
        "agent 'C' has no row for 5 of 6 cases ('c0', 'c1', 'c2', ...); its confusion matrix uses only "
        "the cases it answered"]
    assert cset.counts().sum(axis=(1, 2)).tolist() == [6, 2, 1]


def test_defect7_duplicate_pairs_found_after_the_pass_name_both_lines() -> None:
    rows = [f"c{i},A,k0,k{i % 2}" for i in range(50)] + ["c7,B,k1,k1", "c3,A,k1,k1", "c7,B,k0,k1"]
    msg = str(error(csv_text(rows)))
    assert msg == ("file: line 53: case 'c3' already has a row for agent 'A' (line 5); give one row "
                   "per case and agent")


# ------------------------------------------------------------------ defect 8
def test_defect8_the_issues_30000_labels_are_a_clear_error_in_little_memory() -> None:
    """30,000 labels in 657 KB raised MemoryError (8,000 labels reached 2.1 GB)."""
    data = csv_text([f"c{i},A,L{i},L{i}" for i in range(30_000)]).encode()
    tracemalloc.start()
    try:
        exc = error(data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert exc.field == "labels"
    assert str(exc) == ("labels: line 202: 'L200' is distinct label number 201; a calibration file may "
                        "have at most 200 labels (true and reported)")
    assert peak < 20_000_000, peak  # the decoded text and the first rows, no table


def test_defect8_label_cap_counts_reported_labels_and_given_lists() -> None:
    true_only = [f"c{i},A,L{i % 2},L{i % 2}" for i in range(10)]
    reported = [f"r{i},A,R{i},L0" for i in range(MAX_LABELS)]
    assert "is distinct label number 201" in str(error(csv_text(true_only + reported)))
    ok, _ = parse_calibration_csv(csv_text([f"c{i},A,L{i},L{i}" for i in range(MAX_LABELS)]))
    assert ok.n_labels == MAX_LABELS
    given = [f"L{i}" for i in range(MAX_LABELS + 1)]
    exc = error(csv_text(true_only), labels=given)
    assert str(exc) == "labels: 201 labels given; a calibration set may have at most 200 labels"


def test_defect8_table_size_cap_is_checked_as_agents_arrive() -> None:
    """200 labels allow 100 agents: (A, K, K) tables of 4,000,000 entries at most."""
    labels = [f"c{i},a0,L{i},L{i}" for i in range(MAX_LABELS)]
    agents = [f"x{a},a{a},L0,L0" for a in range(1, 101)]
    exc = error(csv_text(labels + agents))
    assert exc.field == "file"
    assert str(exc).startswith(f"file: line {MAX_LABELS + 100 + 1}: 101 agents and 200 labels need 4,040,000 "
                               "confusion-matrix entries (agents x labels²); the limit is 4,000,000 (for "
                               "example 100 agents with 200 labels, or 1,000 agents with 63 labels)")
    cset, _ = parse_calibration_csv(csv_text(labels + agents[:99]))
    assert cset.n_agents * cset.n_labels ** 2 == MAX_TABLE_CELLS


def test_defect8_calibration_set_itself_refuses_oversized_tables() -> None:
    """Sets built or merged in code (e.g. reviewed cases added) hit the same caps."""
    many = tuple(f"L{i}" for i in range(MAX_LABELS + 1))
    with pytest.raises(InputError, match="201 distinct labels; a calibration set may have at most 200"):
        CalibrationSet(many, ("A",), ("c1",), [0], [0], [0])
    agents = tuple(f"a{i}" for i in range(MAX_AGENTS + 1))
    with pytest.raises(InputError, match="1,001 agents; a calibration set may have at most 1,000"):
        CalibrationSet(("x", "y"), agents, tuple(f"c{i}" for i in range(len(agents))),
                       [0] * len(agents), list(range(len(agents))), [0] * len(agents))


def test_defect8_confusion_from_counts_equals_estimate_confusion() -> None:
    """The one-pass confusion (no per-agent filtering) equals the reference formula."""
    rng = np.random.default_rng(8)
    n, a, k = 300, 4, 5
    truth = rng.integers(0, k, n)
    reports = rng.integers(0, k, (n, a))
    cset = CalibrationSet(tuple(f"k{i}" for i in range(k)), tuple(f"a{j}" for j in range(a)),
                          tuple(f"c{i}" for i in range(n) for _ in range(a)), np.repeat(truth, a),
                          np.tile(np.arange(a), n), reports.reshape(-1))
    for alpha in (0.01, 0.5, 3.0):
        np.testing.assert_allclose(cset.confusion(alpha), estimate_confusion(truth, reports, k, alpha=alpha),
                                   rtol=1e-13, atol=1e-15)
    with pytest.raises(InputError, match="alpha: smoothing must be a finite number > 0"):
        cset.confusion(float("nan"))


# ------------------------------------------------------------------ scaling
@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_five_mb_upload_of_any_shape_ends_cleanly_within_bounded_memory(shape: str) -> None:
    """A 5 MB upload (many agents, many labels, many rows, long values, wide header,
    blank rows, and every cap exceeded) goes through the page's steps within 200 MB traced
    peak, ending in a result or a clean error (its time: benchmarks/growth_checks.py)."""
    data = SHAPES[shape](FIVE_MB)
    assert FIVE_MB - 500_000 < len(data) <= FIVE_MB, len(data)

    def steps() -> str:
        try:
            cset, warnings = page_steps(data)
        except ProjectError as exc:
            assert len(str(exc)) < 400, str(exc)[:400]
            return "error"
        assert cset.n_labels <= MAX_LABELS and cset.n_agents <= MAX_AGENTS
        assert len(warnings) <= 2 * MAX_LISTED_WARNINGS + 4 and all(len(w) < 1000 for w in warnings)
        return "valid"

    outcome = steps()
    tracemalloc.start()
    try:
        assert steps() == outcome
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    expected = "valid" if shape in {"many_agents", "many_labels", "many_rows", "long_values", "wide_header"} \
        else "error"
    assert outcome == expected
    assert peak < PEAK_BOUND, peak
