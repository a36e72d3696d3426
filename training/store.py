"""The training record in the project's DuckDB file: runs, per-step curves, evaluations.

A run row holds the settings (JSON), the base model key, the training data's name and
hash, and once finished the adapter file's path and sha256.  ``train_steps`` has one row
per optimiser step (loss, mean reward, accuracy on the batch, KL to the reference, the
share of clipped ratios, items, tokens and wall time); ``train_evals`` the held-out
measurements.  A resumed run first drops the steps after its last checkpoint (they are
done again), so the curve never shows a step twice.
"""
from __future__ import annotations

import datetime as _dt
import json
from dataclasses import dataclass
from typing import Any

import duckdb
import pandas as pd

import os
from pathlib import Path
from typing import Callable, Sequence, TypeVar

from common.db import Database, StoreError, default_db_path, retry_busy
from common.ledger import MIGRATIONS as LEDGER_MIGRATIONS, PACKAGE as LEDGER, Ledger
from common.transactions import run_in_transaction
from common.migrations import Migration, migrate
from common.resume import check_resume

__all__ = ["TrainingStore", "TrainingRecorder", "StepRow", "MIGRATIONS", "PACKAGE", "RUN_STATUSES", "RUN_COLUMNS",
           "TABLE_COLUMNS"]

PACKAGE = "training"
RUN_COLUMNS = ("run_id", "kind", "method", "base_model", "settings_json", "data_name", "data_hash", "n_train",
               "status", "created_at", "finished_at", "adapter_file", "adapter_sha256")
TABLE_COLUMNS = {"steps": ("step", "loss", "reward", "accuracy", "kl", "clipped_share", "items", "tokens", "seconds"),
                 "evals": ("step", "split", "n_items", "n_correct", "n_options", "top_letter", "top_letter_share"),
                 "answers": ("step", "split", "item_id", "answer", "truth")}
"""The columns of each run table after ``run_id`` (an export's table of that name)."""
RUN_STATUSES = ("running", "stopped", "finished")
_RESUME_HINT = "repeat the command that started it to resume it, or train these settings in another store (--db)"

_M001 = [
    """CREATE TABLE train_runs (
        run_id VARCHAR PRIMARY KEY,
        kind VARCHAR NOT NULL,
        method VARCHAR NOT NULL,
        base_model VARCHAR NOT NULL,
        settings_json VARCHAR NOT NULL,
        data_name VARCHAR NOT NULL,
        data_hash VARCHAR NOT NULL,
        n_train INTEGER NOT NULL,
        status VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL,
        finished_at TIMESTAMP,
        adapter_file VARCHAR,
        adapter_sha256 VARCHAR
    )""",
    """CREATE TABLE train_steps (
        run_id VARCHAR NOT NULL,
        step INTEGER NOT NULL,
        loss DOUBLE NOT NULL,
        reward DOUBLE NOT NULL,
        accuracy DOUBLE NOT NULL,
        kl DOUBLE NOT NULL,
        clipped_share DOUBLE NOT NULL,
        items INTEGER NOT NULL,
        tokens INTEGER NOT NULL,
        seconds DOUBLE NOT NULL,
        PRIMARY KEY (run_id, step)
    )""",
    """CREATE TABLE train_evals (
        run_id VARCHAR NOT NULL,
        step INTEGER NOT NULL,
        split VARCHAR NOT NULL,
        n_items INTEGER NOT NULL,
        n_correct INTEGER NOT NULL,
        n_options INTEGER NOT NULL,
        top_letter VARCHAR NOT NULL,
        top_letter_share DOUBLE NOT NULL,
        PRIMARY KEY (run_id, step, split)
    )""",
]
_M002 = [
    """CREATE TABLE train_answers (
        run_id VARCHAR NOT NULL,
        step INTEGER NOT NULL,
        split VARCHAR NOT NULL,
        item_id VARCHAR NOT NULL,
        answer VARCHAR NOT NULL,
        truth VARCHAR NOT NULL,
        PRIMARY KEY (run_id, step, split, item_id)
    )""",
]
MIGRATIONS: list[Migration] = [("001_train_runs_steps_evals", _M001), ("002_train_answers", _M002)]


