"""REPRODUCTION.md's clinical block is the markdown of the shipped run export.

The export lives in ``data/results/dcem_clinical/`` (``python -m dcem_clinical export``);
the block between ``<!-- dcem-clinical:begin -->`` and ``<!-- dcem-clinical:end -->`` is
``python -m dcem report --from-export data/results/dcem_clinical --markdown``.
"""
from __future__ import annotations

from pathlib import Path

from dcem.analysis.clinical_markdown import render_clinical_markdown
from dcem.analysis.reproduction import reproduction_block
from dcem.analysis.export_metrics import metric_mismatches
from dcem.store.run_export import load_run_export

ROOT = Path(__file__).resolve().parents[2]
EXPORT = ROOT / "data" / "results" / "dcem_clinical"


def test_reproduction_prints_the_tables_of_the_shipped_clinical_export() -> None:
    assert (EXPORT / "manifest.json").exists(), (
        f"the shipped clinical run export is missing: {EXPORT.relative_to(ROOT)}/manifest.json "
        "(make it with python -m dcem_clinical export --run ... --out data/results/dcem_clinical --command ...)")
    export = load_run_export(EXPORT)
    assert metric_mismatches(export).empty
    block = reproduction_block((ROOT / "REPRODUCTION.md").read_text(encoding="utf-8"), "dcem-clinical")
    assert block.strip() == render_clinical_markdown(export.metrics, export.manifest).strip()
