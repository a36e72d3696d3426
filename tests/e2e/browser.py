"""Debian's chromium as the browser tests and the screenshot script launch it, and a free
local port for the dashboard they start."""
from __future__ import annotations

import shutil
import socket

__all__ = ["CHROMIUM", "CHROMIUM_ARGS", "free_port"]

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
