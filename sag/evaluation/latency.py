"""Seconds per item, also for items whose turns were answered from the call log.

An item's wall time (``sag_outcomes.seconds``) is measured while it is played.  A turn
answered from the call log takes no model time then, so an item with such turns would
look faster than it is, and a group whose every item reused some turns (a group that
shares its round 0 with an earlier one, say) would have no honest time at all.  The
latency of an item is therefore its wall time with each turn counted at the time its
model call took when it was made:

- a *step* is the turns one model played together: one item, round, phase and model;
- every stored turn keeps a duration: its own when it reached a model, the original
  call's (as the call log stored it) when it was answered from the log;
- the runners the evaluation uses time every turn of a step from the step's start (the
  batched llama.cpp runner) or run its turns at once (a server fleet), so a step lasts as
  long as its longest turn;
- latency = wall time + the sum over steps of (longest duration of all the step's
  turns - longest duration of those that reached a model this time, 0 if none did).

An item with no turn from the log keeps its wall time.  A step answered wholly from the
log adds its original time; a step partly answered from it adds only what its longest
logged turn took beyond the turns run now.  With the one-after-another runner
(``batched`` off) a step's turns add up instead, so there a logged step is undercounted.
"""
from __future__ import annotations

import pandas as pd

__all__ = ["item_latencies", "STEP"]

STEP = ("run_id", "item_id", "round", "phase", "model")  # the turns one model played together


def item_latencies(outcomes: pd.DataFrame, messages: pd.DataFrame) -> pd.Series:
    """Latency in seconds of every outcome (module docstring), in the order of ``outcomes``.

    ``outcomes`` needs ``run_id``, ``item_id`` and ``seconds``; ``messages`` the columns
    of :data:`STEP`, ``cached`` and ``duration_s``."""
    seconds = outcomes["seconds"].astype(float).reset_index(drop=True)
    if messages.empty:
        return seconds
    turns = messages[list(STEP) + ["cached", "duration_s"]].copy()
    turns[["run_id", "item_id"]] = turns[["run_id", "item_id"]].astype(str)
    turns["fresh_s"] = turns["duration_s"].where(~turns["cached"].astype(bool), 0.0)
    steps = turns.groupby(list(STEP), sort=False).agg(all_s=("duration_s", "max"), fresh_s=("fresh_s", "max"))
    steps["added"] = (steps["all_s"] - steps["fresh_s"]).clip(lower=0.0)
    added = steps.groupby(level=["run_id", "item_id"], sort=False)["added"].sum()
    keys = pd.MultiIndex.from_frame(outcomes[["run_id", "item_id"]].astype(str))
    return seconds + added.reindex(keys).fillna(0.0).to_numpy()
