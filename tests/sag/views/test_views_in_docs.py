"""REPRODUCTION.md's view-group blocks (``<!-- sag-views -->`` for the first training's
group, ``<!-- sag-views2 -->`` for the second's) are the reports of the shipped exports
(``sag.views.featured.SHIPPED``): each imported into a fresh store, measured by
``sag.views.report`` as ``python -m sag views-report`` prints it."""
from __future__ import annotations

from pathlib import Path

import pytest

from dcem.analysis.reproduction import reproduction_block
from sag.store.tables import SagStore
from sag.views.featured import SHIPPED, ViewShipment, ensure_featured, shipped_report
from sag.views.report import ViewReport, report_markdown

ROOT = Path(__file__).resolve().parents[3]
BLOCKS = {"ddx-views-trained": "sag-views", "ddx-views2-trained": "sag-views2"}


@pytest.mark.parametrize("shipment", SHIPPED, ids=lambda s: s.name)
def test_reproduction_prints_the_shipped_view_group_measurement(shipment: ViewShipment, tmp_path: Path) -> None:
    assert (shipment.export_path / "manifest.json").is_file()
    with SagStore(tmp_path / "s.duckdb") as store:
        assert ensure_featured(store, shipment.export_path) > 0
        report, why = shipped_report(store, shipment)
    assert isinstance(report, ViewReport), why
    # every run of the measurement is in the export: 200 TEST cases, their twins, the single answer
    assert report.rows[0].n == 200 and report.cdr and "single seconds per item" in report.cost
    text = (ROOT / "REPRODUCTION.md").read_text(encoding="utf-8")
    assert reproduction_block(text, BLOCKS[shipment.name]) == report_markdown(report).strip("\n")
