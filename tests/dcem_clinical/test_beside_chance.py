"""Each method's accuracy beside chance, the most-frequent-class baseline, its top answer,
the classes it never gives and its lowest recall, computed by hand on small outcomes."""
from __future__ import annotations

import pandas as pd

from dcem_clinical.report.beside_chance import beside_chance, beside_chance_text, recall_by_class

LABELS = ("Cold", "Flu", "Croup")


def _outcomes() -> pd.DataFrame:
    truth = [0, 0, 0, 1, 1, 2] * 2
    rows = []
    for seed in (0, 1):
        single = [0, 0, 0, 0, 0, 0]  # always Cold
        dcem = [0, 0, 1, 1, 1, 2] if seed == 0 else [0, 0, 0, 1, 0, 2]
        for i, t in enumerate(truth[:6]):
            rows.append({"scenario": "S1", "seed": seed, "method": "single", "decision": single[i], "truth": t})
            rows.append({"scenario": "S1", "seed": seed, "method": "dcem", "decision": dcem[i], "truth": t})
    return pd.DataFrame(rows)


def test_accuracy_is_shown_beside_chance_the_majority_class_and_the_top_answer() -> None:
    table = beside_chance(_outcomes(), LABELS).set_index("method")
    single, dcem = table.loc["Single best"], table.loc["D-CEM"]
    assert single["accuracy"] == "0.500" and single["chance"] == "0.333"
    assert single["most frequent class"] == "0.500 (Cold)"  # always Cold is exactly the majority baseline
    assert single["top answer"] == "Cold 100%" and single["never answered"] == "Flu, Croup"
    assert single["lowest recall"] == "Flu 0.00"
    assert dcem["accuracy"] == f"{10 / 12:.3f}" and dcem["worst seed"] == f"{5 / 6:.3f} (seed 0)"
    assert dcem["never answered"] == "-" and dcem["lowest recall"] == "Flu 0.75"


def test_recall_per_class_pools_the_seeds_and_counts_each_class_once() -> None:
    table = recall_by_class(_outcomes(), LABELS)
    assert table.loc[("S1", "Cold"), "D-CEM"] == round(5 / 6, 2) and table.loc[("S1", "Cold"), "Single best"] == 1.0
    assert table.loc[("S1", "Flu"), "cases"] == 4 and table.loc[("S1", "Croup"), "cases"] == 2
    text = beside_chance_text({"r1": _outcomes()}, {"r1": LABELS})
    assert "Beside chance (r1)" in text and "1/K = 0.333" in text and "Recall per class" in text


def test_the_overview_shows_a_stored_runs_accuracy_beside_chance(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from clinical.case_file import read_case_file
    from clinical.datasets import use_dataset
    from dcem.core.config import MediatorConfig
    from dcem.store.database import Store
    from dcem_clinical.run import ClinicalSpec, run_clinical
    from pathlib import Path
    from studio.views.overview_view import beside_chance_view

    example = Path(__file__).resolve().parents[2] / "data" / "examples" / "abdominal_pain_cases.jsonl"
    ds = use_dataset(read_case_file(example))
    spec = ClinicalSpec(dataset=ds.name, seeds=(0, 1), n_cal=20, n_test=10, agents=("stat", "stat@exam"),
                        base_config=MediatorConfig(prior="empirical", t_max=2), free_rounds=1)
    with Store(tmp_path / "s.duckdb") as store:
        run_id = run_clinical(store, spec).run_id
        view = beside_chance_view(store, run_id)
        assert beside_chance_view(store, "nope") is None
    assert view is not None and "Chance is 1/5 = 0.200" in view.caption
    assert set(view.table["method"]) == {"Single best", "Free discussion", "Fixed log pool", "D-CEM",
                                         "D-CEM w/o escalation"}
    assert (view.table["cases"] == 20).all() and view.table["worst seed"].str.contains(r"\(seed [01]\)").all()
    assert set(view.recall["label"]) == set(ds.labels)
