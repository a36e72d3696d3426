"""The Group evaluation page's size chart: one row per group, ordered by group size."""
from __future__ import annotations

import pandas as pd
import pytest

from studio.sag_eval_charts import size_figure


def _points() -> pd.DataFrame:
    rows = [["sag-6", 6, "smollm2-135m", 18.3, 6], ["vote-6", 6, "smollm2-135m", 18.3, 6],
            ["sag-6-mixed", 6, "mixed", 21.7, 6], ["single", 1, "smollm2-135m", 20.0, 6],
            ["sag-10", 10, "smollm2-135m", 16.7, 6]]
    frame = pd.DataFrame(rows, columns=["group", "agents", "backbone", "accuracy", "benchmarks"])
    return frame.assign(low=frame["accuracy"] - 10.0, high=frame["accuracy"] + 12.0)


def test_every_group_has_its_own_row_even_at_the_same_size_and_accuracy() -> None:
    fig = size_figure(_points())
    placed = {(y, x) for trace in fig.data for x, y in zip(trace.x, trace.y)}
    assert len(placed) == 5  # sag-6 and vote-6 share size and accuracy but not a row
    assert ("vote-6 · 6 agents", 18.3) in placed and ("single · 1 agent", 20.0) in placed


def test_rows_run_from_the_largest_group_down_to_the_single_model() -> None:
    axis = size_figure(_points()).layout.yaxis
    rows = list(axis.categoryarray)  # bottom row first
    assert axis.categoryorder == "array"
    assert rows[-1] == "sag-10 · 10 agents" and rows[0] == "single · 1 agent"
    assert [r.split(" · ")[0] for r in rows[1:4]] == ["sag-6", "sag-6-mixed", "vote-6"]


def test_colour_names_the_backbone() -> None:
    names = {trace.name for trace in size_figure(_points()).data}
    assert names == {"smollm2-135m", "mixed"}


def test_dots_carry_their_interval_and_chance_is_a_line() -> None:
    fig = size_figure(_points(), chance=0.25)
    assert all(max(trace.error_x.array) == pytest.approx(12.0) for trace in fig.data)
    assert any(shape.x0 == 25.0 and shape.line.dash == "dash" for shape in fig.layout.shapes)
    assert any(a.text == "chance 25 %" for a in fig.layout.annotations)
    assert fig.layout.xaxis.range[1] >= 33.7  # the widest interval fits


def test_every_roc_curve_has_its_own_colour_and_the_legend_sits_right() -> None:
    from studio.sag_eval_charts import roc_figure

    points = pd.DataFrame([(f"g{i}", x, x, 0.5) for i in range(13) for x in (0.0, 1.0)],
                          columns=["group", "fpr", "tpr", "auc"])
    fig = roc_figure(points)
    colours = [t.line.color for t in fig.data[1:]]
    assert len(colours) == 13 and len(set(colours)) == 13
    assert fig.layout.legend.x > 1 and fig.layout.legend.orientation == "v"
