"""How many CPU threads a model uses when no command or caller says.

Every core by default.  ``$DCEM_THREADS`` sets another default, for llama.cpp and torch
alike: on a machine that runs several jobs at once, one or two threads each keep them from
spinning against each other (two llama.cpp jobs of two threads each on two cores run many
times slower than one thread each).  An explicit ``--threads`` still wins.
"""
from __future__ import annotations

import os

from common.errors import ConfigError

__all__ = ["THREADS_ENV", "default_threads"]

THREADS_ENV = "DCEM_THREADS"


def default_threads() -> int:
    """``$DCEM_THREADS`` when set (1 to 1024), else the number of cores."""
    raw = os.environ.get(THREADS_ENV, "").strip()
    if not raw:
        return os.cpu_count() or 1
    try:
        n = int(raw)
    except ValueError:
        n = 0
    if not 1 <= n <= 1024:
        raise ConfigError(THREADS_ENV, f"must be a whole number from 1 to 1024, got {raw!r}")
    return n
