"""REPRODUCTION.md's synthetic tables are what the shipped export and the world give.

The export ``data/results/dcem_synthetic`` holds the runs of the three commands the file
shows; the tests check the printed block against the export, re-run cells of every run
from the specs the export records and compare every metric, and recompute the ceilings.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from dcem.analysis.ceilings_markdown import ceilings_markdown
from dcem.analysis.export_metrics import metric_mismatches
from dcem.analysis.reproduction import replace_block, reproduction_block
from dcem.analysis.synthetic_markdown import render_synthetic_markdown, world_label
from dcem.core.config import MediatorConfig
from common.errors import InputError
from dcem.store.run_export import load_run_export
from dcem.synthetic.experiment import run_cell

ROOT = Path(__file__).resolve().parents[2]
EXPORT = ROOT / "data" / "results" / "dcem_synthetic"

@pytest.fixture(scope="module")
def export():  # type: ignore[no-untyped-def]
    return load_run_export(EXPORT)

def _text() -> str:
    return (ROOT / "REPRODUCTION.md").read_text(encoding="utf-8")

def test_reproduction_prints_the_shipped_synthetic_export(export) -> None:  # type: ignore[no-untyped-def]
    assert reproduction_block(_text(), "dcem-synthetic") == render_synthetic_markdown(export).strip("\n")

def test_the_export_holds_the_three_worlds(export) -> None:  # type: ignore[no-untyped-def]
    specs = [export.run(r)["spec"] for r in export.run_ids]
    assert sorted((s["sharpness"], s.get("reports", "sample")) for s in specs) == \
        [(1.0, "map"), (1.0, "sample"), (3.0, "sample")]
    assert all(s["seeds"] == list(range(10)) and s["ablation"] for s in specs)
    assert sorted(world_label(s).startswith("Variant") for s in specs) == [False, True, True]
    assert set(export.ablation["metric"]) >= {"risk_at_T", "escalation_at_T", "A1", "A2", "sa_hr"}

@pytest.mark.parametrize("scenario,seed", [("S1", 3), ("S3b", 9)])
def test_cells_rerun_from_the_recorded_spec_give_the_exported_metrics(export, scenario: str, seed: int) -> None:  # type: ignore[no-untyped-def]
    for run_id in export.run_ids:
        spec = export.run(run_id)["spec"]
        base = MediatorConfig.from_mapping(spec["base_config"])
        cell = run_cell(scenario, seed, base_config=base, xi=spec["xi"], t_max=spec["t_max"],
                        free_rounds=spec["free_rounds"], n_train=spec["n_train"], n_eval=spec["n_eval"],
                        ablation=True, sharpness=spec["sharpness"], kappa=spec["kappa"],
                        compliance=spec["compliance"], reports=spec.get("reports", "sample"))
        stored = export.metrics[(export.metrics["run_id"] == run_id) & (export.metrics["scenario"] == scenario)
                                & (export.metrics["seed"] == seed)]
        assert len(stored) > 30
        for row in stored.itertuples():
            got = cell.methods[row.method].metrics[row.metric]
            assert got == pytest.approx(row.value, nan_ok=True, abs=1e-12), (run_id, row.method, row.metric)
        abl = export.ablation[(export.ablation["run_id"] == run_id) & (export.ablation["scenario"] == scenario)
                              & (export.ablation["seed"] == seed)]
        fresh = {(r["xi"], r["horizon"], k): v for r in cell.ablation for k, v in r.items() if k not in ("xi", "horizon")}
        assert len(abl) == len(fresh)
        for row in abl.itertuples():
            assert fresh[(row.xi, row.horizon, row.metric)] == pytest.approx(row.value, abs=1e-12)

def test_every_exported_metric_is_given_back_by_the_exported_outcomes(export) -> None:  # type: ignore[no-untyped-def]
    assert metric_mismatches(export).empty
    assert len(export.metrics) == 3 * 40 * 5 * 9  # runs x cells x methods x metrics (App. E's and decided)


def test_reproduction_prints_the_measured_ceilings() -> None:
    assert reproduction_block(_text(), "dcem-ceilings") == ceilings_markdown().strip("\n")

def test_blocks_are_replaced_in_place_and_missing_markers_are_named() -> None:
    text = "a\n<!-- x:begin -->\nold\n<!-- x:end -->\nb\n"
    new = replace_block(text, "x", "new\n")
    assert reproduction_block(new, "x") == "new" and new.startswith("a\n") and new.endswith("b\n")
    with pytest.raises(InputError, match="y:begin"):
        reproduction_block(text, "y")
