"""How well each language model answers, measured: its calibration accuracy in the shipped
clinical runs (``data/results/dcem_clinical*``), for the Models page to show beside a test
prompt's answer.

Each shipped cell records, per agent, its model file and its accuracy on the cell's
calibration cases (``info_json``: ``agents``, ``calibration_accuracy``, ``n_cal``).  Only
agents that read the whole case count (a member given one view of it, in a panel of
views, answers another question); accuracies are pooled over cells, weighted by their
calibration cases.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from common.db import PROJECT_ROOT
from common.table_export import export_folders

__all__ = ["Measured", "shipped_accuracy", "measured_text", "RESULTS"]

RESULTS = PROJECT_ROOT / "data" / "results"


@dataclass(frozen=True)
class Measured:
    """A model's pooled calibration accuracy on one dataset."""

    accuracy: float
    answers: int
    cells: int
    chance: float


def _cells(results: Path) -> list[pd.DataFrame]:
    folders = [f for f in export_folders(results) if f.name.startswith("dcem_clinical") and (f / "cells.parquet").exists()]
    return [pd.read_parquet(f / "cells.parquet", columns=["labels", "info_json"]) for f in folders]


def shipped_accuracy(dataset: str = "ddxplus8", results: Path = RESULTS) -> dict[str, Measured]:
    """Model file (``file.gguf`` or ``base.gguf+lora:adapter.gguf``) -> its pooled
    whole-case calibration accuracy on ``dataset`` over the shipped clinical runs."""
    right: dict[str, float] = {}
    asked: dict[str, int] = {}
    cells: dict[str, int] = {}
    chance: dict[str, float] = {}
    for frame in _cells(results):
        for labels, text in zip(frame["labels"], frame["info_json"]):
            info = json.loads(text)
            if info.get("dataset") != dataset or info.get("mode") != "scored":
                continue
            views = info.get("views") or [None] * len(info.get("agents", []))
            for agent, view, acc in zip(info.get("agents", []), views, info.get("calibration_accuracy", [])):
                if agent.get("backend") != "llama.cpp" or view not in (None, "whole"):
                    continue
                model, n = str(agent.get("model")), int(info.get("n_cal", 0))
                right[model] = right.get(model, 0.0) + float(acc) * n
                asked[model] = asked.get(model, 0) + n
                cells[model] = cells.get(model, 0) + 1
                chance[model] = 1.0 / len(labels)
    return {m: Measured(right[m] / asked[m], asked[m], cells[m], chance[m]) for m in right if asked[m]}


def measured_text(key: str, model_file: str, measured: dict[str, Measured], dataset: str = "DDXPlus-8") -> str:
    """One sentence: the model's measured accuracy beside chance, or that none is shipped."""
    found = measured.get(model_file)
    if found is None:
        return (f"No shipped run measures {key} on {dataset} reading the whole case, so this answer has no "
                "measured accuracy beside it.")
    return (f"Measured: {key} is right on {found.accuracy:.1%} of {dataset} calibration cases in the shipped runs "
            f"({found.answers} answers over {found.cells} cells, whole case read, prompted as those runs did, some "
            f"with solved examples; chance is {found.chance:.1%}). "
            "One answer here says little beside that.")
