"""The rows a SAG store export keeps, read and written to Parquet on one cursor.

:class:`RunSelection` is the reading half of :mod:`sag.runs.store_export`: the chosen
SAG runs (registered on the cursor as a table, never pasted into SQL; all runs when none
are named), the SAG tables holding rows of them, each table's rows written as a zstd
Parquet file (:func:`common.table_export.copy_query`), and the evaluations and runs it
holds.  Open it with :meth:`sag.store.tables.SagStore.export_selection`.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import duckdb
import pandas as pd

from common.export_schema import quote
from common.table_export import copy_query

__all__ = ["CALL_LOG", "EVAL_COST_OF_RUNS", "RunSelection"]

CALL_LOG = "llm_calls"
_CHOSEN = "_export_runs"
# the condition on a row ``r`` of sag_eval_cost that ties it to the chosen runs ({runs}: their
# ids' subquery): an evaluation's costs go with the runs of its parts (common.run_kinds' linked)
EVAL_COST_OF_RUNS = ("EXISTS (SELECT 1 FROM sag_eval_parts p WHERE p.eval_id = r.eval_id "
                     "AND p.group_name = r.group_name AND p.run_id IN ({runs}))")  # the chosen run ids, registered on the export's cursor


class RunSelection:
    """The SAG runs an export keeps (``run_ids``, or every SAG run when None), on ``cur``,
    a cursor of the store the caller closes."""

    def __init__(self, cur: duckdb.DuckDBPyConnection, run_ids: Sequence[str] | None) -> None:
        self.cur = cur
        if run_ids is None:
            self._runs = "SELECT run_id FROM sag_runs"
        else:
            cur.register(_CHOSEN, pd.DataFrame({"run_id": pd.Series(list(run_ids), dtype="object")}))
            self._runs = f"SELECT run_id FROM {_CHOSEN}"

    def _source_rows(self, table: str) -> str:
        """The rows of ``table`` the export keeps: those of the chosen runs; an evaluation's
        costs go with its parts; of the call log, the calls of those runs (a store shared
        with D-CEM runs keeps theirs out)."""
        runs = self._runs
        columns = {str(c) for (c,) in self.cur.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = ?", [table]).fetchall()}
        order = " ORDER BY run_id, created_at, call_id" if table == CALL_LOG else ""
        if "run_id" in columns:
            return f"SELECT * FROM {quote(table)} WHERE run_id IN ({runs}){order}"  # noqa: S608 (stored table names)
        if table == "sag_eval_cost":
            return ("SELECT * FROM sag_eval_cost c WHERE EXISTS (SELECT 1 FROM sag_eval_parts p WHERE "
                    f"p.eval_id = c.eval_id AND p.group_name = c.group_name AND p.run_id IN ({runs}))")
        return f"SELECT * FROM {quote(table)}"  # noqa: S608

    def tables(self) -> list[str]:
        """The SAG tables with rows of the chosen runs, then the call log."""
        names = [str(n) for (n,) in self.cur.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' "
            "AND table_name LIKE 'sag\\_%' ESCAPE '\\' ORDER BY table_name").fetchall()]
        return [n for n in names if self.cur.execute(f"SELECT count(*) FROM ({self._source_rows(n)})").fetchone()[0]] \
            + [CALL_LOG]

    def copy(self, table: str, folder: Path, *, level: int | None = None) -> dict[str, Any]:
        """Write the kept rows of ``table`` as ``<folder>/<table>.parquet``; its manifest entry."""
        return copy_query(self.cur, self._source_rows(table), folder, table, level=level)

    def evaluations(self) -> list[str]:
        """The evaluations with a part answered by a chosen run, sorted."""
        return sorted(str(e) for (e,) in self.cur.execute(
            f"SELECT DISTINCT eval_id FROM sag_eval_parts WHERE run_id IN ({self._runs})").fetchall())  # noqa: S608

    def run_ids(self) -> list[str]:
        """The chosen runs, sorted."""
        return sorted(str(r) for (r,) in self.cur.execute(self._runs).fetchall())
