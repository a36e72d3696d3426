"""Tables of the training record for the dashboard and reports (pandas only, no UI).

Every held-out accuracy is shown with chance (1 / number of options) and the share of
the most frequent answer beside it: a model that answers one letter everywhere scores
that letter's share of right answers, which is not knowledge.
"""
from __future__ import annotations

import json

import pandas as pd

__all__ = ["runs_table", "curve_frame", "heldout_table", "CURVES", "CONSTANT_SHARE"]

CURVES = {"reward": "Mean reward (batch)", "accuracy": "Accuracy on the batch", "kl": "KL to the base",
          "loss": "Loss"}
CONSTANT_SHARE = 0.5
"""Above this share of one answer letter the answers are flagged as near constant."""


def runs_table(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per training run, with words for column names."""
    if runs.empty:
        return pd.DataFrame(columns=["Run", "Kind", "Base model", "Data", "Training items", "Steps done",
                                     "Status", "Adapter"])
    steps = [json.loads(s).get("steps") for s in runs["settings_json"]]
    return pd.DataFrame({
        "Run": runs["run_id"], "Kind": runs["kind"], "Base model": runs["base_model"], "Data": runs["data_name"],
        "Training items": runs["n_train"],
        "Steps done": [f"{int(d) if pd.notna(d) else 0} of {s}" for d, s in zip(runs["last_step"], steps)],
        "Status": runs["status"], "Adapter": runs["adapter_file"].fillna(""),
    })


def curve_frame(steps: pd.DataFrame) -> pd.DataFrame:
    """Long format (step, curve, value) of the per-step record, curve names in words."""
    if steps.empty:
        return pd.DataFrame(columns=["step", "curve", "value"])
    long = steps.melt(id_vars=["step"], value_vars=list(CURVES), var_name="curve", value_name="value")
    long["curve"] = long["curve"].map(CURVES)
    return long


def heldout_table(evals: pd.DataFrame) -> pd.DataFrame:
    """Held-out accuracy before (step 0) and after training, beside chance (1 / the
    number of options) and the most frequent answer."""
    cols = ["Held-out set", "Step", "Items", "Accuracy", "Chance", "Most frequent answer", "Its share", "Flag"]
    if evals.empty:
        return pd.DataFrame(columns=cols)
    rows = []
    for r in evals.itertuples():
        k = r.n_options
        flag = "one answer for most items: not knowledge" if r.top_letter_share > CONSTANT_SHARE else ""
        rows.append({"Held-out set": r.split, "Step": "before training" if r.step == 0 else f"after step {r.step}",
                     "Items": r.n_items, "Accuracy": r.n_correct / r.n_items if r.n_items else float("nan"),
                     "Chance": 1.0 / k if k else float("nan"), "Most frequent answer": r.top_letter,
                     "Its share": r.top_letter_share, "Flag": flag})
    return pd.DataFrame(rows, columns=cols)
