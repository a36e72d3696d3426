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
