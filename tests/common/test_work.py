"""The one runner (common.work.run_units) in process: skip, store, fail, stop, cancel, progress."""
from __future__ import annotations

from pathlib import Path

import pytest

from common.errors import ConfigError, InputError
from common.work import Unit, failure_of, run_units
from tests.common.work_jobs import SquareJob, TableSink, units


def test_every_unit_is_stored_once_and_a_second_run_does_nothing(tmp_path: Path) -> None:
    sink = TableSink(tmp_path / "w.duckdb")
    seen: list[tuple[int, int, str]] = []
    first = run_units(sink, units(5), SquareJob(), run_id="r", progress=lambda d, t, s: seen.append((d, t, s)))
    assert (first.computed, first.skipped, first.complete, first.failed) == (5, 0, True, ())
    assert sink.rows() == [(f"u{i}", i, i * i) for i in range(5)]
    assert seen[0] == (0, 5, "starting") and seen[-1][:2] == (5, 5)
    again = run_units(sink, units(5), SquareJob(), run_id="r", done=sink.done(), resumed=True)
    assert (again.computed, again.skipped, again.complete) == (0, 5, True)
    assert sink.saved == [f"u{i}" for i in range(5)]


def test_a_raising_unit_is_recorded_with_its_message_and_the_run_goes_on(tmp_path: Path) -> None:
    sink = TableSink(tmp_path / "w.duckdb")
    summary = run_units(sink, units(4), SquareJob(fail_on=(1,)), run_id="r")
    assert summary.failed == (("u1", "RuntimeError: cannot square 1"),)
    assert (summary.computed, summary.complete) == (3, False)
    assert [r[0] for r in sink.rows()] == ["u0", "u2", "u3"]
    assert sink.con.execute("SELECT * FROM failures").fetchall() == [("u1", "RuntimeError: cannot square 1")]
    retry = run_units(sink, units(4), SquareJob(), run_id="r", done=sink.done())
    assert (retry.computed, retry.skipped, retry.complete) == (1, 3, True)


def test_failures_in_a_row_stop_the_run_and_say_how_many_were_not_tried(tmp_path: Path) -> None:
    sink = TableSink(tmp_path / "w.duckdb")
    summary = run_units(sink, units(6), SquareJob(fail_on=(0, 1, 2, 3)), run_id="r", stop_after=3)
    assert summary.stopped == "stopped after 3 units in a row failed; 3 units not tried"
    assert len(summary.failed) == 3 and sink.rows() == []


def test_cancel_stops_between_units_and_the_same_call_resumes(tmp_path: Path) -> None:
    sink = TableSink(tmp_path / "w.duckdb")
    first = run_units(sink, units(5), SquareJob(), run_id="r", cancel=lambda: len(sink.saved) >= 2)
    assert (first.computed, first.complete) == (2, False)
    rest = run_units(sink, units(5), SquareJob(), run_id="r", done=sink.done())
    assert (rest.computed, rest.skipped, rest.complete) == (3, 2, True)
    assert len(sink.rows()) == 5


def test_weights_count_ticks_inside_a_unit_and_whole_units_after(tmp_path: Path) -> None:
    sink = TableSink(tmp_path / "w.duckdb")
    heavy = [Unit(f"u{i}", f"n{i}", i, weight=3) for i in range(2)]
    seen: list[int] = []
    run_units(sink, heavy, SquareJob(), run_id="r", progress=lambda d, t, s: seen.append(d))
    assert seen == [0, 1, 3, 4, 6]  # one tick inside each unit, then the unit's full weight


def test_a_job_that_cannot_open_stops_before_anything_is_stored(tmp_path: Path) -> None:
    class Broken:
        key = "broken"

        def open(self, here: object = None) -> None:
            raise InputError("model", "no such model file")
    sink = TableSink(tmp_path / "w.duckdb")
    with pytest.raises(InputError):
        run_units(sink, units(2), Broken(), run_id="r")  # type: ignore[arg-type]
    assert sink.rows() == []


@pytest.mark.parametrize("bad, words", [([], "at least one unit"),
                                        ([Unit("a", "a", 1), Unit("a", "a", 2)], "'a' is listed twice"),
                                        ([Unit("a", "a", 1, weight=0)], "weight 0")])
def test_bad_unit_lists_are_refused(tmp_path: Path, bad: list[Unit], words: str) -> None:
    with pytest.raises(ConfigError, match=words):
        run_units(TableSink(tmp_path / "w.duckdb"), bad, SquareJob(), run_id="r")


def test_failure_messages_name_the_error_type_unless_it_is_the_projects_own() -> None:
    assert failure_of(ZeroDivisionError("division by zero")).message == "ZeroDivisionError: division by zero"
    assert failure_of(KeyError()).message == "KeyError"
    assert failure_of(InputError("seed", "must be >= 0")).message == str(InputError("seed", "must be >= 0"))
