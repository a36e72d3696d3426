"""A command line run inside the test process (``python -m <package> ARGS`` without a new
interpreter): its exit status, stdout and stderr, as :func:`subprocess.run` returns them.

Refusal tests check the one-line message of many bad inputs; a new interpreter for each
one costs seconds of imports. ``tests/test_entry_points.py`` runs each package's real
``python -m`` entry point once."""
from __future__ import annotations

import contextlib
import importlib
import io
import os
import subprocess
from typing import Mapping, Sequence
from unittest import mock

__all__ = ["run_main"]


def run_main(package: str, args: Sequence[str], env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``<package>.cli.main(args)`` with stdout and stderr captured and ``env`` set meanwhile."""
    main = importlib.import_module(f"{package}.cli").main
    out, err = io.StringIO(), io.StringIO()
    with mock.patch.dict(os.environ, dict(env or {})), contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse's usage errors
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    return subprocess.CompletedProcess([package, *args], int(code), out.getvalue(), err.getvalue())
