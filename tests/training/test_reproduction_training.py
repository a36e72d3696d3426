"""REPRODUCTION.md prints every shipped training export's table as ``python -m training
report`` prints it from the export."""
from __future__ import annotations

from pathlib import Path

import pytest

from dcem.analysis.reproduction import reproduction_block
from training.report import export_markdown
from training.shipped import read_shipped, shipped_exports

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", [p.name for p in shipped_exports()])
def test_reproduction_shows_the_shipped_training_table(name: str) -> None:
    text = (ROOT / "REPRODUCTION.md").read_text(encoding="utf-8")
    assert reproduction_block(text, f"training-{name}") == export_markdown(read_shipped(name)).strip("\n")
    assert f"python -m training report --name {name}" in text
