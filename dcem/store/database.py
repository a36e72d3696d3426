"""DuckDB store for experiment runs, cases, per-round traces, outcomes and metrics.

The database file is :func:`common.db.default_db_path` unless a path is given.  A
(scenario, seed) cell is written in a single transaction, so an interrupted run keeps
every finished cell and never stores half of one; re-running skips the finished cells.
All SQL uses ``?`` parameters.
"""
from __future__ import annotations

import datetime as _dt
import json
import logging
import os
from typing import Any

import duckdb
import numpy as np
import pandas as pd

from common.db import Database, StoreError, default_db_path, git_revision
from common.ledger import MIGRATIONS as LEDGER_MIGRATIONS, PACKAGE as LEDGER, Ledger, table_mirror
from common.migrations import migrate
from common.resume import check_resume
from common.transactions import run_in_transaction
from dcem.core.config import MediatorConfig
from dcem.core.panel import Panel
from dcem.core.results import ScenarioResult
from dcem.store.cell_frames import cell_frames
from dcem.store.migrations import MIGRATIONS, PACKAGE

__all__ = ["Store", "StoreError", "default_db_path", "git_revision", "StoredCell", "write_cell"]

log = logging.getLogger(__name__)

_RESUME_HINT = ("repeat the command that started it to resume it, or run these settings under another run id "
                "or in another store")


def _now() -> _dt.datetime:
    return _dt.datetime.now()


def write_cell(cur: duckdb.DuckDBPyConnection, run_id: str, result: ScenarioResult) -> None:
    """One finished cell's rows (cases, traces, outcomes, metrics, ablation, the cell), on
    ``cur``, inside the caller's transaction."""
    for name, frame in cell_frames(run_id, result).items():
        if frame.empty:
            continue
        cur.register("_frame", frame)
        cols = ", ".join(frame.columns)
        cur.execute(f"INSERT INTO {name} ({cols}) SELECT {cols} FROM _frame")  # noqa: S608 (fixed names)
        cur.unregister("_frame")
    p = result.panel
    cur.execute(
        "INSERT INTO cells (run_id, scenario, seed, labels, confusion, prior, loss, high_risk, "
        "config_json, info_json, finished_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [run_id, result.scenario, int(result.seed), list(p.labels), p.confusion.tolist(),
         p.prior.tolist(), p.loss.tolist(), [int(i) for i in result.high_risk],
         json.dumps(result.config.to_dict(), sort_keys=True),
         json.dumps(result.info, sort_keys=True, default=float), _now()])


_MIRROR = table_mirror("runs")  # the ledger keeps runs.status in step


class StoredCell:
    """A stored (scenario, seed) cell, ready for re-scoring.

    Attributes: run_id, scenario, seed, panel, config, high_risk, info, case_ids (N,),
    truth (N,), and ``reports`` mapping method -> int array (N, T, A).
    """

    def __init__(self, run_id: str, scenario: str, seed: int, panel: Panel, config: MediatorConfig,
                 high_risk: tuple[int, ...], info: dict[str, Any], case_ids: list[str],
                 truth: np.ndarray, reports: dict[str, np.ndarray]) -> None:
        self.run_id, self.scenario, self.seed = run_id, scenario, seed
        self.panel, self.config, self.high_risk, self.info = panel, config, high_risk, info
        self.case_ids, self.truth, self.reports = case_ids, truth, reports


