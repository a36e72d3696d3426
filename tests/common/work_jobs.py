"""Jobs and a sink for the runner tests: tiny units, a DuckDB table of results."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import duckdb

from common.work import Failure, Unit


@dataclass(frozen=True)
class SquareJob:
    """Squares numbers; ``fail_on`` raises, ``die_once`` kills its process the first time it
    sees that number (a marker file in ``marks`` remembers it), ``slow`` sleeps per unit."""

    fail_on: tuple[int, ...] = ()
    die_once: tuple[int, ...] = ()
    marks: str = ""
    slow: float = 0.0

    @property
    def key(self) -> str:
        return repr(self)

    def open(self, here: Any = None) -> "SquareWorker":
        return SquareWorker(self, os.getpid())


@dataclass
class SquareWorker:
    job: SquareJob
    pid: int

    def compute_unit(self, payload: Any, tick: Callable[[], None]) -> dict[str, Any]:
        import time

        n = int(payload)
        if n in self.job.die_once:
            mark = Path(self.job.marks) / f"died-{n}"
            if not mark.exists():
                mark.write_text("x")
                os._exit(3)
        if n in self.job.fail_on:
            raise RuntimeError(f"cannot square {n}")
        if self.job.slow:
            time.sleep(self.job.slow)
        tick()
        return {"n": n, "square": n * n, "pid": self.pid}


class TableSink:
    """Results in table ``results``, failures in ``failures``; each write its own transaction."""

    def __init__(self, path: Path) -> None:
        self.con = duckdb.connect(str(path))
        self.con.execute("CREATE TABLE IF NOT EXISTS results (key VARCHAR PRIMARY KEY, n INT, square BIGINT)")
        self.con.execute("CREATE TABLE IF NOT EXISTS failures (key VARCHAR, message VARCHAR)")
        self.saved: list[str] = []
        self.pids: set[int] = set()

    def done(self) -> set[str]:
        return {r[0] for r in self.con.execute("SELECT key FROM results").fetchall()}

    def save(self, unit: Unit, result: dict[str, Any]) -> None:
        self.con.execute("INSERT INTO results VALUES (?, ?, ?)", [unit.key, result["n"], result["square"]])
        self.saved.append(unit.key)
        self.pids.add(result["pid"])

    def fail(self, unit: Unit, failure: Failure) -> None:
        self.con.execute("INSERT INTO failures VALUES (?, ?)", [unit.key, failure.message])

    def rows(self) -> list[tuple[Any, ...]]:
        return self.con.execute("SELECT key, n, square FROM results ORDER BY n").fetchall()

    def close(self) -> None:
        self.con.close()


def units(n: int) -> list[Unit]:
    return [Unit(f"u{i}", f"number {i}", i) for i in range(n)]
