"""The training tables name columns in words and put chance and the answer distribution
beside every held-out accuracy."""
from __future__ import annotations

from pathlib import Path

import pytest

from training.store import StepRow, TrainingStore
from training.views import curve_frame, heldout_table, runs_table


def test_tables_of_a_stored_run(tmp_path: Path) -> None:
    with TrainingStore(tmp_path / "t.duckdb") as store:
        assert runs_table(store.runs()).empty and curve_frame(store.steps("x")).empty
        store.start_run("r1", kind="diagnostician", method="grpo", base_model="smollm2-135m",
                        settings={"steps": 3}, data_name="ddxplus8:train", data_hash="h", n_train=495)
        for k in (1, 2):
            store.add_step("r1", StepRow(k, 0.1 * k, -0.5 + k / 10, 0.25 * k, 0.01 * k, 0.0, 8, 2500, 12.0))
        store.add_eval("r1", 0, "heldout", 200, 26, 8, "A", 0.98)
        store.add_eval("r1", 3, "heldout", 200, 130, 8, "C", 0.31)
        runs = runs_table(store.runs())
        assert runs.loc[0, "Steps done"] == "2 of 3" and runs.loc[0, "Status"] == "running"
        store.start_run("r2", kind="diagnostician", method="grpo", base_model="smollm2-135m",
                        settings={"lr": 1}, data_name="ddxplus8:train", data_hash="h", n_train=495)
        store.add_step("r2", StepRow(1, 0.1, -0.5, 0.25, 0.01, 0.0, 8, 2500, 12.0))
        assert list(runs_table(store.runs()).set_index("Run").loc[["r1", "r2"], "Steps done"]) == ["2 of 3", "1"]
        curves = curve_frame(store.steps("r1"))
        assert set(curves["curve"]) == {"Mean reward (batch)", "Accuracy on the batch", "KL to the base", "Loss"}
        assert len(curves) == 8
        held = heldout_table(store.evals("r1"))
    assert list(held["Step"]) == ["before training", "after step 3"]
    assert held.loc[0, "Accuracy"] == pytest.approx(0.13) and held.loc[0, "Chance"] == pytest.approx(0.125)
    assert held.loc[0, "Flag"].startswith("one answer") and held.loc[1, "Flag"] == ""
    assert held.loc[0, "95 % interval"] == "0.090 to 0.184"  # Wilson, 26 of 200


def test_the_paired_difference_and_its_interval(tmp_path: Path) -> None:
    import numpy as np

    from training.views import paired_table

    with TrainingStore(tmp_path / "t.duckdb") as store:
        assert paired_table(store.answers("r1"), np.random.default_rng(0)).empty
        truths = ["A", "B", "C", "D"] * 25
        store.add_answers("r1", 0, "heldout", [(f"i{k}", "A", t) for k, t in enumerate(truths)])
        after = [t if k % 2 == 0 else "A" for k, t in enumerate(truths)]  # right on every even item
        store.add_answers("r1", 5, "heldout", [(f"i{k}", a, t) for k, (a, t) in enumerate(zip(after, truths))])
        store.add_answers("r1", 0, "flat", [(f"j{k}", "B", "B") for k in range(10)])
        store.add_answers("r1", 5, "flat", [(f"j{k}", "B", "B") for k in range(10)])
        table = paired_table(store.answers("r1"), np.random.default_rng(0)).set_index("Held-out set")
        store.forget_after("r1", 0)
        assert set(store.answers("r1")["step"]) == {0}
    # before: "A" everywhere, right on the 25 items whose truth is A; after: right on the 50 even
    # items, wrong on the odd ones (truth B or D, answer A)
    assert table.loc["heldout", "Before"] == pytest.approx(0.25) and table.loc["heldout", "After"] == pytest.approx(0.5)
    assert table.loc["heldout", "Difference"] == pytest.approx(0.25) and table.loc["heldout", "Excludes 0"] == "yes"
    assert table.loc["flat", "Difference"] == 0.0 and table.loc["flat", "95 % interval"] == "+0.000 to +0.000"
    assert table.loc["flat", "Excludes 0"] == "no"
    # a four-way tie goes to the first letter; every "flat" item's truth is B
    assert table.loc["heldout", "Best single letter"] == "A always: 0.250"
    assert table.loc["flat", "Best single letter"] == "B always: 1.000"


def test_the_best_constant_answer_is_the_most_frequent_truth() -> None:
    import pandas as pd

    from training.views import best_constant

    part = pd.DataFrame({"item_id": ["a", "b", "c", "d", "d"], "truth": ["C", "B", "C", "B", "B"]})
    assert best_constant(part) == ("B", 0.5)  # item d counted once; B and C tie at 2 of 4
    assert best_constant(part.iloc[[0, 2]]) == ("C", 1.0)
    assert best_constant(part.iloc[[]])[0] == ""


def test_paired_bootstrap_refuses_mismatched_lists() -> None:
    import numpy as np

    from common.intervals import paired_bootstrap

    with pytest.raises(ValueError, match="equally long"):
        paired_bootstrap([True], [True, False], np.random.default_rng(0))
    diff, low, high = paired_bootstrap([False] * 50 + [True] * 50, [True] * 100, np.random.default_rng(1))
    assert diff == 0.5 and 0.38 < low < 0.5 < high < 0.62
