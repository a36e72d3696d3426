"""The older SAG runs export (sag-runs-export/1) loaded into SAG tables: outcomes kept as
exported, questions read from the shipped benchmark, refusal scores empty, nothing made up."""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from clinical.questions import load_benchmark
from common.errors import InputError
from common.ledger import Ledger
from sag.runs.old_runs_load import load_old_runs_export
from sag.runs.run_export import read_run_export
from sag.store.tables import SagStore

ROOT = Path(__file__).resolve().parents[3]
OLDER = ROOT / "tests/fixtures/sag_runs_export_before_units"


def test_the_runs_items_and_outcomes_are_loaded_as_exported(tmp_path: Path) -> None:
    export = read_run_export(OLDER)
    load_old_runs_export(OLDER, tmp_path / "raw.duckdb")
    questions = {it.item_id: it.question for it in load_benchmark("medqa")}
    with SagStore(tmp_path / "raw.duckdb") as store:
        runs = store.runs().set_index("run_id")
        assert sorted(runs.index) == sorted(export.run_ids())
        for run_id in export.run_ids():
            got = store.outcomes(run_id).sort_values("item_id").reset_index(drop=True)
            want = export.outcomes_of(run_id).sort_values("item_id").reset_index(drop=True)
            for column in ("answer", "truth", "correct", "rule", "rounds", "model_calls", "prompt_tokens"):
                assert got[column].tolist() == want[column].tolist(), column
            assert got["refusal_score"].isna().all()  # never measured: empty, not 0
            items = store.items(run_id)
            assert items["question"].tolist() == [questions[i] for i in items["item_id"]]
            assert store.messages(run_id, items["item_id"][0]).empty
            assert runs.loc[run_id, "status"] == "finished"
        ledger = Ledger(store)
        assert {r: ledger.run(r).done for r in export.run_ids()} == {r: 3 for r in export.run_ids()}


def _doctored(tmp_path: Path, change: str) -> Path:
    """A copy of the export whose items file was changed and its manifest made to match."""
    folder = tmp_path / "doctored"
    shutil.copytree(OLDER, folder)
    items = pd.read_parquet(folder / "items.parquet")
    if change == "answer":
        items.loc[0, "answer"] = "E" if items.loc[0, "answer"] != "E" else "D"
    else:
        items.loc[0, "item_id"] = "medqa-not-shipped"
    items.to_parquet(folder / "items.parquet", index=False)
    manifest = json.loads((folder / "manifest.json").read_text())
    for entry in manifest["files"]:
        if entry["name"] == "items.parquet":
            data = (folder / "items.parquet").read_bytes()
            entry["sha256"], entry["size_bytes"] = hashlib.sha256(data).hexdigest(), len(data)
    (folder / "manifest.json").write_text(json.dumps(manifest))
    return folder


@pytest.mark.parametrize("change, words", [("answer", "another right answer"), ("id", "is not in the benchmark")])
def test_an_item_unlike_the_shipped_one_refuses_the_export(tmp_path: Path, change: str, words: str) -> None:
    folder = _doctored(tmp_path, change)
    read_run_export(folder)  # the export itself reads: only the item is unlike the shipped one
    with pytest.raises(InputError, match=words) as info:
        load_old_runs_export(folder, tmp_path / "raw.duckdb")
    assert "nothing was imported" in str(info.value)
