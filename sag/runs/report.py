"""Summaries of stored SAG runs: accuracy with a 95 % interval, rounds, calls, tokens, time.

Accuracy counts REFUSE and ESCALATE as not correct (the item was not answered); the
interval is Wilson's score interval at 95 %.  Items whose model call failed have no answer
at all: they are counted apart (``failed``) and in no rate.  Refusal and escalation rates are reported
beside it, so a group that hands items to a human is not mistaken for one that errs.
:func:`sag_run_report_text` is what ``python -m sag report --run RUN`` prints for one stored run.
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import pandas as pd

from common.db import StoreError
from common.intervals import Z95, wilson_interval

if TYPE_CHECKING:
    from sag.store.tables import SagStore

__all__ = ["wilson_interval", "summarise", "format_table", "sag_run_report_text", "Z95"]

_KEYS = ["benchmark", "group_name", "method", "run_id"]


def summarise(outcomes: pd.DataFrame, failures: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per (benchmark, group, method, run): answered items, accuracy and its
    interval over them, refusal and escalation rates, mean rounds, model calls, tokens and
    seconds per item, and ``failed``: items that got no answer because a model call failed
    (never counted as answers; a run with only failed items has no accuracy, NaN).

    ``outcomes`` is :meth:`sag.store.tables.SagStore.outcomes`, ``failures``
    :meth:`~sag.store.tables.SagStore.failures`.
    """
    columns = ["benchmark", "group", "method", "run_id", "items", "accuracy", "ci_low", "ci_high", "refused",
               "escalated", "rounds", "calls_per_item", "tokens_per_item", "seconds_per_item", "failed"]
    failed = (failures.groupby(_KEYS, sort=False).size().to_dict()
              if failures is not None and not failures.empty else {})
    rows = []
    for key, g in outcomes.groupby(_KEYS, sort=False) if not outcomes.empty else ():
        n, right = len(g), int(g["correct"].sum())
        low, high = wilson_interval(right, n)
        calls = g["model_calls"] + g["cached_calls"]
        rows.append([*key, n, right / n, low, high, float(g["refused"].mean()),
                     float(g["escalated"].mean()), float(g["rounds"].mean()), float(calls.mean()),
                     float((g["prompt_tokens"] + g["completion_tokens"]).mean()), float(g["seconds"].mean()),
                     int(failed.pop(key, 0))])
    nan = float("nan")
    rows.extend([*key, 0, nan, nan, nan, nan, nan, nan, nan, nan, nan, int(n)] for key, n in failed.items())
    return pd.DataFrame(rows, columns=columns)


def format_table(summary: pd.DataFrame) -> str:
    """A fixed-width text table of :func:`summarise` for the terminal."""
    if summary.empty:
        return "No SAG outcomes stored yet: run `python -m sag run --benchmark medqa --group sag-6 --items 20`."
    lines = [f"{'benchmark':<16} {'group':<16} {'items':>5} {'accuracy (95% CI)':>22} {'refused':>8} "
             f"{'escal.':>7} {'rounds':>6} {'calls/it':>8} {'tok/it':>8} {'s/it':>7} {'failed':>6}"]
    for r in summary.itertuples(index=False):
        if not r.items:
            lines.append(f"{r.benchmark[:16]:<16} {r.group[:16]:<16} {0:>5} {'no answered item':>22} "
                         f"{'-':>8} {'-':>7} {'-':>6} {'-':>8} {'-':>8} {'-':>7} {r.failed:>6}")
            continue
        acc = f"{r.accuracy:.3f} ({r.ci_low:.3f}-{r.ci_high:.3f})"
        lines.append(f"{r.benchmark[:16]:<16} {r.group[:16]:<16} {r.items:>5} {acc:>22} {r.refused:>8.3f} "
                     f"{r.escalated:>7.3f} {r.rounds:>6.2f} {r.calls_per_item:>8.1f} {r.tokens_per_item:>8.0f} "
                     f"{r.seconds_per_item:>7.2f} {r.failed:>6}")
    if summary["failed"].sum():
        lines.append("items: answered items; failed: items with no answer because a model call failed (not counted "
                     "in any rate; run the same command again to retry them)")
    return "\n".join(lines)


def sag_run_report_text(store: SagStore, run_id: str) -> str:
    """What ``python -m sag report --run RUN_ID`` prints for the stored SAG run (the
    :func:`format_table` of its :func:`summarise` row), final newline included; StoreError
    for a run id the SAG tables do not hold and for a run with no item answered or failed yet."""
    store.run_config(run_id)  # an unknown run id is an error
    outcomes, failures = store.outcomes(run_id), store.failures(run_id)
    if outcomes.empty and failures.empty:
        raise StoreError(f"run {run_id} has no answered items yet")
    return format_table(summarise(outcomes, failures)) + "\n"
