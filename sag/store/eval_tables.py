"""The evaluation suite's bookkeeping in the SAG store: which run answered which part of
which evaluation for which group, and each group's measured memory.

An evaluation (``eval_id``, e.g. ``core-n10-c5``) is a suite on a number of items; each
(group, part) pair points at one SAG run in ``sag_runs``.  Memory is the largest peak
RSS of any segment of the evaluation that loaded the group's models (a resumed segment
that answered everything from the call log loads nothing and measures nothing).
"""
from __future__ import annotations

import datetime as _dt
import json
from typing import Any

import pandas as pd

from common.transactions import cursor, run_in_transaction
from sag.store.tables import SagStore

__all__ = ["record_part", "part_settings", "eval_parts", "record_cost", "eval_costs", "evaluations", "run_messages"]


def record_part(store: SagStore, *, eval_id: str, group: str, part: str, metric: str, run_id: str,
                spec: dict[str, Any], config: dict[str, Any], extra: dict[str, Any], position: int) -> None:
    """Point (eval, group, part) at ``run_id`` (replacing an older pointer)."""
    def work(cur: Any) -> None:
        cur.execute("DELETE FROM sag_eval_parts WHERE eval_id = ? AND group_name = ? AND part = ?",
                    [eval_id, group, part])
        cur.execute("INSERT INTO sag_eval_parts (eval_id, group_name, part, metric, run_id, spec_json, config_json, "
                    "extra_json, position, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [eval_id, group, part, metric, run_id, json.dumps(spec, sort_keys=True),
                     json.dumps(config, sort_keys=True), json.dumps(extra, sort_keys=True), position,
                     _dt.datetime.now()])
    run_in_transaction(store, work)


def part_settings(store: SagStore, eval_id: str, group: str) -> dict[str, dict[str, Any]]:
    """The settings stored with each part of (eval, group): part -> {"spec": ..., "config": ...}."""
    with cursor(store) as cur:
        rows = cur.execute("SELECT part, spec_json, config_json FROM sag_eval_parts WHERE eval_id = ? AND "
                           "group_name = ?", [eval_id, group]).fetchall()
    return {part: {"spec": json.loads(spec), "config": json.loads(config)} for part, spec, config in rows}


def eval_parts(store: SagStore, eval_id: str) -> pd.DataFrame:
    """The parts of one evaluation with each run's answered items, in run order."""
    with cursor(store) as cur:
        return cur.execute(
            "SELECT p.*, len(r.item_ids) AS items, (SELECT count(*) FROM sag_outcomes o WHERE o.run_id = p.run_id) "
            "AS answered FROM sag_eval_parts p JOIN sag_runs r USING (run_id) WHERE p.eval_id = ? "
            "ORDER BY p.group_name, p.position", [eval_id]).df()


def evaluations(store: SagStore) -> pd.DataFrame:
    """Every evaluation: groups, parts, items stored of items asked, newest first."""
    with cursor(store) as cur:
        return cur.execute(
            "SELECT p.eval_id, count(DISTINCT p.group_name) AS groups, count(*) AS parts, "
            "sum(len(r.item_ids)) AS items, "
            "sum((SELECT count(*) FROM sag_outcomes o WHERE o.run_id = p.run_id)) AS answered, "
            "max(p.created_at) AS last_change FROM sag_eval_parts p JOIN sag_runs r USING (run_id) "
            "GROUP BY p.eval_id ORDER BY last_change DESC").df()


def record_cost(store: SagStore, *, eval_id: str, group: str, peak_rss_mb: float, weights: dict[str, Any]) -> None:
    """Keep the larger of the stored and the new peak RSS of (eval, group)."""
    def work(cur: Any) -> None:
        row = cur.execute("SELECT peak_rss_mb FROM sag_eval_cost WHERE eval_id = ? AND group_name = ?",
                          [eval_id, group]).fetchone()
        if row is not None and row[0] >= peak_rss_mb:
            return
        cur.execute("DELETE FROM sag_eval_cost WHERE eval_id = ? AND group_name = ?", [eval_id, group])
        cur.execute("INSERT INTO sag_eval_cost VALUES (?, ?, ?, ?, ?)",
                    [eval_id, group, float(peak_rss_mb), json.dumps(weights, sort_keys=True), _dt.datetime.now()])
    run_in_transaction(store, work)


def eval_costs(store: SagStore, eval_id: str) -> dict[str, dict[str, Any]]:
    """group -> {"peak_rss_mb": ..., "weights": {...}}."""
    with cursor(store) as cur:
        rows = cur.execute("SELECT group_name, peak_rss_mb, weights_json FROM sag_eval_cost WHERE eval_id = ?",
                           [eval_id]).fetchall()
    return {g: {"peak_rss_mb": float(rss), "weights": json.loads(w)} for g, rss, w in rows}


def run_messages(store: SagStore, run_id: str) -> pd.DataFrame:
    """Every message of a run, by item and turn order."""
    with cursor(store) as cur:
        return cur.execute("SELECT * FROM sag_messages WHERE run_id = ? ORDER BY item_id, seq", [run_id]).df()
