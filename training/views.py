"""Tables of the training record for the dashboard and reports (pandas only, no UI).

Every held-out accuracy is shown with chance (1 / number of options) and the share of
the most frequent answer beside it: a model that answers one letter everywhere scores
that letter's share of right answers, which is not knowledge.
"""
from __future__ import annotations

import json

import numpy as np
import pandas as pd

from common.intervals import paired_bootstrap, wilson_interval

__all__ = ["runs_table", "curve_frame", "heldout_table", "paired_table", "before_after", "best_constant",
           "CURVES", "CONSTANT_SHARE"]

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
        "Steps done": [_done(d, s) for d, s in zip(runs["last_step"], steps)],
        "Status": runs["status"], "Adapter": runs["adapter_file"].fillna(""),
    })


def _done(done: object, budget: object) -> str:
    """Steps done, and of how many where the run recorded its budget (runs recorded since
    the budget stopped being part of a run's settings do not: it may be raised or lowered)."""
    count = int(done) if pd.notna(done) else 0  # type: ignore[arg-type]
    return f"{count} of {budget}" if budget else str(count)


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
    cols = ["Held-out set", "Step", "Items", "Accuracy", "95 % interval", "Chance", "Most frequent answer",
            "Its share", "Flag"]
    if evals.empty:
        return pd.DataFrame(columns=cols)
    rows = []
    for r in evals.itertuples():
        k = r.n_options
        flag = "one answer for most items: not knowledge" if r.top_letter_share > CONSTANT_SHARE else ""
        low, high = wilson_interval(int(r.n_correct), int(r.n_items))
        rows.append({"Held-out set": r.split, "Step": "before training" if r.step == 0 else f"after step {r.step}",
                     "Items": r.n_items, "Accuracy": r.n_correct / r.n_items if r.n_items else float("nan"),
                     "95 % interval": f"{low:.3f} to {high:.3f}" if r.n_items else "",
                     "Chance": 1.0 / k if k else float("nan"), "Most frequent answer": r.top_letter,
                     "Its share": r.top_letter_share, "Flag": flag})
    return pd.DataFrame(rows, columns=cols)


def paired_table(answers: pd.DataFrame, rng: np.random.Generator, *, resamples: int = 10_000) -> pd.DataFrame:
    """Per held-out set: accuracy before training (step 0) and after (the last step), their
    difference on the same items and its 95 % paired bootstrap interval, and whether the
    interval excludes zero.  Empty when the per-item answers are not stored."""
    cols = ["Held-out set", "Items", "Before", "After", "Difference", "95 % interval", "Excludes 0",
            "Best single letter"]
    if answers.empty:
        return pd.DataFrame(columns=cols)
    rows = []
    for split, part in answers.groupby("split", sort=True):
        last = int(part["step"].max())
        if last == 0:
            continue
        wide, before, after = before_after(part, last)
        if wide.empty:
            continue
        diff, low, high = paired_bootstrap(before, after, rng, resamples=resamples)
        letter, share = best_constant(part[part["item_id"].isin(wide.index)])
        rows.append({"Held-out set": split, "Items": len(wide), "Before": float(before.mean()),
                     "After": float(after.mean()), "Difference": diff, "95 % interval": f"{low:+.3f} to {high:+.3f}",
                     "Excludes 0": "yes" if low > 0 or high < 0 else "no",
                     "Best single letter": f"{letter} always: {share:.3f}"})
    return pd.DataFrame(rows, columns=cols)


def best_constant(part: pd.DataFrame) -> tuple[str, float]:
    """The letter that is the right answer most often among a held-out set's items, and
    the accuracy of answering it to every item: what a constant answer can reach."""
    truth = part.drop_duplicates("item_id")["truth"]
    if truth.empty:
        return "", float("nan")
    counts = truth.value_counts()
    best = counts[counts == counts.max()].index.min()
    return str(best), float(counts.max() / len(truth))


def before_after(part: pd.DataFrame, last: int) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """One held-out set's answers as (answers by item and step, right before, right after):
    the items answered both at step 0 and at step ``last``."""
    wide = part[part["step"].isin([0, last])].pivot(index="item_id", columns="step", values="answer").dropna()
    truth = part.drop_duplicates("item_id").set_index("item_id")["truth"].reindex(wide.index)
    return wide, (wide[0] == truth).to_numpy(), (wide[last] == truth).to_numpy()
