"""Child-process workers for the lock-file tests (importable under spawn)."""
from __future__ import annotations

import random
import time
from pathlib import Path
from typing import Any

from common.db import Database, StoreBusyError
from common.file_hold import HeldElsewhere, hold


def try_hold(path: str, shared: bool, out: Any) -> None:
    """Put "held" or "busy" on ``out``: whether this process could take the lock."""
    try:
        hold(Path(path), shared=shared).release()
    except HeldElsewhere:
        out.put("busy")
    else:
        out.put("held")


def writer(path: str, who: int, n: int, start: Any, out: Any) -> None:
    """Insert ``n`` rows, opening and closing the store for each one and retrying while
    another process holds it; put (who, busy count, error) on ``out``."""
    start.wait(timeout=60)
    busy = 0
    try:
        for i in range(n):
            while True:
                try:
                    db = Database(path)
                except StoreBusyError:
                    busy += 1
                    time.sleep(random.uniform(0.002, 0.01))
                    continue
                break
            with db:
                db.con.execute("INSERT INTO t VALUES (?, ?)", [who, i])
    except BaseException as exc:  # noqa: BLE001 - reported to the parent
        out.put((who, busy, f"{type(exc).__name__}: {exc}"))
    else:
        out.put((who, busy, None))
