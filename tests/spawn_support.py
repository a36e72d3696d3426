"""Child processes for the multi-process store tests: a spawn context that re-runs no main
script, and a runner that starts workers, collects one result each and always reaps them."""
from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import types
from typing import Any, Callable, Sequence

import pytest

__all__ = ["bare_spawn", "run_workers", "start_driver", "kill_driver"]


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


def start_driver(argv: Sequence[str], cwd: Any, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """A driver process in a session of its own (so the local Ray instance it starts can be
    killed with it), its output discarded."""
    return subprocess.Popen(list(argv), cwd=cwd, env=env, start_new_session=True, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def kill_driver(driver: subprocess.Popen[bytes]) -> None:
    """kill -9 the driver, reap it, then kill what it started (its local Ray instance), if still there."""
    os.kill(driver.pid, signal.SIGKILL)
    driver.wait(30)
    try:
        os.killpg(driver.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
