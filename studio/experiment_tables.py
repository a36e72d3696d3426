"""The Experiments page's run comparison tables in words: methods by their display names,
metrics in words with their unit (shares in percent), outcomes as the case table words
them, and each run named in the column titles."""
from __future__ import annotations

import pandas as pd

from studio.views.glossary import metric_words
from studio.views.metric_tables import is_percent
from dcem.core.vocabulary import method_label
from studio.whatif_charts import OUTCOME_WORDS

__all__ = ["deltas_view", "changed_view", "DIFFERENCE"]

DIFFERENCE = "difference (other − selected)"


def deltas_view(frame: pd.DataFrame, run_a: str, run_b: str, escalation_cost: float | None = None) -> pd.DataFrame:
    """:func:`studio.views.run_compare.metric_deltas` in words: shares times 100; the risk
    with escalation named with ``escalation_cost``, the cost it was computed at."""
    if frame.empty:
        return pd.DataFrame(columns=["scenario", "method", "metric", "unit", run_a, run_b, DIFFERENCE])
    scale = frame["metric"].map(lambda m: 100.0 if is_percent(str(m)) else 1.0)
    return pd.DataFrame({
        "scenario": frame["scenario"].astype(str), "method": frame["method"].map(lambda m: method_label(str(m))),
        "metric": frame["metric"].map(lambda m: metric_words(str(m), escalation_cost=escalation_cost)),
        "unit": frame["metric"].map(lambda m: "% of cases" if is_percent(str(m)) else
                                    ("rounds" if m == "avg_rounds" else "loss")),
        run_a: frame[run_a] * scale, run_b: frame[run_b] * scale, DIFFERENCE: frame["delta"] * scale})


def changed_view(frame: pd.DataFrame, run_a: str, run_b: str) -> pd.DataFrame:
    """:func:`studio.views.run_compare.changed_outcomes` with words for the outcomes and
    the runs named in the column titles."""
    words = {"case_id": "case", "truth": "true class (index)",
             "action_a": f"outcome in {run_a}", "action_b": f"outcome in {run_b}",
             "decision_a": f"decision in {run_a} (index)", "decision_b": f"decision in {run_b} (index)",
             "rounds_a": f"rounds in {run_a}", "rounds_b": f"rounds in {run_b}"}
    out = frame.copy()
    for column in ("action_a", "action_b"):
        if column in out:
            out[column] = out[column].map(lambda a: OUTCOME_WORDS.get(str(a), str(a)))
    return out.rename(columns=words)
