"""A driver for the driver-kill test: squares numbers on Ray into a store, slowly."""
from __future__ import annotations

import sys
from pathlib import Path

from common.ray_work import RayExecutor
from common.work import Unit, run_units
from tests.common.work_jobs import SquareJob, TableSink, units


class LoggedSink(TableSink):
    """Also appends each stored key to a text file the test can read while the store is held."""

    def __init__(self, path: Path, log: Path) -> None:
        super().__init__(path)
        self.log = log

    def save(self, unit: Unit, result: dict) -> None:  # type: ignore[type-arg]
        super().save(unit, result)
        with self.log.open("a") as fh:
            fh.write(unit.key + "\n")


def main(store: str, log: str, executor: str) -> None:
    sink = LoggedSink(Path(store), Path(log))
    job = SquareJob(slow=0.4 if executor == "ray" else 0.0)
    if executor == "ray":
        with RayExecutor(workers=2) as ex:
            run_units(sink, units(12), job, run_id="r", done=sink.done(), executor=ex)
    else:
        run_units(sink, units(12), job, run_id="r", done=sink.done())
    sink.close()


if __name__ == "__main__":
    main(*sys.argv[1:4])
