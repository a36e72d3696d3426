"""Fuzz tests of group files: ``python -m sag ask ITEM --group FILE``, in-process with
scripted models.

Every file ends in one ``error:`` line (status 2) or a debate run with exactly the group
the file gives, read with plain :mod:`json`: every number finite and in range, no text
read as a number.  The default run tries a few dozen files; ``pytest -m fuzz_large -s``
tries 10,000 and prints the counts.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

import sag.debate.answer
from dcem.core.panel import MAX_LOSS
from sag.group.config import GroupConfig
from tests.dcem.fuzz_support import DEFAULT, LARGE

from ..cli_fakes import one_error_line, run_cli, scripted_models, shared_store
from ..fakes import constant
from ..fuzz_inputs import HOSTILE, group_files, no_raw_controls, reference_group, run_surface

SURFACE = "group JSON files"
ITEM = json.dumps({"id": "q1", "question": "Burning chest pain?", "options": ["Reflux", "Embolism"], "answer": "A"})


def _tuples(value: Any) -> Any:
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def _expected(given: dict[str, Any]) -> dict[str, Any]:
    flat = [given]
    while flat:
        v = flat.pop()
        assert not isinstance(v, bool), "true/false accepted as a number"
        flat.extend(v.values() if isinstance(v, dict) else v if isinstance(v, list) else [])
    expected = {**GroupConfig().to_dict(), **{k: _tuples(v) for k, v in given.items()}}
    if expected["loss"] is not None:
        assert all(isinstance(v, (int, float)) and 0 <= v <= MAX_LOSS for row in expected["loss"] for v in row)
        expected["loss"] = tuple(tuple(float(v) for v in row) for row in expected["loss"])
    return expected


def _check(tmp_path: Path, used: list[GroupConfig]) -> Any:
    path = tmp_path / "group.json"

    def check(data: bytes) -> str:
        path.write_bytes(data)
        used.clear()
        code, out, err = run_cli(["ask", ITEM, "--group", str(path)])
        if code == 2:
            one_error_line(code, out, err)
            return "error"
        assert code == 0 and err == "", (code, err)
        no_raw_controls(out)
        assert "Group answer: " in out and len(used) == 1
        assert used[0].to_dict() == _expected(reference_group(data))
        return "valid"
    return check


def _fuzz(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, budget: settings) -> None:
    scripted_models(monkeypatch, constant("A", "Because" + HOSTILE))
    used: list[GroupConfig] = []
    answer_item = sag.debate.answer.answer_item

    def recording(item: Any, cfg: GroupConfig, *args: Any, **kwargs: Any) -> Any:
        used.append(cfg)
        return answer_item(item, cfg, *args, **kwargs)

    monkeypatch.setattr(sag.debate.answer, "answer_item", recording)
    with shared_store(monkeypatch, tmp_path / "s.duckdb"):
        counts = run_surface(SURFACE, group_files(), _check(tmp_path, used), budget)
    assert counts["error"] and counts["valid"]


def test_fuzz_group_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fuzz(tmp_path, monkeypatch, settings(DEFAULT, max_examples=100))


@pytest.mark.fuzz_large
@pytest.mark.timeout(7200)  # 10,000 commands run in-process: longer than the default limit on a busy machine
def test_fuzz_group_files_large(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fuzz(tmp_path, monkeypatch, LARGE)
