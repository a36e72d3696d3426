"""Fuzz tests of the explain input: ``python -m dcem explain FILE`` (run in-process through
:func:`dcem.cli.main`) and the library function :func:`dcem.analysis.explain.explain`.

The default run tries a few hundred inputs per surface; ``pytest -m fuzz_large -s``
tries 10,000 per surface and prints the outcome counts.
"""
from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from dcem.analysis.explain import explain
from dcem.cli import main
from common.errors import ProjectError
from tests.dcem.fuzz_support import (
    DEFAULT,
    LARGE,
    check_result,
    episode_texts,
    episodes,
    run_budget,
)


def _cli_check(path: Path) -> Any:
    def check(text: str) -> str:
        path.write_bytes(text.encode("utf-8", "surrogatepass"))
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["explain", str(path), "--compact"])
        if code == 2:
            message = err.getvalue()
            assert message.startswith("error: ") and message.count("\n") == 1, message
            assert "Traceback" not in message and out.getvalue() == ""
            return "error"
        assert code == 0 and err.getvalue() == "", (code, err.getvalue())
        doc = json.loads(text)
        check_result(out.getvalue(), doc["labels"], len(doc["confusion"]))
        return "valid"
    return check


def _library_check(doc: Any) -> str:
    try:
        result = explain(doc)
    except ProjectError as exc:
        assert str(exc) and "Traceback" not in str(exc)
        return "error"
    check_result(json.dumps(result, allow_nan=False), doc["labels"], len(doc["confusion"]))
    return "valid"


def _cli(tmp_path: Path, budget: settings) -> None:
    counts = run_budget("explain FILE", episode_texts(), _cli_check(tmp_path / "episode.json"), budget)
    assert counts["error"] and counts["valid"]


def _library(budget: settings) -> None:
    counts = run_budget("explain()", episodes(deep=True), _library_check, budget)
    assert counts["error"] and counts["valid"]


def test_fuzz_explain_cli(tmp_path: Path) -> None:
    _cli(tmp_path, DEFAULT)


def test_fuzz_explain_library() -> None:
    _library(DEFAULT)


@pytest.mark.fuzz_large
def test_fuzz_explain_cli_large(tmp_path: Path) -> None:
    _cli(tmp_path, LARGE)


@pytest.mark.fuzz_large
def test_fuzz_explain_library_large() -> None:
    _library(LARGE)
