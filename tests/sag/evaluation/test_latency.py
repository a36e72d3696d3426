"""An item's latency: its wall time, with turns answered from the call log counted at their
original call's time (one step lasts as long as its longest turn)."""
from __future__ import annotations

import pandas as pd
import pytest

from sag.evaluation.latency import item_latencies


def _turn(item: str, rnd: int, phase: str, cached: bool, duration: float, model: str = "m1",
          run: str = "r1") -> dict[str, object]:
    return {"run_id": run, "item_id": item, "round": rnd, "phase": phase, "model": model, "cached": cached,
            "duration_s": duration}


def _outcomes(*rows: tuple[str, float], run: str = "r1") -> pd.DataFrame:
    return pd.DataFrame({"run_id": [run] * len(rows), "item_id": [r[0] for r in rows],
                         "seconds": [r[1] for r in rows]})


def test_an_item_without_logged_turns_keeps_its_wall_time() -> None:
    turns = pd.DataFrame([_turn("a", 0, "propose", False, 2.0), _turn("a", 0, "propose", False, 2.5),
                          _turn("a", 1, "debate", False, 4.0)])
    assert item_latencies(_outcomes(("a", 6.6)), turns).tolist() == [6.6]


def test_a_step_answered_from_the_log_adds_its_longest_original_turn() -> None:
    turns = pd.DataFrame([_turn("a", 0, "propose", True, 2.0), _turn("a", 0, "propose", True, 3.0),
                          _turn("a", 1, "debate", False, 4.0)])
    # the wall time held only the debate step; the logged round 0 took 3.0 s when it was made
    assert item_latencies(_outcomes(("a", 4.1)), turns).tolist() == [pytest.approx(7.1)]


def test_a_step_partly_from_the_log_adds_only_what_its_logged_turns_took_beyond_the_rest() -> None:
    longer = pd.DataFrame([_turn("a", 0, "propose", True, 5.0), _turn("a", 0, "propose", False, 2.0)])
    shorter = pd.DataFrame([_turn("b", 0, "propose", True, 1.5), _turn("b", 0, "propose", False, 2.0)])
    assert item_latencies(_outcomes(("a", 2.0)), longer).tolist() == [pytest.approx(5.0)]
    assert item_latencies(_outcomes(("b", 2.0)), shorter).tolist() == [pytest.approx(2.0)]


def test_each_model_of_a_step_and_each_item_and_run_count_apart() -> None:
    turns = pd.DataFrame([_turn("a", 1, "debate", True, 3.0, model="m1"),
                          _turn("a", 1, "debate", True, 2.0, model="m2"),
                          _turn("a", 1, "debate", True, 9.0, run="r2"), _turn("b", 0, "propose", False, 1.0)])
    outcomes = pd.concat([_outcomes(("a", 0.1), ("b", 1.0)), _outcomes(("a", 0.2), run="r2")], ignore_index=True)
    # two models play one after the other: 3.0 + 2.0 restored; the other run's item has its own step
    assert item_latencies(outcomes, turns).tolist() == [pytest.approx(5.1), pytest.approx(1.0), pytest.approx(9.2)]


def test_no_messages_give_the_wall_times() -> None:
    empty = pd.DataFrame(columns=["run_id", "item_id", "round", "phase", "model", "cached", "duration_s"])
    assert item_latencies(_outcomes(("a", 1.5), ("b", 2.5)), empty).tolist() == [1.5, 2.5]
