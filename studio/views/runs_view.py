"""The Runs page's view-model: every run of every kind in the store, from the ledger
(:mod:`common.ledger`), each with the page that shows its kind in detail
(:mod:`common.run_kinds`).  No Streamlit here."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Mapping

import pandas as pd

from common.db import Database
from common.ledger import Ledger
from common.run_kinds import RunKind, describe_run

__all__ = ["PAGE_FILES", "RunDetail", "runs_table", "run_detail", "kind_counts"]

# a kind's page (RunKind.page) -> its script, as app.py registers it
PAGE_FILES = {"Overview": "pages/overview.py", "Experiments": "pages/experiments.py",
              "Agent group": "pages/agent_group.py", "Group evaluation": "pages/sag_evaluation.py",
              "Models": "pages/models.py"}
COLUMNS = ["Run", "Kind", "Status", "Units done", "Units failed", "Created", "Finished", "What it is", "Shown on"]


def runs_table(db: Database, kinds: Mapping[str, RunKind], kind: str | None = None) -> pd.DataFrame:
    """One row per run (of ``kind`` when given), newest first."""
    runs = Ledger(db).runs(kind)
    rows = [[str(r.run_id), str(r.kind), str(r.status), int(r.done), int(r.failed), r.created_at,
             None if pd.isna(r.finished_at) else r.finished_at,
             describe_run(kinds, str(r.kind), json.loads(str(r.spec_json))),
             kinds[str(r.kind)].page if str(r.kind) in kinds else ""] for r in runs.itertuples(index=False)]
    return pd.DataFrame(rows, columns=COLUMNS)


def kind_counts(table: pd.DataFrame) -> dict[str, int]:
    """Runs per kind, in name order."""
    return {str(k): int(n) for k, n in sorted(table["Kind"].value_counts().items())}


@dataclass(frozen=True)
class RunDetail:
    """One run for the page: its ledger row, its failed units (key, message) and its spec."""

    run_id: str
    kind: str
    status: str
    done: int
    failed: int
    page: str | None
    page_file: str | None
    spec_text: str
    failures: list[tuple[str, str]]
    status_line: str


def _status_line(status: str, done: int, failed: int) -> str:
    if status == "finished":
        return f"Finished: all {done} units stored."
    if status == "failed":
        return (f"Ended with {failed} failed unit(s) and {done} stored; running the same command again retries "
                "the failed ones.")
    if status == "stopped":
        return f"Stopped on purpose after {done} units; the same command resumes it."
    return (f"Not finished: {done} units stored so far. It is running now, or it was stopped before it could say "
            "so; the same command resumes it.")


def run_detail(db: Database, kinds: Mapping[str, RunKind], run_id: str, max_failures: int = 50) -> RunDetail:
    """Run ``run_id`` as :class:`RunDetail` (:class:`common.db.StoreError` for an unknown run)."""
    ledger = Ledger(db)
    run = ledger.run(run_id)
    units = ledger.units(run_id)
    failed = units[units["state"] == "failed"].head(max_failures)
    kind: Any = kinds.get(run.kind)
    page = kind.page if kind is not None else None
    return RunDetail(run.run_id, run.kind, run.status, run.done, run.failed, page, PAGE_FILES.get(page or ""),
                     json.dumps(run.spec, indent=1, sort_keys=True),
                     [(str(u.unit_key), str(u.message)) for u in failed.itertuples(index=False)],
                     _status_line(run.status, run.done, run.failed))
