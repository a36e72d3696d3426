"""The demo's featured SAG run: imported into a store without SAG runs, and opened first."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from sag.views.featured import ensure_featured
from studio.views.sag_run_choice import FEATURED, useful_order
from sag.store.tables import SagStore


def test_the_featured_run_opens_before_other_runs() -> None:
    runs = pd.DataFrame({"run_id": ["mine", "eval", "featured"],
                         "benchmark": ["medqa", "eval:accuracy/medqa", FEATURED[0]],
                         "group_name": ["sag-6", "sag-6", FEATURED[1]]})
    assert useful_order(runs) == ["featured", "mine", "eval"]


def test_nothing_is_imported_without_an_export_or_into_a_store_with_runs(tmp_path: Path) -> None:
    with SagStore(tmp_path / "s.duckdb") as store:
        assert ensure_featured(store, tmp_path / "no-export") == 0
        assert store.runs().empty
