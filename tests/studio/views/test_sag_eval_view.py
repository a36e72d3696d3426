"""The Group evaluation page's tables and chart frames, on a small hand-made scored evaluation."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from common.errors import InputError
from sag.group.config import preset
from studio.views.sag_eval_view import (NO_EVAL_HINT, accuracy_frame, check_scored, consistency_points,
                                        items_behind, metric_frames, parts_of, pct, robustness_points, roc_points,
                                        seed_report, size_backbone_points, source_choices, summary_line)


def _rate(k: int, n: int, low: float, high: float, **extra: object) -> dict[str, object]:
    return {"k": k, "n": n, "value": k / n if n else None, "low": low, "high": high, **extra}


def _scored(*, screen: bool = True) -> dict[str, object]:
    single = {
        "config": preset("single").to_dict(), "complete": True,
        "runs": {"accuracy/medqa": "run-s-mqa", "accuracy/medmcqa": "run-s-mcqa", "safety/harmful": "run-s-h",
                 "safety/benign": "run-s-b", "robustness/medqa/ling": "run-s-ling"},
        "accuracy": {"medqa": _rate(1, 4, 0.046, 0.699, run_id="run-s-mqa"),
                     "medmcqa": _rate(3, 4, 0.301, 0.954, run_id="run-s-mcqa")},
        "gap": 0.5,
        "relevance": {"accuracy": _rate(1, 2, 0.095, 0.905), "supported": _rate(0, 2, 0.0, 0.658),
                      "grounded": _rate(2, 2, 0.342, 1.0), "bleu4": 1.234},
        "fairness": {"gender": {**_rate(1, 4, 0.046, 0.699), "flipped": ["medqa-0007"]},
                     "race": {**_rate(0, 4, 0.0, 0.49), "flipped": []}, "average": 0.125,
                     "dominant": {"answer": "D", "k": 14, "n": 16, "share": 0.875, "flagged": True}},
        "safety": {"hrr": _rate(2, 2, 0.342, 1.0), "over_refusal": _rate(1, 2, 0.095, 0.905),
                   "hrr_refuse_only": _rate(0, 2, 0.0, 0.658), "over_refusal_refuse_only": _rate(0, 2, 0.0, 0.658),
                   "roc": {"fpr": [0.0, 0.5, 1.0], "tpr": [0.0, 1.0, 1.0], "thresholds": [None, 0.8, 0.2],
                           "auc": 0.75}},
        "robustness": {"medqa": {"clean": _rate(1, 4, 0.046, 0.699), "ling": _rate(2, 4, 0.15, 0.85),
                                 "adv": _rate(0, 4, 0.0, 0.49), "followed_distractor": _rate(3, 4, 0.3, 0.95)}},
        "consistency": {"medqa": {"base": {"accuracies": [50.0, 25.0], "std": 17.68, "runs": 2},
                                  "temp": {"accuracies": [50.0], "std": None, "runs": 1},
                                  "top_p": {"accuracies": [50.0, 50.0], "std": 0.0, "runs": 2},
                                  "cand": {"accuracies": [], "std": None, "runs": 0},
                                  "cr": {"k": 3, "items": 2, "value": 0.8333},
                                  "dominant": {"answer": "B", "k": 5, "n": 10, "share": 0.5, "flagged": False}}},
        "deployment": {"items": 8, "timed_items": 8, "cached_items": 3, "seconds_per_item": 1.5, "tokens_per_item": 420.4,
                       "processed_tokens_per_item": 400.0, "flops_per_item": 2.7e11, "peak_rss_mb": 512.3,
                       "weights_mb": 270.0, "peak_rss_one_copy_per_agent_mb": 512.3}}
    mixed = {"config": preset("sag-6-mixed").to_dict(), "complete": False, "runs": {"accuracy/medqa": "run-m-mqa"},
             "accuracy": {"medqa": _rate(2, 4, 0.15, 0.85, run_id="run-m-mqa"), "medmcqa": _rate(0, 0, None, None)},
             "gap": None, "robustness": {}, "consistency": {}, "deployment": {}}
    out: dict[str, object] = {
        "eval_id": "core-n4-c2", "spec": {"suite": "core", "n_items": 4},
        "groups": {"single": single, "sag-6-mixed": mixed},
        "answers": {"single": {"accuracy/medqa": {"run_id": "run-s-mqa", "items": [
            ["medqa-0001", "B", "B"], ["medqa-0002", "REFUSE", "C"], ["medqa-0003", "A", "D"]]}}}}
    if screen:
        out["screen"] = {"name": "learned screen", "hrr": _rate(1, 2, 0.095, 0.905),
                         "over_refusal": _rate(0, 2, 0.0, 0.658),
                         "roc": {"fpr": [0.0, 1.0], "tpr": [0.0, 1.0], "thresholds": [None, 0.1], "auc": 0.5}}
    return out


def test_pct_formats_a_rate_with_its_interval() -> None:
    assert pct(_rate(1, 4, 0.046, 0.699)) == "25.0 % (5-70)"
    assert pct(_rate(1, 4, 0.046, 0.699), interval=False) == "25.0 %"
    assert pct(_rate(0, 0, None, None)) == "-" and pct(None) == "-"
    assert pct({"k": 1, "n": 2, "value": math.nan, "low": 0.1, "high": 0.9}) == "-"


def test_accuracy_frame_has_a_row_per_group_and_the_gap() -> None:
    frame = accuracy_frame(_scored())
    assert list(frame.columns) == ["group", "M-QA", "MCQA", "Gap (points)", "finished"]
    assert list(frame["group"]) == ["single", "sag-6-mixed"]
    assert frame.iloc[0].tolist() == ["single", "25.0 % (5-70)", "75.0 % (30-95)", "50.0", "yes"]
    assert frame.iloc[1].tolist() == ["sag-6-mixed", "50.0 % (15-85)", "-", "-", "not yet"]


def test_metric_frames_read_every_axis() -> None:
    frames = metric_frames(_scored())
    assert set(frames) == {"relevance", "fairness", "safety", "robustness", "consistency", "deployment"}
    assert frames["relevance"].iloc[0].tolist() == ["single", "50.0 % (10-90)", "0.0 % (0-66)", "100.0 % (34-100)",
                                                    "1.23"]
    fair = frames["fairness"].iloc[0]
    assert (fair["gender CDR"], fair["average CDR"], fair["flipped by gender"], fair["flipped by race"]) == \
        ("25.0 % (5-70)", "12.5 %", "medqa-0007", "-")
    safety = frames["safety"]
    assert list(safety["group"]) == ["single", "learned screen"]  # the group without safety has no row
    assert safety.iloc[0]["ROC AUC"] == "0.75" and safety.iloc[1]["HRR, REFUSE only"] == "-"
    rob = frames["robustness"].iloc[0]
    assert (rob["benchmark"], rob["clean"], rob["distractor"], rob["chose the distractor's option"]) == \
        ("medqa", "25.0 % (5-70)", "0.0 % (0-49)", "75.0 % (30-95)")
    cons = frames["consistency"].iloc[0]
    assert [cons[f"std {s} (points)"] for s in ("Base", "Temp", "Top-p", "Cand")] == ["17.68", "-", "0.00", "-"]
    assert cons["consensus rate (CR)"] == "0.83 (k=3, 2 items)"
    assert fair[["most frequent answer (share)", "flag"]].tolist() == ["D (88 %)", "one answer > half"]
    assert cons[["most frequent answer (share)", "flag"]].tolist() == ["B (50 %)", "-"]  # half is not more
    dep = frames["deployment"]
    assert len(dep) == 1 and dep.iloc[0][["seconds/item", "tokens/item", "TFLOPs/item", "peak memory"]].tolist() == \
        ["1.50 s", "420", "0.270", "512 MB"]
    assert dep.iloc[0]["items with turns from the call log"] == "3"


def test_missing_axes_give_empty_tables() -> None:
    scored = {"eval_id": "acc", "groups": {"single": {"accuracy": {}, "runs": {}}}}
    frames = metric_frames(scored)
    assert all(f.empty for f in frames.values())
    assert "HRR, REFUSE only" in frames["safety"].columns
    assert roc_points(scored).empty and robustness_points(scored).empty and consistency_points(scored).empty
    assert size_backbone_points(scored).empty


def test_roc_points_add_the_learned_screen() -> None:
    points = roc_points(_scored())
    assert list(points.columns) == ["group", "fpr", "tpr", "auc"]
    assert list(points["group"]) == ["single"] * 3 + ["learned screen"] * 2
    assert points[points["group"] == "single"]["tpr"].tolist() == [0.0, 1.0, 1.0]
    assert list(roc_points(_scored(screen=False))["group"].unique()) == ["single"]


def test_robustness_and_consistency_points_are_long_frames() -> None:
    rob = robustness_points(_scored())
    assert rob["condition"].tolist() == ["clean", "linguistic noise", "distractor"]
    assert rob["accuracy"].tolist() == [25.0, 50.0, 0.0]
    assert rob.iloc[0]["low"] == pytest.approx(4.6) and rob.iloc[0]["high"] == pytest.approx(69.9)
    cons = consistency_points(_scored())
    assert cons.values.tolist() == [["single", "medqa", "Base", 17.68], ["single", "medqa", "Top-p", 0.0]]
    # Temp (one run) and Cand (none) have no std


def test_size_and_backbone_of_each_group() -> None:
    points = size_backbone_points(_scored()).set_index("group")
    assert points.loc["single", "agents"] == 1 and points.loc["single", "backbone"] == "smollm2-135m"
    assert points.loc["single", "accuracy"] == pytest.approx(50.0)  # 4 of 8 items
    assert points.loc["single", "low"] < 50.0 < points.loc["single", "high"]
    assert points.loc["sag-6-mixed", "agents"] == 6 and points.loc["sag-6-mixed", "backbone"] == "mixed"
    assert points.loc["sag-6-mixed", "accuracy"] == pytest.approx(50.0)  # the unanswered benchmark is left out
    odd = {"groups": {"g": {"config": {"method": "sag", "counts": [2, 1, 1, 1], "backbones": ["x"] * 4,
                                       "unknown": 1}, "accuracy": {"medqa": _rate(1, 2, 0.1, 0.9)}}}}
    assert size_backbone_points(odd).iloc[0][["agents", "backbone"]].tolist() == [5, "x"]


def test_items_behind_a_number() -> None:
    scored = _scored()
    items = items_behind(scored, "single", "accuracy/medqa")
    assert list(items.columns) == ["item_id", "answer", "truth", "correct"]
    assert items["item_id"].tolist() == ["medqa-0001", "medqa-0002", "medqa-0003"]
    assert items["correct"].tolist() == [True, False, False]
    assert items_behind(scored, "single", "safety/harmful").empty
    assert items_behind(scored, "nobody", "accuracy/medqa").empty
    assert parts_of(scored, "single", ("safety/",)) == ["safety/harmful", "safety/benign"]
    assert len(parts_of(scored, "single")) == 5 and parts_of(scored, "nobody") == []


def test_source_choices_list_the_store_then_the_files() -> None:
    stored = pd.DataFrame({"eval_id": ["core-n4-c2"], "groups": [2], "parts": [30], "items": [120],
                           "answered": [90], "last_change": [pd.Timestamp("2024-01-01")]})
    choices = source_choices(stored, ["/some/folder/sag_eval_core.json"])
    assert choices == {"db:core-n4-c2": "stored: core-n4-c2 · 2 group(s) · 90/120 items answered",
                       "file:/some/folder/sag_eval_core.json": "file: sag_eval_core.json"}
    assert source_choices(stored.iloc[:0], []) == {}
    assert "python -m sag eval --suite core --groups single,vote-6,sag-6 --items 10" in NO_EVAL_HINT


def test_check_summary_and_seed_report() -> None:
    scored = _scored()
    assert check_scored(scored) is scored
    for bad in ([], {"groups": []}, {"groups": {"g": 3}}, {"groups": {}}):
        with pytest.raises(InputError):
            check_scored(bad)
    line = summary_line(scored)
    assert line.startswith("Evaluation core-n4-c2: suite core, 4 item(s) per subset, groups single, sag-6-mixed.")
    assert "Not finished yet (numbers cover the items answered so far): sag-6-mixed." in line
    assert seed_report(scored).startswith("# SAG evaluation core-n4-c2")
    with pytest.raises(InputError, match="seed comparison"):
        seed_report({"eval_id": "x", "groups": {"g": {"complete": True}}})


def test_the_refusal_reading_gives_the_caveat_of_a_group_that_refuses_everything() -> None:
    from studio.views.sag_eval_view import refusal_reading

    everything = refusal_reading({"hrr": _rate(10, 10, 0.7, 1.0), "over_refusal": _rate(8, 10, 0.5, 0.9)})
    assert everything.startswith("refuses 80 % of benign requests too") and "100 % of harmful" in everything
    assert "no separation" in refusal_reading({"hrr": _rate(3, 10, 0.1, 0.6), "over_refusal": _rate(2, 10, 0.1, 0.5)})
    assert "60 points more often" in refusal_reading({"hrr": _rate(7, 10, 0.4, 0.9),
                                                      "over_refusal": _rate(1, 10, 0.0, 0.4)})
    assert refusal_reading({}) == "-"
    assert refusal_reading({"hrr": _rate(0, 10, 0.0, 0.3), "over_refusal": _rate(0, 10, 0.0, 0.3)}).startswith(
        "refuses almost nothing")
    assert "reading" in metric_frames(_scored())["safety"].columns
