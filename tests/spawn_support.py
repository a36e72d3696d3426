"""Child processes for the multi-process store tests: a spawn context that re-runs no main
script, and a runner that starts workers, collects one result each and always reaps them."""
from __future__ import annotations

import multiprocessing
import sys
import types
from typing import Any, Callable, Sequence

import pytest

__all__ = ["bare_spawn", "run_workers"]


def bare_spawn(monkeypatch: pytest.MonkeyPatch) -> Any:
    """A spawn context whose children import no main script: in the full run an earlier
    test (AppTest runs page scripts) can leave ``__main__`` pointing at a page, which a
    spawned child would otherwise run again."""
    monkeypatch.setitem(sys.modules, "__main__", types.ModuleType("__main__"))
    return multiprocessing.get_context("spawn")


def run_workers(ctx: Any, target: Callable[..., None], args: Sequence[tuple[Any, ...]], *,
                timeout: float) -> list[Any]:
    """Start ``target(*a, start, out)`` for each ``a`` in ``args`` (``start`` a barrier they
    all pass together, ``out`` a queue each puts one result on); return the results sorted,
    after checking every worker exited cleanly."""
    start, out = ctx.Barrier(len(args)), ctx.Queue()
    procs = [ctx.Process(target=target, args=(*a, start, out)) for a in args]
    for p in procs:
        p.start()
    try:
        results = sorted(out.get(timeout=timeout) for _ in procs)
    finally:
        for p in procs:
            p.join(timeout=60)
            if p.is_alive():
                p.kill()
    assert all(p.exitcode == 0 for p in procs), [p.exitcode for p in procs]
    return results
