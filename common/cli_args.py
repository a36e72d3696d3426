"""Argument parsing of the project's command lines: the parser whose usage errors are one
line with exit status 2, and argument types checked while the arguments are parsed (before
anything is opened, stored or loaded): whole numbers and finite decimal numbers in a range,
a name, a ``HOST:PORT`` address and a folder that can be written.
"""
from __future__ import annotations

import argparse
import math
import re
import sys
import tempfile
from pathlib import Path
from typing import Callable, NoReturn, Sequence

__all__ = ["Parser", "EXIT_USAGE", "one_line", "int_in", "float_in", "host_port", "writable_folder", "name_text",
           "MAX_SEEDS", "MAX_SEED", "MAX_SAMPLES",
           "MAX_SCALE"]

EXIT_USAGE = 2

MAX_SEEDS = 10_000
"""Seeds of one run."""
MAX_SEED = 2**31 - 1
"""The largest seed (a first seed, or the seed of a draw)."""
MAX_SAMPLES = 10_000_000
"""Generated cases per seed or scenario."""
MAX_SCALE = 1e6
"""An inverse temperature or a peer influence."""

_WHOLE = re.compile(r"[+-]?[0-9]{1,30}")
_HOST = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?|\[[0-9A-Fa-f:.]{2,45}\]")
_PORT = re.compile(r"[0-9]{1,5}")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def int_in(low: int, high: int) -> Callable[[str], int]:
    """An argparse ``type``: a whole number from ``low`` to ``high``; anything else (a
    fraction, an exponent, NaN, an empty string, a number out of range) is a usage error
    of one line naming the flag and the range."""
    def parse(text: str) -> int:
        value = int(text.strip()) if _WHOLE.fullmatch(text.strip()) else None
        if value is None or not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be a whole number from {low:,} to {high:,}, got {text[:40]!r}")
        return value

    return parse


def float_in(low: float, high: float) -> Callable[[str], float]:
    """An argparse ``type``: a finite decimal number from ``low`` to ``high`` (NaN,
    infinities and numbers out of range are a one-line usage error)."""
    def parse(text: str) -> float:
        try:
            value: float | None = float(text)
        except ValueError:
            value = None
        if value is None or not math.isfinite(value) or not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be a number from {low:g} to {high:g}, got {text[:40]!r}")
        return value

    return parse


def host_port(text: str) -> str:
    """An argparse ``type``: ``HOST:PORT`` (a host name, an IPv4 address or an ``[IPv6]``
    address, and a port from 1 to 65,535), returned stripped; anything else is a usage
    error of one line."""
    host, sep, port = text.strip().rpartition(":")
    if not sep or not _HOST.fullmatch(host) or not _PORT.fullmatch(port):
        raise argparse.ArgumentTypeError(f"must be HOST:PORT (e.g. 10.0.0.5:6379), got {text[:60]!r}")
    if not 1 <= int(port) <= 65_535:
        raise argparse.ArgumentTypeError(f"the port must be a whole number from 1 to 65,535, got {port}")
    return text.strip()


def name_text(text: str) -> str:
    """An argparse ``type``: a name (a run id, say) of 1 to 128 letters, digits, ``.``,
    ``_`` and ``-``, starting with a letter or digit; anything else (a space, a line break,
    a slash) is a usage error of one line."""
    if not _NAME.fullmatch(text):
        raise argparse.ArgumentTypeError("must be 1 to 128 letters, digits, '.', '_' or '-', starting with a letter "
                                         f"or digit, got {text[:60]!r}")
    return text


def writable_folder(text: str) -> str:
    """An argparse ``type``: a folder that exists or can be made, and takes new files: not
    empty, not a file, no file or broken link on its path, and the nearest folder on it
    that exists accepts a temporary file (made and removed at once; nothing else is
    created).  Returns the text as given."""
    if not text.strip():
        raise argparse.ArgumentTypeError("give a folder, got an empty path")
    probe = Path(text)
    try:
        probe = probe.expanduser().absolute()
        while not probe.exists():
            if probe.is_symlink():
                raise argparse.ArgumentTypeError(f"{str(probe)[:200]} is a link to nothing")
            probe = probe.parent
        if not probe.is_dir():
            where = "is" if probe == Path(text).expanduser().absolute() else "on its path is"
            raise argparse.ArgumentTypeError(f"{str(probe)[:200]} {where} a file, not a folder")
        with tempfile.TemporaryFile(dir=probe):
            pass
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"cannot write in {str(probe)[:200]}: {exc.strerror or exc}") from None
    except ValueError as exc:  # a NUL byte
        raise argparse.ArgumentTypeError(f"not a usable path ({exc}): {text[:60]!r}") from None
    return text


class Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors exit with status 2 and one line."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: error: {one_line(message)}\n")

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None) -> tuple[argparse.Namespace, list[str]]:
        argv = list(sys.argv[1:] if args is None else args)
        for arg in argv[:argv.index("--") if "--" in argv else len(argv)]:
            flag, sep, value = arg.partition("=")
            if sep and flag.startswith("--") and value == "--":  # argparse would drop it and keep the default
                self.error(f"argument {flag}: expected a value, got '--'")
        return super().parse_known_args(argv, namespace)


def one_line(message: str) -> str:
    """The message on one line whatever it quotes: control characters are shown escaped."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in message)
