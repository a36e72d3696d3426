"""docs/architecture.md's "where a run's store goes" block is what scripts/store_path.py
measures now: the modules a SAG run, a SAG evaluation and a clinical grid hand their
store to, none of them back up."""
from __future__ import annotations

import importlib.util
from pathlib import Path

from dcem.analysis.reproduction import reproduction_block

ROOT = Path(__file__).resolve().parents[1]


def _measure() -> str:
    spec = importlib.util.spec_from_file_location("store_path", ROOT / "scripts" / "store_path.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return str(module.measure())


def test_the_documented_store_paths_are_measured_and_none_goes_back_up() -> None:
    measured = _measure()
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = reproduction_block(text, "store-path")
    assert block.strip().strip("`").strip() == measured.strip()
    heads = [line for line in measured.splitlines() if not line.startswith("  ")]
    assert len(heads) == 3 and all(line.endswith("0 times back up") for line in heads)
    assert "back up:" not in measured
    assert "common.work" not in measured  # the runner never holds a store
