"""Run names for the pickers, and which run a page's picker opens on."""
from __future__ import annotations

import datetime as dt
from pathlib import Path

from dcem.analysis.run_info import RunPick, default_run, run_label, run_labels
from dcem.store.database import Store


def test_a_synthetic_run_is_named_by_world_scenarios_seeds_and_date() -> None:
    label = run_label("syn-70b6c021", "synthetic", {"scenarios": ["S1", "S2", "S3a", "S3b"], "sharpness": 1.0},
                      [0, 1, 2], dt.datetime(2026, 11, 23, 14, 5))
    assert label == "syn-70b6c021 · synthetic, seed world, S1-S3b × 3 seeds · 2026-11-23 14:05"
    sharp = run_label("syn-1", "synthetic", {"scenarios": ["S1", "S3b"], "sharpness": 3.0}, [0], None,
                      finished=False)
    assert sharp == "syn-1 · synthetic, sharpened world, S1/S3b × 1 seed · unfinished"


def test_a_clinical_run_names_dataset_and_agents(clinical_db: Path) -> None:
    with Store(clinical_db) as store:
        run = store.latest_run("clinical")
        labels = run_labels(store)
    assert labels[run].startswith(f"{run} · clinical, ddxplus8, S2 × 1 seed, fake-a + fake-b · 20")
    # ui-run's spec names no scenarios: its stored cells stand in
    assert labels["ui-run"].startswith("ui-run · synthetic, S1/S3b × 1 seed · 20")


def test_the_picker_opens_on_the_current_run_unless_picked_since() -> None:
    runs = ["new", "mid", "old"]
    assert default_run(runs, current=None, picked=None) == "new"
    assert default_run(runs, current="mid", picked=None) == "mid"
    assert default_run(runs, current="mid", picked=RunPick("old", "mid")) == "old"  # own pick stays
    assert default_run(runs, current="new", picked=RunPick("old", "mid")) == "new"  # a later launch wins
    assert default_run(runs, current="gone", picked=RunPick("gone", "gone")) == "new"
    assert default_run([], current="mid", picked=None) is None
    assert default_run(runs, current=None, picked=None, featured="old") == "old"  # the demo's opening run
    assert default_run(runs, current="mid", picked=None, featured="old") == "mid"
    assert default_run(runs, current=None, picked=None, featured="gone") == "new"
