"""The Agent group page opens on a useful run and compares it with a run sharing its items."""
from __future__ import annotations

import pandas as pd

from studio.views.sag_run_choice import partner_run, useful_order


def _runs() -> pd.DataFrame:
    rows = [("eval-consistency.medqa.cand.2-sag-6", "eval:consistency/medqa/cand/2", "sag-6", 0),
            ("eval-accuracy.medqa-vote-6", "eval:accuracy/medqa", "vote-6", 0),
            ("eval-safety.harmful-sag-6", "eval:safety/harmful", "sag-6", 0),
            ("eval-accuracy.medqa-sag-6", "eval:accuracy/medqa", "sag-6", 0),
            ("eval-accuracy.medqa-sag-6-seed1", "eval:accuracy/medqa", "sag-6", 1)]
    return pd.DataFrame(rows, columns=["run_id", "benchmark", "group_name", "seed"])


def test_an_accuracy_run_of_the_main_group_comes_first_and_consistency_repeats_last() -> None:
    order = useful_order(_runs())
    assert order[0] == "eval-accuracy.medqa-sag-6" and order[-1] == "eval-consistency.medqa.cand.2-sag-6"
    assert order.index("eval-accuracy.medqa-vote-6") < order.index("eval-safety.harmful-sag-6")
    mine = pd.concat([_runs(), pd.DataFrame([("sag-medqa-sag-6-abc", "medqa", "sag-6", 0)],
                                            columns=_runs().columns)], ignore_index=True)
    assert useful_order(mine)[0] == "sag-medqa-sag-6-abc"  # a run launched or imported by the person


def test_the_partner_shares_the_benchmark_and_seed_and_prefers_another_group() -> None:
    runs = _runs()
    assert partner_run(runs, "eval-accuracy.medqa-sag-6") == "eval-accuracy.medqa-vote-6"
    assert partner_run(runs, "eval-safety.harmful-sag-6") == "eval-safety.harmful-sag-6"  # nothing shares it
    assert partner_run(runs, "no-such-run") == "no-such-run"


def test_a_partner_sharing_answered_items_comes_before_another_group() -> None:
    items = {"eval-accuracy.medqa-vote-6": 0, "eval-accuracy.medqa-sag-6": 10}
    runs = pd.concat([_runs(), pd.DataFrame([("eval-accuracy.medqa-sag-6-again", "eval:accuracy/medqa", "sag-6", 0)],
                                         columns=_runs().columns)], ignore_index=True)
    items["eval-accuracy.medqa-sag-6-again"] = 10
    assert partner_run(runs, "eval-accuracy.medqa-sag-6", shared=items.get) == "eval-accuracy.medqa-sag-6-again"


def test_the_launch_estimate_comes_from_the_measured_seconds_of_the_group() -> None:
    from studio.views.sag_launch import time_estimate

    outcomes = pd.DataFrame({"group_name": ["sag-6"] * 3 + ["single"], "seconds": [40.0, 60.0, 500.0, 2.0]})
    text = time_estimate(outcomes, "sag-6", 10)
    assert "median of 60 s over 3 stored items (from 40 to 500 s)" in text and "about 10 min" in text
    assert "no measured time" in time_estimate(outcomes, "sag-10", 1)
    assert "no measured time" in time_estimate(pd.DataFrame(columns=["group_name", "seconds"]), "sag-6", 1)
