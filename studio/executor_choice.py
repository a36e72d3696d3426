"""Where a launch's units run: this process, or local Ray workers (the pages' form of ``--executor``)."""
from __future__ import annotations

import contextlib
from typing import Any, Iterator

import streamlit as st

__all__ = ["EXECUTORS", "executor_choice", "executor_for", "RAY_WORKERS"]

RAY_WORKERS = 2
EXECUTORS = {"process": "this process",
             "ray": f"Ray: {RAY_WORKERS} local workers, one thread each"}
_HELP = ("This process runs one unit after another. Ray starts a local Ray instance whose workers each load the "
         "models once and take units in parallel; the page alone writes the results, so the store is the same. "
         "Ray takes a few seconds to start, and a worker does not report the turns inside a unit. For a cluster, "
         "use the command line (`--executor ray --ray-address`, docs/cluster.md).")


def executor_choice(key: str) -> str:
    """A radio with the two choices; returns ``process`` or ``ray``."""
    return str(st.radio("Where the units run", list(EXECUTORS), format_func=EXECUTORS.get, horizontal=True, key=key,
                        help=_HELP))


@contextlib.contextmanager
def executor_for(name: str) -> Iterator[Any]:
    """None (in process) or a local Ray executor that ends with the block."""
    if name != "ray":
        yield None
        return
    from common.ray_work import RayExecutor

    with RayExecutor(workers=RAY_WORKERS, threads=1) as executor:
        yield executor
