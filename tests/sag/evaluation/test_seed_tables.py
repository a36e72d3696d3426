"""The SAG paper's (seed 004) tables, transcribed into data/sag_eval/seed_tables.json."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
SEED_TABLES = ROOT / "data" / "sag_eval" / "seed_tables.json"
ACCURACIES = ("M-QA", "MCQA", "NEJM", "GPQA")
EXPECTED_ROWS = {"table2": 14, "table3": 10, "table4": 8, "table8": 6, "table5": 7, "table7": 6,
                 "table6": 6, "table9": 18, "table10": 9}


@pytest.fixture(scope="module")
def doc() -> dict:
    return json.loads(SEED_TABLES.read_text(encoding="utf-8"))


def find(doc: dict, table: str, **keys: str) -> dict:
    rows = [r for r in doc["tables"][table]["rows"] if all(r[k] == v for k, v in keys.items())]
    assert len(rows) == 1, (table, keys, len(rows))
    return rows[0]


def test_file_loads_with_expected_tables_and_figures(doc: dict) -> None:
    assert doc["source"] == "seed 004 (SAG)"
    assert {k: len(t["rows"]) for k, t in doc["tables"].items()} == EXPECTED_ROWS
    assert {"figure3", "figure4", "figure5"} <= set(doc["figures"])
    assert all(f["reading"].strip() for f in doc["figures"].values())


def test_every_table_states_meaning_units_and_direction(doc: dict) -> None:
    for name, table in doc["tables"].items():
        for field in ("title", "caption_meaning", "units", "better", "columns", "rows"):
            assert table.get(field), (name, field)


def test_every_row_has_every_column_or_a_noted_null(doc: dict) -> None:
    for name, table in doc["tables"].items():
        for r in table["rows"]:
            assert {"method", "variant", "backbone", "values"} <= set(r), (name, r)
            assert r["backbone"] in {"llama", "qwen", "mix"}, (name, r)
            assert set(r["values"]) == set(table["columns"]), (name, r["label"])
            for col, value in r["values"].items():
                if value is None:
                    assert r.get("note"), (name, r["label"], col)
                else:
                    assert isinstance(value, (int, float)), (name, r["label"], col)
            assert set(r.get("bold", [])) <= set(table["columns"]), (name, r["label"])


def test_known_cells(doc: dict) -> None:
    sag_pre_llama = find(doc, "table2", method="SAG", variant="Pre-trained", backbone="llama")
    assert sag_pre_llama["values"]["M-QA"] == 84.6
    assert find(doc, "table2", method="SAG", variant="w/ GRPO", backbone="qwen")["values"]["GPQA"] == 92.6
    assert find(doc, "table2", method="Clinical specialist", variant="Meditron")["values"]["GPQA"] == 20.4
    assert find(doc, "table3", variant="w/o A_R", backbone="llama")["values"]["Gap"] == 35.5
    assert find(doc, "table4", method="SAG", variant="w/ CTDE")["values"]["Avg"] == 0.8
    assert find(doc, "table4", variant="Meditron")["values"]["Race"] == 7.1
    assert find(doc, "table8", method="SAG", variant="Pre-trained")["values"]["Race"] == 4.9
    assert find(doc, "table5", method="SAG", variant="Pre-trained")["values"]["M-QA/Base"] == 0.92
    assert find(doc, "table5", method="Single, giant LLM", variant="w/ DPO")["values"]["NEJM/Cand"] == 6.83
    assert find(doc, "table7", method="SAG", variant="w/ CTDE")["values"]["NEJM/Cand"] == 0.55
    assert find(doc, "table6", variant="Qwen3-4B (Pre-trained)")["values"]["Latency/Q (s)"] == 58.7
    assert find(doc, "table6", variant="Llama-3-70B")["values"]["Peak Mem (GB)"] == 132.5


def test_garbled_gap_is_kept_as_printed_with_a_note(doc: dict) -> None:
    row = find(doc, "table2", method="Single, giant LLM", variant="w/ PPO", backbone="qwen")
    assert row["values"]["Gap"] == 193
    assert "19.3" in row["note"]


@pytest.mark.parametrize("table", ["table2", "table3"])
def test_gap_is_max_minus_min_where_the_paper_agrees(doc: dict, table: str) -> None:
    disagree = []
    for r in doc["tables"][table]["rows"]:
        accs = [r["values"][c] for c in ACCURACIES]
        if abs(max(accs) - min(accs) - r["values"]["Gap"]) <= 0.05:
            continue
        disagree.append(r)
    # Only Table 2's Qwen "w/ PPO" row (Gap printed "193") disagrees; it is counted, not checked.
    assert len(disagree) == (1 if table == "table2" else 0)
    assert all(r.get("note") for r in disagree)
