"""Metric tables for the table widget (studio.views.metric_tables): one column per
metric in the glossary's order, shares in percent, "mean ± std" on request."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from studio.views.metric_tables import comparison_view, is_percent, risk_note, wide_metrics


def _metrics() -> pd.DataFrame:
    rows = []
    for seed, acc in ((0, 0.5), (1, 0.7)):
        for method in ("pool", "dcem"):
            rows += [("S1", seed, method, "accuracy", acc), ("S1", seed, method, "avg_rounds", 2.0 + seed),
                     ("S1", seed, method, "risk", 0.25)]
    return pd.DataFrame(rows, columns=["scenario", "seed", "method", "metric", "value"])


def test_comparison_view_has_a_column_per_metric_with_rates_in_percent() -> None:
    view = comparison_view(_metrics())
    assert list(view.columns) == ["scenario", "method", "risk", "accuracy", "avg_rounds"]
    assert list(view["method"]) == ["Fixed log pool", "D-CEM"]
    assert view["accuracy"].tolist() == pytest.approx([60.0, 60.0])
    assert view["avg_rounds"].tolist() == pytest.approx([2.5, 2.5])
    assert is_percent("harmful_consensus") and is_percent("mix_escalate") and not is_percent("risk")


def test_spread_cells_read_mean_plus_minus_std_in_the_metric_unit() -> None:
    view = comparison_view(_metrics(), spread=True)
    assert view["accuracy"].iloc[0] == "60.0 % ± 10.0"
    assert view["risk"].iloc[0] == "0.25 ± 0.00"


def test_a_missing_mean_reads_n_a_and_a_missing_column_is_named() -> None:
    table = pd.DataFrame({"scenario": ["S1"], "method": ["dcem"], "metric": ["accuracy"],
                          "mean": [math.nan], "std": [math.nan]})
    assert wide_metrics(table, rows=["scenario", "method"], spread=True)["accuracy"].iloc[0] == "n/a"
    with pytest.raises(ValueError, match="lacks the column"):
        wide_metrics(table.drop(columns="std"), rows=["scenario", "method"])


def test_the_share_decided_stands_before_the_system_risk_and_the_note_names_it() -> None:
    rows = []
    for seed, decided in ((0, 0.1), (1, 0.3)):
        for method, share in (("single", 1.0), ("dcem", decided)):
            rows += [("S1", seed, method, "system_risk", 0.2), ("S1", seed, method, "decided_rate", share),
                     ("S1", seed, method, "accuracy", 0.5), ("S2", seed, method, "decided_rate", share / 2),
                     ("S2", seed, method, "system_risk", 0.1)]
    metrics = pd.DataFrame(rows, columns=["scenario", "seed", "method", "metric", "value"])
    view = comparison_view(metrics)
    columns = list(view.columns)
    assert columns.index("decided_rate") == columns.index("system_risk") - 1
    note = risk_note(metrics)
    assert "an escalated case counts 0" in note and "D-CEM decided 10% to 20% by scenario" in note
    assert "D-CEM decided" not in risk_note(metrics[metrics["method"] != "dcem"])
