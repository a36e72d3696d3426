"""Views over stored runs: per-round curves, run-to-run comparison and exports."""
from __future__ import annotations

import io
import json
from typing import Any, Callable

import pandas as pd

from dcem.analysis.charged_risk import DEFAULT_COST
from studio.views.glossary import metric_words
from dcem.analysis.report import comparison_table
from dcem.store.database import Store
from dcem.store.run_reads import cell_labels, changed_outcomes, round_accuracy_energy, run_spec_text
# names its page imports from here (pages import from studio only)
from dcem.analysis.run_info import run_labels
from dcem.analysis.report import COMPARISON_METRICS

__all__ = ["round_curves", "settings_diff", "metric_deltas", "metric_namer", "changed_outcomes", "export_tables",
           "with_label_names", "to_csv_bytes", "to_parquet_bytes", "stopped_note", "STOPPED_NOTE"]

# Columns of the exported tables that hold an index into the cell's label set.
LABEL_COLUMNS = ("truth", "decision")


def round_curves(store: Store, run_id: str, method: str = "dcem") -> pd.DataFrame:
    """Fig. 2: per-round pooled accuracy and mean energy of a mediated method.

    Every recorded round of the fixed horizon counts, including rounds after a case's
    terminal action.  Returns rows (scenario, round, accuracy, energy, accuracy_std,
    energy_std) where the std is over seeds of the per-seed means.
    """
    df = round_accuracy_energy(store, run_id, method)
    if df.empty:
        return pd.DataFrame(columns=["scenario", "round", "accuracy", "energy", "accuracy_std", "energy_std"])
    out = df.groupby(["scenario", "round"]).agg(
        accuracy=("accuracy", "mean"), energy=("energy", "mean"),
        accuracy_std=("accuracy", lambda v: float(v.std(ddof=0))),
        energy_std=("energy", lambda v: float(v.std(ddof=0)))).reset_index()
    return out.sort_values(["scenario", "round"]).reset_index(drop=True)


def _spec(store: Store, run_id: str) -> dict[str, Any]:
    store.check_run(run_id)
    return json.loads(run_spec_text(store, run_id))


STOPPED_NOTE = ("This run stopped each case when D-CEM first certified or escalated it: the agents were not "
                "asked after that round, and the rounds after it repeat the last answers. Settings that would "
                "stop a case later re-score those repeated answers, not new ones.")


def stopped_note(store: Store, run_id: str) -> str | None:
    """:data:`STOPPED_NOTE` for a clinical run made with ``stop_when_decided``, else None."""
    return STOPPED_NOTE if _spec(store, run_id).get("stop_when_decided") else None


def _flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict):
            out.update(_flatten(v, key + "."))
        else:
            out[key] = v
    return out


def settings_diff(store: Store, run_a: str, run_b: str) -> pd.DataFrame:
    """Settings that differ between two runs: rows (setting, run_a, run_b)."""
    a, b = _flatten(_spec(store, run_a)), _flatten(_spec(store, run_b))
    keys = sorted(set(a) | set(b))
    rows = [(k, json.dumps(a.get(k)), json.dumps(b.get(k))) for k in keys if a.get(k) != b.get(k)]
    return pd.DataFrame(rows, columns=["setting", run_a, run_b])


def metric_namer(escalation_cost: float = DEFAULT_COST) -> Callable[[str], str]:
    """A metric's name in words, the risk with escalation's with ``escalation_cost`` in it."""
    return lambda name: metric_words(str(name), escalation_cost=escalation_cost)


def metric_deltas(store: Store, run_a: str, run_b: str, *, escalation_cost: float = DEFAULT_COST) -> pd.DataFrame:
    """Mean metrics of both runs per (scenario, method, metric) and the difference b - a
    (the risk with escalation at ``escalation_cost`` among them)."""
    keep = ["scenario", "method", "metric", "mean"]
    ta = comparison_table(store.metrics(run_a), escalation_cost=escalation_cost)[keep]
    tb = comparison_table(store.metrics(run_b), escalation_cost=escalation_cost)[keep]
    ta["method"], tb["method"] = ta["method"].astype(str), tb["method"].astype(str)
    merged = ta.merge(tb, on=["scenario", "method", "metric"], how="outer", suffixes=("_a", "_b"))
    merged["delta"] = merged["mean_b"] - merged["mean_a"]
    return merged.rename(columns={"mean_a": run_a, "mean_b": run_b})


def with_label_names(frame: pd.DataFrame, labels: dict[tuple[str, int], list[str]],
                     columns: tuple[str, ...] = LABEL_COLUMNS) -> pd.DataFrame:
    """``frame`` with a ``<column>_label`` beside each label-index column, named from the
    label set of the row's (scenario, seed) cell (empty when the index is out of range)."""
    out = frame.copy()
    for column in (c for c in columns if c in frame.columns):
        names = [_name(labels.get((str(s), int(k)), []), i)
                 for s, k, i in zip(frame["scenario"], frame["seed"], frame[column])]
        out.insert(out.columns.get_loc(column) + 1, f"{column}_label", names)
    return out


def _name(labels: list[str], index: object) -> str | None:
    try:
        i = int(index)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return None
    return labels[i] if 0 <= i < len(labels) else None


def export_tables(store: Store, run_id: str) -> dict[str, pd.DataFrame]:
    """The run's results as plain tables: metrics, outcomes (with the label names beside
    the truth and decision indices) and ablation."""
    store.check_run(run_id)
    outcomes = with_label_names(store.outcomes(run_id), cell_labels(store, run_id))
    return {"metrics": store.metrics(run_id), "outcomes": outcomes, "ablation": store.ablation(run_id)}


def to_csv_bytes(frame: pd.DataFrame) -> bytes:
    return frame.to_csv(index=False).encode("utf-8")


def to_parquet_bytes(frame: pd.DataFrame) -> bytes:
    buf = io.BytesIO()
    frame.to_parquet(buf, index=False)
    return buf.getvalue()
