"""``python -m sag`` run in-process with scripted models: no model loads, no corpus is read."""
from __future__ import annotations

import contextlib
import functools
from pathlib import Path
from typing import Iterator, Sequence

import pytest

import sag.cli
from sag.store.tables import SagStore
from tests.cli_inprocess import run_main

from .fakes import Policy, ScriptedTurns, constant


def scripted_models(monkeypatch: pytest.MonkeyPatch, policy: Policy | None = None) -> ScriptedTurns:
    """Every model key of the group answered by one scripted runner; retrieval finds nothing."""
    runner = ScriptedTurns(policy or constant("A"))
    monkeypatch.setattr("sag.debate.runners.build_runners", lambda keys, **_: {key: runner for key in keys})
    monkeypatch.setattr("sag.retrieval.retrievers", lambda names, **_: {})
    return runner


@contextlib.contextmanager
def shared_store(monkeypatch: pytest.MonkeyPatch, path: Path) -> Iterator[SagStore]:
    """One store kept open for every command run inside the block, and the argument parser
    built once (opening DuckDB and building the parser would take most of the time of one
    fuzz input); the commands' ``--db`` is ignored."""
    store = SagStore(path)

    @contextlib.contextmanager
    def kept(*_: object, **__: object) -> Iterator[SagStore]:
        yield store

    monkeypatch.setattr("sag.store.tables.SagStore", kept)
    monkeypatch.setattr(sag.cli, "_parser", functools.lru_cache(maxsize=None)(sag.cli._parser))  # built once
    try:
        yield store
    finally:
        monkeypatch.undo()
        store.close()


def run_cli(args: Sequence[str]) -> tuple[int, str, str]:
    """(exit status, stdout, stderr) of ``python -m sag ARGS``."""
    done = run_main("sag", args)
    return done.returncode, done.stdout, done.stderr


def one_error_line(code: int, out: str, err: str) -> str:
    """The single ``error:`` line of a refused input (status 2, nothing on stdout)."""
    usage = err.startswith("python -m sag") and ": error: " in err.split("\n")[0]
    assert code == 2 and (err.startswith("error: ") or usage) and err.count("\n") == 1, (code, err)
    assert "Traceback" not in err and out == "", out
    assert err[:-1].isprintable(), err  # control characters of the input shown escaped
    return err
