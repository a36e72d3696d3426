"""Fuzz tests of ``python -m sag ask QUESTION``: text, one JSON item, or a file, in-process
with scripted models whose rationales hold terminal escapes.

Every argument ends in one ``error:`` line (status 2) or a printed debate with no raw
control character, showing the item as given (read with plain :mod:`json`).  The default
run tries a few dozen arguments; ``pytest -m fuzz_large -s`` tries 10,000 and prints the
counts.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st

from tests.dcem.fuzz_support import DEFAULT, LARGE

from ..cli_fakes import one_error_line, run_cli, scripted_models, shared_store
from ..fakes import constant
from ..fuzz_inputs import (
    HOSTILE,
    ids,
    item_dicts,
    item_files,
    mutate_text,
    no_raw_controls,
    question_texts,
    reference_item,
    reference_items,
    run_surface,
    shown,
)

SURFACE = "sag ask QUESTION"


@st.composite
def _cases(draw: Any) -> tuple[str, Any, Any]:
    kind = draw(st.sampled_from(["text", "text", "json", "json", "file"]))
    if kind == "text":
        text, item = draw(question_texts())
        return kind, text, item
    if kind == "json":
        text = json.dumps(draw(item_dicts()), ensure_ascii=draw(st.booleans()), indent=draw(st.sampled_from([None, 1])))
        return kind, draw(st.sampled_from(["", " ", "\n"])) + mutate_text(draw, text), None
    chosen = draw(st.none() | ids.map(str))
    return kind, draw(item_files()), chosen


def _check(tmp_path: Path) -> Any:
    path = tmp_path / "q.jsonl"

    def check(case: tuple[str, Any, Any]) -> str:
        kind, payload, extra = case
        if kind == "file":
            path.write_bytes(payload)
            args = ["ask", str(path)] + (["--item", extra] if extra is not None else [])
        else:
            args = ["ask", payload]
        code, out, err = run_cli([*args, "--group", "single"])
        if code == 2:
            one_error_line(code, out, err)
            return "error"
        assert code == 0 and err == "", (code, err)
        no_raw_controls(out)
        assert "Group answer: A" in out and "rationale: Because" in out
        if kind == "file":
            items = reference_items(payload)
            chosen = items[0] if extra is None else next(it for it in items if it[0] == extra)
            assert shown(chosen) in out
        elif kind == "json" and payload.strip().startswith("{"):
            assert shown(reference_item(payload.strip())) in out
        elif kind == "text" and extra is not None:
            options = tuple((chr(65 + i), t.strip()) for i, t in enumerate(extra["options"]))
            assert shown(("asked", extra["question"].strip(), options, "A", "")) in out
        return "valid"
    return check


def _fuzz(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, budget: settings) -> None:
    scripted_models(monkeypatch, constant("A", "Because" + HOSTILE))
    with shared_store(monkeypatch, tmp_path / "s.duckdb"):
        counts = run_surface(SURFACE, _cases(), _check(tmp_path), budget)
    assert counts["error"] and counts["valid"]


def test_fuzz_ask(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fuzz(tmp_path, monkeypatch, settings(DEFAULT, max_examples=80))


@pytest.mark.fuzz_large
@pytest.mark.timeout(7200)  # 10,000 commands run in-process: longer than the default limit on a busy machine
def test_fuzz_ask_large(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fuzz(tmp_path, monkeypatch, LARGE)
