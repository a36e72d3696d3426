"""REPRODUCTION.md's view-group block (``<!-- sag-views -->``) is the report of the shipped
export data/results/sag_views: imported into a fresh store, measured by
``sag.views.report`` as ``python -m sag views-report`` prints it."""
from __future__ import annotations

from pathlib import Path

from dcem.analysis.reproduction import reproduction_block
from sag.store.tables import SagStore
from sag.views.featured import FEATURED_EXPORT, ensure_featured, featured_report
from sag.views.report import ViewReport, report_markdown

ROOT = Path(__file__).resolve().parents[3]


def test_reproduction_prints_the_shipped_view_group_measurement(tmp_path: Path) -> None:
    assert (FEATURED_EXPORT / "manifest.json").is_file()
    with SagStore(tmp_path / "s.duckdb") as store:
        assert ensure_featured(store, FEATURED_EXPORT) > 0
        report, why = featured_report(store)
    assert isinstance(report, ViewReport), why
    # every run of the measurement is in the export: 200 TEST cases, their twins, the single answer
    assert report.rows[0].n == 200 and report.cdr and "single seconds per item" in report.cost
    text = (ROOT / "REPRODUCTION.md").read_text(encoding="utf-8")
    assert reproduction_block(text, "sag-views") == report_markdown(report).strip("\n")
