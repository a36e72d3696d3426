"""Scratch folders that go with the process that made them.

Importing or reading a SAG store export unpacks its tables into a temporary store
(100-300 MB for the shipped evaluation).  A process that is killed (``kill -9``, a
closed terminal, an out-of-memory kill) cannot remove its folder, so every such folder
lives in one known parent, ``<system temp>/dcem-studio-scratch-<uid>``, and is named
``<prefix><pid>-<random>``: :func:`scratch_folder` first removes the folders there whose
process is gone, then makes its own and removes it when the block ends (normally, on an
error or on Ctrl-C).
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Iterator

__all__ = ["scratch_parent", "scratch_folder", "remove_stale"]

_NAME = re.compile(r"[a-z][a-z-]*-(\d+)-[A-Za-z0-9_]+")


def scratch_parent() -> Path:
    """The one folder every scratch folder of this user lives in (made on first use)."""
    uid = os.getuid() if hasattr(os, "getuid") else 0
    parent = Path(tempfile.gettempdir()) / f"dcem-studio-scratch-{uid}"
    parent.mkdir(mode=0o700, exist_ok=True)
    return parent


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):  # another user's process, or a pid we cannot probe: keep it
        return True
    return True


def remove_stale(parent: Path) -> list[Path]:
    """Remove the scratch folders in ``parent`` whose process no longer runs; the removed paths."""
    removed = []
    for child in parent.iterdir():
        found = _NAME.fullmatch(child.name)
        if found is None or not child.is_dir() or child.is_symlink() or _alive(int(found.group(1))):
            continue
        shutil.rmtree(child, ignore_errors=True)
        removed.append(child)
    return removed


@contextlib.contextmanager
def scratch_folder(prefix: str) -> Iterator[Path]:
    """A new empty folder for the block (``prefix``: lowercase letters and ``-``, ending in
    ``-``), removed when the block ends; folders left by killed processes go first."""
    if not re.fullmatch(r"[a-z][a-z-]*-", prefix):
        raise ValueError(f"a scratch prefix is lowercase letters and '-', ending in '-', got {prefix!r}")
    parent = scratch_parent()
    remove_stale(parent)
    with tempfile.TemporaryDirectory(prefix=f"{prefix}{os.getpid()}-", dir=parent) as tmp:
        yield Path(tmp)
