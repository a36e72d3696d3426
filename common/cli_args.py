"""Argument parsing of the project's command lines: the parser whose usage errors are one
line with exit status 2, and argument types for whole numbers and finite decimal numbers
in a range, checked while the arguments are parsed (before anything is opened, stored or
loaded).
"""
from __future__ import annotations

import argparse
import math
import re
import sys
from typing import Callable, NoReturn, Sequence

__all__ = ["Parser", "EXIT_USAGE", "one_line", "int_in", "float_in", "MAX_SEEDS", "MAX_SEED", "MAX_SAMPLES",
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
