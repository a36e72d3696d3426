"""The shared training loop's step budget and progress reports, with a stand-in step."""
from __future__ import annotations

import io

import pytest

from common.errors import ConfigError
from training.cli import step_bar
from training.loop import run_loop
from training.store import StepRow


def _row(k: int) -> StepRow:
    return StepRow(k, 0.0, 0.5, 0.25, 0.0, 0.0, 1, 1, 0.1)


def _loop(start: int, total: int) -> tuple[list[tuple[int, int, bool]], list[int]]:
    seen: list[tuple[int, int, bool]] = []
    saved: list[int] = []
    run_loop(start=start, total=total, step=_row, record=lambda row: None, checkpoint=saved.append, every=3,
             progress=lambda done, count, row: seen.append((done, count, row is not None)))
    return seen, saved


def test_a_resumed_run_reports_its_steps_done_before_its_first_step() -> None:
    assert _loop(0, 2) == ([(1, 2, True), (2, 2, True)], [2])
    assert _loop(2, 4) == ([(2, 4, False), (3, 4, True), (4, 4, True)], [3, 4])
    # a budget equal to the steps done: nothing to do, the run ends there
    assert _loop(4, 4) == ([(4, 4, False)], [])


def test_a_budget_below_the_steps_done_is_refused_in_one_line() -> None:
    with pytest.raises(ConfigError) as caught:
        _loop(5, 3)
    assert caught.value.field == "steps" and "already done 5 steps; ask for at least 5" in str(caught.value)
    with pytest.raises(ValueError):
        _loop(-1, 3)


def test_the_progress_bar_of_a_resumed_run_starts_at_its_steps_done(monkeypatch: pytest.MonkeyPatch) -> None:
    err = io.StringIO()
    monkeypatch.setattr("sys.stderr", err)
    bar, progress = step_bar(10, quiet=False)
    progress(4, 10, None)
    assert bar.n == 4 and bar.initial == 4 and " 4/10 " in err.getvalue()
    progress(5, 10, _row(5))
    bar.close()
    assert " 5/10 " in err.getvalue() and "reward +0.50 batch acc 0.25" in err.getvalue()


def test_a_raising_step_stops_the_run_with_its_own_error_and_nothing_after_it() -> None:
    recorded: list[int] = []
    saved: list[int] = []

    def step(k: int) -> StepRow:
        if k == 3:
            raise MemoryError("out of memory at step 3")
        return _row(k)
    with pytest.raises(MemoryError, match="step 3"):
        run_loop(start=0, total=6, step=step, record=lambda row: recorded.append(row.step), checkpoint=saved.append,
                 every=2)
    assert recorded == [1, 2] and saved == [2]


def test_stopping_between_steps_checkpoints_every_recorded_step() -> None:
    recorded: list[int] = []
    saved: list[int] = []
    result = run_loop(start=1, total=9, step=_row, record=lambda row: recorded.append(row.step),
                      checkpoint=saved.append, every=4, should_stop=lambda: len(recorded) >= 2)
    assert (result.last_step, result.stopped) == (3, True)
    assert recorded == [2, 3] and saved == [3]
