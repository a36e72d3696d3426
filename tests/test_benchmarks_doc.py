"""BENCHMARKS.md keeps tables in the document and raw result lines in files beside the
benchmarks: every file it names exists and reads as JSON lines, and no raw line is
pasted into the document."""
from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_raw_results_live_in_files_the_document_names() -> None:
    text = (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")
    assert not [line[:80] for line in text.splitlines() if line.startswith("{")], "raw JSON lines in BENCHMARKS.md"
    named = set(re.findall(r"benchmarks/results/[\w.-]+\.jsonl", text))
    on_disk = {f"benchmarks/results/{p.name}" for p in (ROOT / "benchmarks" / "results").glob("*.jsonl")}
    assert named and named == on_disk  # every file is named, every name is a file
    for name in named:
        rows = [json.loads(line) for line in (ROOT / name).read_text(encoding="utf-8").splitlines() if line]
        assert rows and all(isinstance(r, dict) and "benchmark" in r for r in rows), name
