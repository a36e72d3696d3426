"""The what-if page's charts as figures: the trade-off's points, labels and axes, the
sweep caption, the outcome mix (pure functions, no page run)."""
from __future__ import annotations

import numpy as np
import pandas as pd

from studio.whatif_charts import LEGEND_ABOVE, action_mix_figure, axis_range, point_labels, tradeoff_figure
from studio.whatif_view import sweep_caption


def _sweep() -> pd.DataFrame:
    return pd.DataFrame({"value": [0.25, 0.5, 1.0, 2.0], "escalation_rate": [0.6, 0.4, 0.2, np.nan],
                         "harmful_consensus": [0.0, 0.05, 0.1, np.nan], "system_risk": [0.1, 0.2, 0.3, np.nan],
                         "valid": [True, True, True, False]})


def test_tradeoff_points_carry_their_value_and_the_legend_sits_above() -> None:
    current = {"escalation_rate": 0.4, "harmful_consensus": 0.05}
    original = {"escalation_rate": 0.5, "harmful_consensus": 0.02}
    fig = tradeoff_figure(_sweep(), "eps_safe", 0.5, current, "harmful_consensus", original)
    curve = fig.data[-1]  # drawn last: its value labels lie over the markers
    assert "text" in curve.mode and "markers" in curve.mode
    assert list(curve.text) == ["0.25", "0.5", "1"]  # the invalid value has no point
    in_legend = sorted(fig.data, key=lambda t: t.legendrank)
    assert [t.name for t in in_legend] == ["eps_safe swept", "run's own settings", "current settings (eps_safe = 0.5)"]
    legend = fig.layout.legend  # at the bottom of the figure: three lines of it never reach the title
    assert legend.orientation == "h" and legend.yref == "container" and legend.yanchor == "bottom" and legend.y == 0
    assert fig.layout.title.text == "Escalated vs harmful consensus"
    assert fig.layout.xaxis.title.text == "escalated (% of cases)"
    assert fig.layout.yaxis.title.text == "harmful consensus (% of cases)"
    assert fig.layout.xaxis.tickformat == ".0%" and fig.layout.yaxis.tickformat == ".1%"


def test_tradeoff_axes_hold_shares_within_0_and_100_percent_and_every_marker() -> None:
    far = {"escalation_rate": 0.97, "harmful_consensus": 0.31, "system_risk": 2.4}
    for y in ("harmful_consensus", "system_risk"):
        fig = tradeoff_figure(_sweep(), "eps_safe", 0.5, far, y, {"escalation_rate": 0.0, y: 0.0})
        x_low, x_high = fig.layout.xaxis.range
        y_low, y_high = fig.layout.yaxis.range
        assert x_low < 0.0 < 0.97 < x_high <= 1.05 and y_low == 0.0  # never a negative share
        assert far[y] < y_high and (y_high <= 1.0 if y == "harmful_consensus" else y_high > 2.4)
    assert axis_range([0.011, 0.011], share=True) == [0.0, 0.05]  # one small point does not fill the plot
    assert axis_range([0.99], share=True) == [0.0, 1.0]


def test_a_sweep_that_cannot_move_the_run_says_so_in_words() -> None:
    flat = pd.DataFrame({"value": [1.4, 1.9, 2.45], "escalation_rate": [0.34] * 3,
                         "harmful_consensus": [0.011] * 3, "certified_rate": [0.2, 0.4, 0.5], "valid": [True] * 3})
    text = sweep_caption(flat, "eps_safe", "harmful_consensus")
    assert "eps_safe from 1.4 to 2.45" in text and "single point" in text and "escalated share (34.0%)" in text
    assert "certified share (20.0% to 50.0%)" in text
    still = sweep_caption(flat.assign(certified_rate=0.3), "eps_safe", "harmful_consensus")
    assert "no case of this run changes its outcome" in still
    moving = sweep_caption(_sweep(), "eps_safe", "harmful_consensus")
    assert "single point" not in moving and "1 values inside it" in moving


def test_outcome_mix_legend_above_and_bars_labelled() -> None:
    fig = action_mix_figure({"STOP_AND_DECIDE": 0.25, "STOP_AND_ESCALATE": 0.75, "PENDING": 0.0},
                            {"STOP_AND_DECIDE": 0.5, "STOP_AND_ESCALATE": 0.5, "PENDING": 0.0})
    assert fig.layout.legend.y == LEGEND_ABOVE["y"] and fig.layout.legend.yanchor == "bottom"
    assert [list(t.x) for t in fig.data] == [["decided", "escalated to a human"]] * 2
    assert list(fig.data[1].text) == ["25%", "75%"]
    assert fig.layout.yaxis.title.text == "share of cases"


def test_points_on_one_spot_share_one_label() -> None:
    assert point_labels([0.5, 0.75, 1.0, 2.0], [1.0, 1.0, 1.0, 0.5], [0.0, 0.0, 0.0, 0.1]) == \
        ["0.5 to 1", "", "", "2"]
    frame = pd.DataFrame({"value": [1.0, 2.0], "escalation_rate": [1.0, 1.0], "harmful_consensus": [0.0, 0.0],
                          "valid": [True, True]})
    fig = tradeoff_figure(frame, "eps_safe", 1.0, {"escalation_rate": 1.0, "harmful_consensus": 0.0},
                          "harmful_consensus")
    assert list(fig.data[-1].text) == ["1 to 2", ""] and len(fig.data) == 2
    near = point_labels([1.0, 1.1, 1.2, 3.0], [0.30, 0.31, 0.33, 0.9], [0.010, 0.0102, 0.0101, 0.02], spans=(1.04, 0.05))
    assert near == ["1", "", "", "3"]  # points closer than a label's room keep only the first label


# ------------------------------------------------------------------ a loaded calibration set