class Store(Database):
    """The D-CEM tables of the project's DuckDB file; use as a context manager."""

    def __init__(self, path: str | os.PathLike[str] | None = None, *, read_only: bool = False,
                 create: bool = True) -> None:
        super().__init__(path, read_only=read_only, create=create)
        if not read_only:
            migrate(self.con, PACKAGE, MIGRATIONS)
            migrate(self.con, LEDGER, LEDGER_MIGRATIONS)  # the run ledger its runs go through

    def session(self) -> "Store":
        """A view of the same store on its own cursor, for use from another thread."""
        view = super().session()
        assert isinstance(view, Store)
        return view

    def __enter__(self) -> "Store":
        return self

    # ----------------------------------------------------------------- runs
    def ensure_run(self, run_id: str, *, kind: str, spec: dict[str, Any], config: MediatorConfig,
                   seeds: list[int]) -> bool:
        """Create the run if new; return True when it already existed (a resume).

        A run stored with another kind, spec, mediator config or seeds is refused before
        anything is written (:class:`common.resume.ResumeRefused`, naming the first field
        that differs)."""
        if self.check_settings(run_id, kind=kind, spec=spec, config=config, seeds=seeds):
            self.con.execute("UPDATE runs SET status = 'running', finished_at = NULL WHERE run_id = ? "
                             "AND status <> 'finished'", [run_id])
            return True
        self.con.execute(
            "INSERT INTO runs (run_id, kind, spec_json, config_json, seeds, git_revision, created_at, "
            "finished_at, status) VALUES (?, ?, ?, ?, ?, ?, ?, NULL, 'running')",
            [run_id, kind, json.dumps(spec, sort_keys=True), json.dumps(config.to_dict(), sort_keys=True),
             list(seeds), git_revision(), _now()],
        )
        return False

    def check_settings(self, run_id: str, *, kind: str, spec: dict[str, Any], config: MediatorConfig,
                       seeds: list[int]) -> bool:
        """True when the run is stored (a resume), False when it is new; reads only.  A run
        stored with another kind, spec, mediator config or seeds is refused
        (:class:`common.resume.ResumeRefused`, naming the first field that differs)."""
        row = self.con.execute("SELECT kind, spec_json, config_json, seeds FROM runs WHERE run_id = ?",
                               [run_id]).fetchone()
        if row is None:
            return False
        for stored, given in (({"kind": row[0]}, {"kind": kind}), (json.loads(row[1]), spec),
                              ({"config": json.loads(row[2]), "seeds": list(row[3])},
                               {"config": config.to_dict(), "seeds": list(seeds)})):
            check_resume(f"run {run_id}", stored, given, hint=_RESUME_HINT)
        return True

    def ledger(self) -> Ledger:
        """The store's run ledger (:mod:`common.ledger`), which keeps ``runs.status`` in step:
        a grid's start, cells, finish and failure go through it (:func:`dcem.store.grid.run_grid`)."""
        return Ledger(self, mirror=_MIRROR)

    def save_cell_failure(self, run_id: str, scenario: str, seed: int, message: str) -> None:
        self.con.execute("INSERT INTO cell_failures VALUES (?, ?, ?, ?, ?)", [run_id, scenario, int(seed), message,
                                                                              _now()])

    def cell_failures(self, run_id: str) -> pd.DataFrame:
        """The failures of cells still missing from the run (newest message per cell)."""
        return self.con.execute(
            "SELECT scenario, seed, arg_max(message, failed_at) AS message, max(failed_at) AS failed_at "
            "FROM cell_failures f WHERE run_id = ? AND NOT EXISTS (SELECT 1 FROM cells c WHERE c.run_id = f.run_id "
            "AND c.scenario = f.scenario AND c.seed = f.seed) GROUP BY scenario, seed ORDER BY scenario, seed",
            [run_id]).df()

    def runs(self) -> pd.DataFrame:
        """All runs, newest first."""
        return self.con.execute(
            "SELECT run_id, kind, status, seeds, git_revision, created_at, finished_at, spec_json "
            "FROM runs ORDER BY created_at DESC").df()

    def holds_runs(self) -> bool:
        """Whether the file holds at least one D-CEM run (False when it has no ``runs``
        table: a store opened read-only before D-CEM ever wrote to it)."""
        has_table = self.con.execute("SELECT count(*) FROM information_schema.tables "
                                     "WHERE table_name = 'runs'").fetchone()[0]
        return bool(has_table) and bool(self.con.execute("SELECT count(*) FROM runs").fetchone()[0])

    def latest_run(self, kind: str | None = None) -> str:
        """Id of the newest run (of ``kind`` if given) that has at least one cell."""
        row = self.con.execute(
            "SELECT r.run_id FROM runs r WHERE (? IS NULL OR r.kind = ?) AND EXISTS "
            "(SELECT 1 FROM cells c WHERE c.run_id = r.run_id) ORDER BY r.created_at DESC LIMIT 1",
            [kind, kind]).fetchone()
        if row is None:
            first = "python -m dcem_clinical run" if kind == "clinical" else "python -m dcem run synthetic"
            raise StoreError(f"no stored {kind + ' ' if kind else ''}runs in {self.path}; run `{first}` first")
        return str(row[0])

    def check_run(self, run_id: str, con: duckdb.DuckDBPyConnection | None = None) -> None:
        """StoreError unless the run exists (read through ``con``, a cursor, when given)."""
        row = (con or self.con).execute("SELECT 1 FROM runs WHERE run_id = ?", [run_id]).fetchone()
        if row is None:
            raise StoreError(f"no run {run_id!r} in {self.path}")

    def done_cells(self, run_id: str) -> set[tuple[str, int]]:
        rows = self.con.execute("SELECT scenario, seed FROM cells WHERE run_id = ?", [run_id]).fetchall()
        return {(str(s), int(k)) for s, k in rows}

    # ---------------------------------------------------------------- write
    def save_cell(self, run_id: str, result: ScenarioResult) -> None:
        """Store one finished cell atomically (cases, traces, outcomes, metrics, ablation)."""
        run_in_transaction(self, lambda cur: write_cell(cur, run_id, result))

    # ----------------------------------------------------------------- read
    def metrics(self, run_id: str) -> pd.DataFrame:
        return self.con.execute(
            "SELECT scenario, seed, method, metric, value FROM metrics WHERE run_id = ? "
            "ORDER BY scenario, seed, method, metric", [run_id]).df()

    def ablation(self, run_id: str) -> pd.DataFrame:
        return self.con.execute(
            "SELECT scenario, seed, xi, horizon, metric, value FROM ablation WHERE run_id = ? "
            "ORDER BY scenario, xi, horizon, seed", [run_id]).df()

    def traces(self, run_id: str, case_id: str, method: str) -> pd.DataFrame:
        return self.con.execute(
            "SELECT * FROM traces WHERE run_id = ? AND case_id = ? AND method = ? ORDER BY round",
            [run_id, case_id, method]).df()

    def outcomes(self, run_id: str, method: str | None = None) -> pd.DataFrame:
        return self.con.execute(
            "SELECT o.*, c.scenario, c.seed FROM outcomes o JOIN cases c USING (run_id, case_id) "
            "WHERE o.run_id = ? AND (? IS NULL OR o.method = ?) ORDER BY o.case_id, o.method",
            [run_id, method, method]).df()

    def load_cell(self, run_id: str, scenario: str, seed: int) -> StoredCell:
        """Everything needed to re-score a stored cell without calling any agent."""
        row = self.con.execute(
            "SELECT labels, confusion, prior, loss, high_risk, config_json, info_json FROM cells "
            "WHERE run_id = ? AND scenario = ? AND seed = ?", [run_id, scenario, seed]).fetchone()
        if row is None:
            raise StoreError(f"run {run_id!r} has no cell {scenario}/seed {seed}")
        labels, confusion, prior, loss, high, cfg_json, info_json = row
        panel = Panel(tuple(labels), np.array(confusion), np.array(prior), np.array(loss))
        cases = self.con.execute(
            "SELECT case_id, truth FROM cases WHERE run_id = ? AND scenario = ? AND seed = ? ORDER BY case_id",
            [run_id, scenario, seed]).fetchall()
        case_ids = [c for c, _ in cases]
        rep = self.con.execute(
            "SELECT t.method, t.case_id, t.round, t.reports FROM traces t JOIN cases c USING (run_id, case_id) "
            "WHERE t.run_id = ? AND c.scenario = ? AND c.seed = ? ORDER BY t.method, t.case_id, t.round",
            [run_id, scenario, seed]).df()
        reports: dict[str, np.ndarray] = {}
        for method, group in rep.groupby("method", sort=False):
            n_rounds = int(group["round"].max())
            arr = np.stack([np.asarray(r, dtype=np.int64) for r in group["reports"]])
            reports[str(method)] = arr.reshape(len(case_ids), n_rounds, -1)
        return StoredCell(run_id, scenario, int(seed), panel,
                          MediatorConfig.from_mapping(json.loads(cfg_json)), tuple(int(h) for h in high),
                          json.loads(info_json), case_ids, np.array([t for _, t in cases]), reports)