@dataclass(frozen=True)
class StepRow:
    step: int
    loss: float
    reward: float
    accuracy: float
    kl: float
    clipped_share: float
    items: int
    tokens: int
    seconds: float


class TrainingStore(Database):
    """The training tables (migrated on open)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not self.read_only:
            migrate(self.con, PACKAGE, MIGRATIONS)
            migrate(self.con, LEDGER, LEDGER_MIGRATIONS)  # the run ledger its runs go through

    def _has_tables(self) -> bool:
        return bool(self.con.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = 'train_runs'").fetchone()[0])

    def ledger(self) -> Ledger:
        """The store's run ledger (:mod:`common.ledger`): a run's start, steps, stop and finish
        go through it, and it keeps ``train_runs.status`` and ``finished_at`` in step."""
        return Ledger(self, mirror=_mirror_status)

    def start_run(self, run_id: str, *, kind: str, method: str, base_model: str, settings: dict[str, Any],
                  data_name: str, data_hash: str, n_train: int) -> bool:
        """Record a new run (True) or find the same run already recorded (False: resume);
        the same id with other settings is refused first (:meth:`check_start`)."""
        resumed = self.check_start(run_id, kind=kind, method=method, base_model=base_model, settings=settings,
                                   data_hash=data_hash)
        ledger = self.ledger()  # before a new run's row is written: it starts as new
        ledger.start(run_id, "training", {"kind": kind, "method": method, "base_model": base_model,
                                          "settings": json.loads(json.dumps(settings, sort_keys=True, default=list)),
                                          "data_hash": data_hash})
        if resumed:
            self.con.execute("UPDATE train_runs SET status = 'running', finished_at = NULL WHERE run_id = ?",
                             [run_id])
            return False
        self.con.execute("INSERT INTO train_runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, 'running', ?, NULL, NULL, NULL)",
                         [run_id, kind, method, base_model, json.dumps(settings, sort_keys=True, default=list),
                          data_name, data_hash, n_train, _now()])
        return True

    def check_start(self, run_id: str, *, kind: str, method: str, base_model: str, settings: dict[str, Any],
                    data_hash: str) -> bool:
        """True when run ``run_id`` is recorded (a resume), False when it is new; reads only.

        The same id with another kind, method, base model, settings or data is refused,
        naming the first field that differs (:class:`common.resume.ResumeRefused`; an id is
        a hash of them all): a run calls this before it loads a model.  ``settings`` holds
        what defines the run, not the threads, device or step budget, which may change on a
        resume (:meth:`training.config.TrainSettings.recorded`)."""
        row = self.con.execute("SELECT kind, method, base_model, settings_json, data_hash FROM train_runs "
                               "WHERE run_id = ?", [run_id]).fetchone()
        if row is None:
            return False
        check_resume(f"training run {run_id}", {"kind": row[0], "method": row[1], "base_model": row[2],
                                                "settings": json.loads(row[3]), "data_hash": row[4]},
                     {"kind": kind, "method": method, "base_model": base_model,
                      "settings": json.loads(json.dumps(settings, default=list)), "data_hash": data_hash},
                     hint=_RESUME_HINT)
        return True

    def forget_after(self, run_id: str, step: int) -> None:
        """Drop the step rows after ``step``, and their units in the ledger (a resume from
        that checkpoint redoes them), in one transaction."""
        def work(cur: duckdb.DuckDBPyConnection) -> None:
            later = [f"step {int(n)}" for (n,) in cur.execute("SELECT step FROM train_steps WHERE run_id = ? AND "
                                                               "step > ?", [run_id, step]).fetchall()]
            for table in ("train_steps", "train_evals", "train_answers"):
                cur.execute(f"DELETE FROM {table} WHERE run_id = ? AND step > ?", [run_id, step])  # noqa: S608
            Ledger.forget(cur, run_id, later)
        run_in_transaction(self, work)

    def add_step(self, run_id: str, row: StepRow) -> None:
        """One optimiser step's row and its unit in the ledger (``step <n>``), in one transaction."""
        def work(cur: duckdb.DuckDBPyConnection) -> None:
            cur.execute("INSERT OR REPLACE INTO train_steps VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        [run_id, row.step, row.loss, row.reward, row.accuracy, row.kl, row.clipped_share,
                         row.items, row.tokens, row.seconds])
            Ledger.unit_done(cur, run_id, f"step {row.step}")
        run_in_transaction(self, work)

    def add_eval(self, run_id: str, step: int, split: str, n_items: int, n_correct: int, n_options: int,
                 top_letter: str, top_share: float) -> None:
        self.con.execute("INSERT OR REPLACE INTO train_evals VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                         [run_id, step, split, n_items, n_correct, n_options, top_letter, top_share])

    def add_answers(self, run_id: str, step: int, split: str, rows: Sequence[tuple[str, str, str]]) -> None:
        """Each held-out item's greedy answer at ``step``: (item id, answer, truth) option names."""
        self.con.executemany("INSERT OR REPLACE INTO train_answers VALUES (?, ?, ?, ?, ?, ?)",
                             [[run_id, step, split, i, a, t] for i, a, t in rows])

    def finish(self, run_id: str, status: str, adapter_file: str | None = None,
               adapter_sha256: str | None = None) -> None:
        """The run ends ``finished`` (with its adapter or group file) or ``stopped``, through the
        ledger (which sets ``train_runs.status``); a stopped run resumes with the same command."""
        if status not in RUN_STATUSES or status == "running":
            raise ValueError(f"unknown run status {status!r}: a run ends finished or stopped")
        self.con.execute("UPDATE train_runs SET adapter_file = coalesce(?, adapter_file), "
                         "adapter_sha256 = coalesce(?, adapter_sha256) WHERE run_id = ?",
                         [adapter_file, adapter_sha256, run_id])
        if status == "finished":
            self.ledger().finish(run_id)
        else:
            self.ledger().stop(run_id)

    def finished_file(self, run_id: str) -> tuple[str, str] | None:
        """(adapter or group file, its sha256) of a finished run; None for any other run."""
        if not self._has_tables():
            return None
        row = self.con.execute("SELECT adapter_file, adapter_sha256 FROM train_runs WHERE run_id = ? AND "
                               "status = 'finished' AND adapter_file IS NOT NULL", [run_id]).fetchone()
        return None if row is None else (str(row[0]), str(row[1]))

    def add_whole_run(self, row: dict[str, Any], tables: dict[str, pd.DataFrame]) -> bool:
        """Write a run's row (:data:`RUN_COLUMNS`) and its ``steps``, ``evals`` and ``answers``
        (the columns of :data:`TABLE_COLUMNS`) in one transaction; False, with nothing
        written, when the store already holds the run."""
        if self.read_only:
            raise StoreError(f"the store {self.path} is open read-only; it cannot take a run")

        def work(cur: duckdb.DuckDBPyConnection) -> bool:
            if cur.execute("SELECT count(*) FROM train_runs WHERE run_id = ?", [row["run_id"]]).fetchone()[0]:
                return False
            cur.execute(f"INSERT INTO train_runs ({', '.join(RUN_COLUMNS)}) "  # noqa: S608 (fixed names)
                        f"VALUES ({', '.join('?' * len(RUN_COLUMNS))})", [row[c] for c in RUN_COLUMNS])
            for name, columns in TABLE_COLUMNS.items():
                cur.register("_whole_run_rows", tables[name][list(columns)].reset_index(drop=True))
                try:
                    cur.execute(f"INSERT INTO train_{name} (run_id, {', '.join(columns)}) "  # noqa: S608
                                f"SELECT ?, {', '.join(columns)} FROM _whole_run_rows", [row["run_id"]])
                finally:
                    cur.unregister("_whole_run_rows")
            return True
        return run_in_transaction(self, work)

    def runs(self) -> pd.DataFrame:
        if not self._has_tables():
            return pd.DataFrame()
        return self.con.execute("SELECT r.*, (SELECT max(step) FROM train_steps s WHERE s.run_id = r.run_id) "
                                "AS last_step FROM train_runs r ORDER BY created_at").df()

    def steps(self, run_id: str) -> pd.DataFrame:
        if not self._has_tables():
            return pd.DataFrame()
        return self.con.execute("SELECT * FROM train_steps WHERE run_id = ? ORDER BY step", [run_id]).df()

    def evals(self, run_id: str) -> pd.DataFrame:
        if not self._has_tables():
            return pd.DataFrame()
        return self.con.execute("SELECT * FROM train_evals WHERE run_id = ? ORDER BY step, split", [run_id]).df()

    def answers(self, run_id: str) -> pd.DataFrame:
        """Per held-out item answers (empty for a store from before they were kept)."""
        found = self.con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'train_answers'"
                                 ).fetchone()[0]
        if not found:
            return pd.DataFrame(columns=["run_id", "step", "split", "item_id", "answer", "truth"])
        return self.con.execute("SELECT * FROM train_answers WHERE run_id = ? ORDER BY step, split, item_id",
                                [run_id]).df()


