"""``python -m sag train-views``: bad stages, agents and settings are refused with one line
and status 2, before any model loads or any folder is made."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_inprocess import run_main


@pytest.mark.parametrize("flags, words", [
    (["--stage", "debate", "--supervised", "1"], "supervised: the debate stage (CTDE) has no log-likelihood term"),
    (["--stage", "debate"], "group: ddx-views: agent R1 has no adapter file"),
    (["--stage", "judge"], "group: ddx-views: agent R1 has no adapter file"),
    (["--agent", "R9"], "agent: 'R9' is not a reasoning agent of ddx-views (R1, R2, R3)"),
    (["--supervised", "200"], "--supervised: must be a number from 0 to 100"),
    (["--stage", "nope"], "--stage"),
])
def test_bad_train_views_flags_are_one_line_with_status_2(tmp_path: Path, flags: list[str], words: str) -> None:
    out = run_main("sag", ["train-views", "--group", "data/groups/ddx-views.json", "--db", str(tmp_path / "x.duckdb"),
                           "--out", str(tmp_path / "o"), "--quiet", *flags])
    assert out.returncode == 2, out.stderr
    assert words in out.stderr and len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr
    assert not (tmp_path / "o").exists() and not (tmp_path / "x.duckdb").exists()
