"""``python -m dcem_clinical train``: bad flags and an unknown base model are refused with one
line and status 2, before any model loads."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli_inprocess import run_main


@pytest.mark.parametrize("flags, words", [
    (["--steps", "0"], "--steps"),
    (["--lr", "nan"], "--lr"),
    (["--group-size", "1"], "group_size"),
    (["--lora-r", "9999"], "--lora-r"),
    (["--model", "nope-1b"], "unknown model key"),
    (["--lora-layers", "31"], "lora_layers: the model has 30 decoder layers, got 31"),
])
def test_bad_flags_are_one_line_with_status_2(tmp_path: Path, flags: list[str], words: str) -> None:
    out = run_main("dcem_clinical", ["train", "--db", str(tmp_path / "x.duckdb"), "--out", str(tmp_path / "o"),
                                     "--quiet", *flags])
    assert out.returncode == 2, out.stderr
    assert words in out.stderr and len(out.stderr.strip().splitlines()) == 1 and "Traceback" not in out.stderr
