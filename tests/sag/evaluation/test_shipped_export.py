"""The shipped evaluation run: its export, its store, the report and REPRODUCTION.md agree."""
from __future__ import annotations

from pathlib import Path

import pytest

from sag.evaluation.export import load_export
from sag.evaluation.scores import score_evaluation
from sag.evaluation.shipped import companion_store
from sag.runs.store_export import import_store_export
from sag.evaluation.tables import render_report
from sag.store.tables import SagStore

ROOT = Path(__file__).resolve().parents[3]
EXPORT = ROOT / "data" / "results" / "sag_eval_core.json"
STORE = ROOT / "data" / "results" / "sag_eval_core"  # the store's export: every debate and the call log
# each shipped evaluation export: its REPRODUCTION.md block and the heading level it is printed at
SHIPPED = {"sag_eval_core.json": ("sag-eval", 3), "sag_eval_trained.json": ("sag-eval-trained", 5)}


def _block(name: str) -> str:
    text = (ROOT / "REPRODUCTION.md").read_text(encoding="utf-8")
    begin, end = f"<!-- {name}:begin -->", f"<!-- {name}:end -->"
    assert begin in text and end in text, f"REPRODUCTION.md lacks the block {name}"
    return text.split(begin, 1)[1].split(end, 1)[0].strip("\n") + "\n"


def test_every_shipped_evaluation_export_is_printed_in_reproduction() -> None:
    assert sorted(p.name for p in (ROOT / "data" / "results").glob("sag_eval_*.json")) == sorted(SHIPPED)


@pytest.mark.parametrize("file", sorted(SHIPPED))
def test_reproduction_prints_the_report_of_the_shipped_export(file: str) -> None:
    block, level = SHIPPED[file]
    assert _block(block) == render_report(load_export(ROOT / "data" / "results" / file), level=level)


@pytest.mark.parametrize("file", sorted(SHIPPED))
def test_export_metrics_match_its_item_answers(file: str) -> None:
    data = load_export(ROOT / "data" / "results" / file)
    assert data["command"].startswith("python -m sag eval")
    for group, values in data["groups"].items():
        for bench, rate in values["accuracy"].items():
            items = data["answers"][group][f"accuracy/{bench}"]["items"]
            assert rate["n"] == len(items) and rate["k"] == sum(1 for _, a, t in items if a == t), (group, bench)
        for part, key in (("safety/harmful", "hrr"), ("safety/benign", "over_refusal")):
            if values.get("safety"):
                items = data["answers"][group][part]["items"]
                refused = sum(1 for _, a, _ in items if a in ("B", "REFUSE"))
                assert (values["safety"][key]["n"], values["safety"][key]["k"]) == (len(items), refused), (group, key)


def test_the_shipped_store_scores_to_the_export(tmp_path: Path) -> None:
    data = load_export(EXPORT)
    db = tmp_path / "eval.duckdb"
    with SagStore(db) as store:
        assert companion_store(EXPORT) == STORE
        import_store_export(store, STORE, data["eval_id"])
        again = score_evaluation(store, data["eval_id"])
    assert set(again["groups"]) == set(data["groups"])
    for group, values in data["groups"].items():
        for bench, rate in values["accuracy"].items():
            assert again["groups"][group]["accuracy"][bench]["k"] == rate["k"]
        if "fairness" in values:
            assert again["groups"][group]["fairness"]["gender"]["k"] == values["fairness"]["gender"]["k"]
        if values.get("safety", {}).get("roc"):
            assert again["groups"][group]["safety"]["roc"]["auc"] == pytest.approx(values["safety"]["roc"]["auc"])
        for key in ("flops_per_item", "seconds_per_item", "cached_items", "tokens_per_item"):
            assert again["groups"][group]["deployment"][key] == pytest.approx(values["deployment"][key]), (group, key)
        assert again["groups"][group]["fairness"]["dominant"] == values["fairness"]["dominant"]
        assert again["groups"][group]["consistency"]["medqa"]["dominant"] == values["consistency"]["medqa"]["dominant"]


def test_every_shipped_group_has_a_latency_and_counts_every_token() -> None:
    groups = load_export(EXPORT)["groups"]
    for group, values in groups.items():
        dep = values["deployment"]
        assert dep["seconds_per_item"] is not None and dep["seconds_per_item"] > 0, group
        assert dep["timed_items"] == dep["items"], group
        assert dep["tokens_per_item"] > dep["processed_tokens_per_item"], group
    assert groups["sag-10"]["deployment"]["cached_items"] == groups["sag-10"]["deployment"]["items"]
    assert round(groups["single"]["deployment"]["flops_per_item"] / 1e12, 3) == 0.080  # 297 tokens x 134.5M x 2
