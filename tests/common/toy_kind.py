"""A small test-only kind of run, ``toy``, registered as every kind is (docs/architecture.md,
"Adding a kind of run"): a spec, a job, a sink, one table with its store class and merge
rules, and a report.

The kind multiplies each unit's number by the spec's ``scale`` and stores it in
``toy_results``.  Run it with :func:`run_toy`; register it with :func:`registered`.
"""
from __future__ import annotations

import hashlib
import json
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from common.db import Database
from common.ledger import Ledger
from common.merge_checks import RowCheck, belongs, counts
from common.migrations import migrate
from common.run_kinds import RunKind, register, unregister
from common.work import Failure, Unit, WorkSummary, run_units


@dataclass(frozen=True)
class ToySpec:
    n: int
    scale: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def run_id(self) -> str:
        return "toy-" + hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()[:8]


@dataclass(frozen=True)
class ToyJob:
    """Computes ``payload * scale``; raises for ``fail_key``; ``stop_after`` units then a kill."""

    scale: int
    computed: list[str] = field(default_factory=list, compare=False)
    fail_key: str | None = None
    stop_after: int | None = None

    @property
    def key(self) -> str:
        return f"toy-{self.scale}"

    def open(self, here: Any = None) -> "ToyJob":
        return self

    def compute_unit(self, payload: tuple[str, int], tick: Callable[[], None]) -> int:
        key, number = payload
        if self.stop_after is not None and len(self.computed) >= self.stop_after:
            raise KeyboardInterrupt  # the process is killed while computing this unit
        self.computed.append(key)
        if key == self.fail_key:
            raise ValueError(f"no answer for {key}")
        return number * self.scale


class ToySink:
    """The toy's rows, written on the ledger's transaction; failures kept here too."""

    def __init__(self, run_id: str | None = None) -> None:
        self.failures: list[tuple[str, str]] = []
        self.run_id = run_id or RUN

    def write(self, cur: Any, unit: Unit, result: int) -> None:
        cur.execute("INSERT INTO toy_results VALUES (?, ?, ?)", [self.run_id, unit.key, result])

    def fail(self, unit: Unit, failure: Failure) -> None:
        self.failures.append((unit.key, failure.message))


SPEC = ToySpec(n=5, scale=10)
RUN = SPEC.run_id()
UNITS = [Unit(f"u{i}", f"number {i}", (f"u{i}", i)) for i in range(SPEC.n)]


class ToyStore(Database):
    """A store with the toy's table (package ``toy``, migrated on open)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not self.read_only:
            migrate(self.con, "toy", [("001_toy_results", [
                "CREATE TABLE toy_results (run_id VARCHAR, unit_key VARCHAR, value INTEGER, "
                "PRIMARY KEY (run_id, unit_key))"])])


def toy_checks() -> tuple[RowCheck, ...]:
    return (*counts("toy_results", "value"),
            belongs("toy_results", "ledger_runs", ("run_id",), "must belong to a run of the ledger"))


def toy_report(store_path: Path, run_id: str) -> str:
    with ToyStore(store_path) as store:
        rows = store.con.execute("SELECT unit_key, value FROM toy_results WHERE run_id = ? ORDER BY unit_key",
                                 [run_id]).fetchall()
    return f"toy run {run_id}: " + ", ".join(f"{k}={v}" for k, v in rows)


TOY = RunKind("toy", "numbers times a scale (a test-only kind)", "none", ("toy_results",), ToyStore, toy_checks,
              toy_report, describe=lambda spec: f"{spec['n']} numbers times {spec['scale']}")


@contextmanager
def registered() -> Iterator[RunKind]:
    """The toy kind in the registry for the block."""
    register(TOY)
    try:
        yield TOY
    finally:
        unregister(TOY.name)


def run_toy(store: Database, job: "ToyJob | None" = None, sink: "ToySink | None" = None, spec: ToySpec = SPEC,
            **kw: Any) -> WorkSummary:
    units = [Unit(f"u{i}", f"number {i}", (f"u{i}", i)) for i in range(spec.n)]
    return run_units(sink or ToySink(spec.run_id()), units, job or ToyJob(spec.scale), run_id=spec.run_id(),
                     ledger=Ledger(store), kind="toy", spec=spec, **kw)
