"""Reading a file a user names, at most a stated number of bytes.

The bytes are counted as they come, so a device or a pipe that never ends (``/dev/zero``,
``-`` on an endless stdin) stops at the limit with one line instead of filling memory; a
regular file larger than the limit is refused before it is read."""
from __future__ import annotations

import sys
from pathlib import Path

from common.errors import ProjectError

__all__ = ["read_at_most", "JSON_FILE_LIMIT"]

JSON_FILE_LIMIT = 64 * 1024 * 1024  # a JSON file a command reads whole (an episode, an export)


def read_at_most(path: str | Path, limit: int) -> bytes:
    """The bytes of ``path`` (``-``: standard input), at most ``limit``; a ProjectError
    naming the file and the limit otherwise, or naming why it cannot be read."""
    name = str(path)
    try:
        if isinstance(path, str) and path == "-":  # a Path named "-" is a file
            data = sys.stdin.buffer.read(limit + 1)
        else:
            file = Path(path)
            if file.is_file() and file.stat().st_size > limit:
                raise ProjectError(f"{name}: is {file.stat().st_size:,} bytes; the limit is {limit:,} bytes")
            with file.open("rb") as handle:
                data = handle.read(limit + 1)
    except OSError as exc:
        raise ProjectError(f"cannot read {name}: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise ProjectError(f"{name}: has more than {limit:,} bytes (the limit); stopped reading there")
    return data
