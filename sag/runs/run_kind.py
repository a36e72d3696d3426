"""The ``sag`` kind of run (:mod:`common.run_kinds`): a Small Agent Group answering a
benchmark's items (``python -m sag run``, and each group of ``python -m sag eval``), with
every debate and its call log."""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

from common.run_kinds import RunKind, register
from sag.runs.store_export import FORMAT, load_store_export
from sag.runs.old_runs_load import load_old_runs_export
from sag.runs.run_export import FORMAT as RUNS_FORMAT
from sag.store.export_rows import EVAL_COST_OF_RUNS
from sag.store.merge_checks import sag_store_checks
from sag.store.tables import SagStore

__all__ = ["SAG", "SAG_TABLES"]

SAG_TABLES = ("sag_runs", "sag_items", "sag_messages", "sag_outcomes", "sag_mediator", "sag_failures",
              "sag_eval_parts", "llm_calls")


def _describe(spec: Mapping[str, Any]) -> str:
    config = spec.get("config") or {}
    return f"{config.get('name', '?')} on {spec.get('benchmark', '?')}, {len(spec.get('items') or [])} items"


def _report(path: Path, run_id: str) -> str:
    from sag.runs.report import sag_run_report_text

    with SagStore(path, read_only=True) as store:
        return sag_run_report_text(store, run_id)


SAG = register(RunKind(
    "sag", "a Small Agent Group debating a benchmark's items", "Agent group", SAG_TABLES, SagStore,
    sag_store_checks, _report, describe=_describe, linked={"sag_eval_cost": EVAL_COST_OF_RUNS},
    imports={FORMAT: load_store_export, RUNS_FORMAT: load_old_runs_export}))
