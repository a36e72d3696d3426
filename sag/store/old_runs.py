"""The rows of the older SAG runs export written into SAG tables (:mod:`sag.runs.old_runs_load`
shapes them; this module holds the SQL)."""
from __future__ import annotations

from typing import Any, Sequence

import pandas as pd

from sag.store.tables import OUTCOME_COLUMNS, SagStore

__all__ = ["write_old_runs", "RUN_COLUMNS", "ITEM_COLUMNS"]

RUN_COLUMNS = ("run_id", "benchmark", "group_name", "method", "config_json", "item_ids", "seed", "created_at",
               "finished_at", "status")
ITEM_COLUMNS = ("run_id", "item_id", "position", "benchmark", "question", "options_json", "answer", "context")


def write_old_runs(store: SagStore, runs: Sequence[Sequence[Any]], items: Sequence[Sequence[Any]],
                   outcomes: pd.DataFrame) -> None:
    """``runs`` (rows of :data:`RUN_COLUMNS`), ``items`` (rows of :data:`ITEM_COLUMNS`) and
    ``outcomes`` (a frame with the outcome columns) into the SAG tables of ``store``, a
    scratch store the one import then merges (no calibration, no code revision)."""
    con = store.con
    con.executemany(f"INSERT INTO sag_runs ({', '.join(RUN_COLUMNS)}) "  # noqa: S608 (fixed names)
                    f"VALUES ({', '.join('?' * len(RUN_COLUMNS))})", [list(r) for r in runs])
    con.executemany(f"INSERT INTO sag_items ({', '.join(ITEM_COLUMNS)}) "  # noqa: S608 (fixed names)
                    f"VALUES ({', '.join('?' * len(ITEM_COLUMNS))})", [list(r) for r in items])
    con.register("_outcomes", outcomes[list(OUTCOME_COLUMNS)])
    try:
        con.execute(f"INSERT INTO sag_outcomes ({', '.join(OUTCOME_COLUMNS)}) "  # noqa: S608 (fixed names)
                    f"SELECT {', '.join(OUTCOME_COLUMNS)} FROM _outcomes")
    finally:
        con.unregister("_outcomes")