T = TypeVar("T")


class TrainingRecorder:
    """The writes of a training run, each in its own short open-write-close of the store.

    A run lasts hours and writes a row every few seconds; holding the file for all that
    time would shut every other program out of it (DuckDB allows one writing process per
    file), the dashboard's curves of this very run included.  Each write here opens the
    store, writes and closes it, waiting its turn while another program holds the file
    (:func:`common.db.retry_busy`)."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else default_db_path()
        self._do(lambda store: None)  # creates and migrates the store now, so a bad path fails first

    def _do(self, work: Callable[[TrainingStore], T]) -> T:
        def once() -> T:
            with TrainingStore(self.path) as store:
                return work(store)
        return retry_busy(once, timeout=60.0)

    def start_run(self, run_id: str, **fields: Any) -> bool:
        return self._do(lambda s: s.start_run(run_id, **fields))

    def check_start(self, run_id: str, **fields: Any) -> bool:
        return self._do(lambda s: s.check_start(run_id, **fields))

    def forget_after(self, run_id: str, step: int) -> None:
        self._do(lambda s: s.forget_after(run_id, step))

    def finished_file(self, run_id: str) -> tuple[str, str] | None:
        return self._do(lambda s: s.finished_file(run_id))

    def evals(self, run_id: str) -> pd.DataFrame:
        return self._do(lambda s: s.evals(run_id))

    def answers(self, run_id: str) -> pd.DataFrame:
        return self._do(lambda s: s.answers(run_id))

    def add_step(self, run_id: str, row: StepRow) -> None:
        self._do(lambda s: s.add_step(run_id, row))

    def add_eval(self, run_id: str, step: int, split: str, n_items: int, n_correct: int, n_options: int,
                 top_letter: str, top_share: float) -> None:
        self._do(lambda s: s.add_eval(run_id, step, split, n_items, n_correct, n_options, top_letter, top_share))

    def add_answers(self, run_id: str, step: int, split: str, rows: Sequence[tuple[str, str, str]]) -> None:
        self._do(lambda s: s.add_answers(run_id, step, split, rows))

    def finish(self, run_id: str, status: str, adapter_file: str | None = None,
               adapter_sha256: str | None = None) -> None:
        self._do(lambda s: s.finish(run_id, status, adapter_file, adapter_sha256))


def _now() -> _dt.datetime:
    return _dt.datetime.now()


def _mirror_status(cur: duckdb.DuckDBPyConnection, run_id: str, status: str, finished: _dt.datetime | None) -> None:
    """``train_runs`` told the ledger's status; its ``finished_at`` is when the run last ended
    (finished or stopped)."""
    ended = finished if finished is not None else (None if status == "running" else _now())
    cur.execute("UPDATE train_runs SET status = ?, finished_at = ? WHERE run_id = ?", [status, ended, run_id])
