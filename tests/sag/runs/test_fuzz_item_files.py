"""Fuzz tests of JSONL question files: ``python -m sag run --benchmark FILE`` and
``python -m sag ask FILE``, in-process with scripted models.

Every file ends in one ``error:`` line (status 2, nothing stored) or a run whose stored
items equal the file's items read with plain :mod:`json`.  The default run tries a few
dozen files; ``pytest -m fuzz_large -s`` tries 10,000 and prints the counts.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from hypothesis import strategies as st

from sag.store.tables import SagStore
from tests.dcem.fuzz_support import DEFAULT, LARGE

from ..cli_fakes import one_error_line, run_cli, scripted_models, shared_store
from ..fakes import constant
from ..fuzz_inputs import HOSTILE, item_files, no_raw_controls, reference_items, run_surface, shown

SURFACE = "JSONL item files"


def _lines(data: bytes) -> int:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return 1
    return max(1, sum(1 for line in text.split("\n") if line.strip()))


def _stored(store: SagStore, run_id: str) -> list[tuple[Any, ...]]:
    rows = store.items(run_id)
    assert len(store.outcomes(run_id)) == len(rows)
    return [(r.item_id, r.question, tuple((k, t) for k, t in json.loads(r.options_json)), r.answer, r.context)
            for r in rows.itertuples()]


def _check(tmp_path: Path, store: SagStore) -> Any:
    tried = [0]

    def check(case: tuple[bytes, str]) -> str:
        data, command = case
        tried[0] += 1  # a file of its own each time: the run id does not depend on the items' text
        path = tmp_path / f"items-{tried[0]}.jsonl"
        path.write_bytes(data)
        if command == "run":
            args = ["run", "--benchmark", str(path), "--group", "single", "--items", str(_lines(data)), "-q"]
        else:
            args = ["ask", str(path), "--group", "single"]
        code, out, err = run_cli(args)
        if code == 2:
            one_error_line(code, out, err)
            return "error"
        assert code == 0 and err == "", (code, err)
        expected = reference_items(data)
        no_raw_controls(out)
        if command == "run":
            match = re.match(r"run (\S+) \((new|resumed)\)", out)
            assert match, out
            assert _stored(store, match.group(1)) == expected
        else:
            assert shown(expected[0]) in out and "Group answer: A" in out
        return "valid"
    return check


def _fuzz(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, budget: settings) -> None:
    scripted_models(monkeypatch, constant("A", "Because" + HOSTILE))
    cases = st.tuples(item_files(), st.sampled_from(["run", "ask"]))
    with shared_store(monkeypatch, tmp_path / "s.duckdb") as store:
        counts = run_surface(SURFACE, cases, _check(tmp_path, store), budget)
    assert counts["error"] and counts["valid"]


def test_fuzz_item_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fuzz(tmp_path, monkeypatch, settings(DEFAULT, max_examples=60))


@pytest.mark.fuzz_large
@pytest.mark.timeout(7200)  # 10,000 commands run in-process: longer than the default limit on a busy machine
def test_fuzz_item_files_large(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fuzz(tmp_path, monkeypatch, LARGE)
