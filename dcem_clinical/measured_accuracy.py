"""How well each language model answers, measured: its calibration accuracy in the shipped
clinical runs (``data/results/dcem_clinical*``), for the Models page to show beside a test
prompt's answer.

Each shipped cell records, per agent, its model file and its accuracy on the cell's
calibration cases (``info_json``: ``agents``, ``calibration_accuracy``, ``n_cal``).
Accuracies are pooled over cells, weighted by their calibration cases, per model and view:
the whole case (what a test prompt gives a model) apart from a member given one view of it
(in a panel of views it answers another question), which the note names with its runs.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from common.db import PROJECT_ROOT
from common.table_export import export_folders

__all__ = ["Measured", "shipped_accuracy", "shipped_view_accuracy", "measured_text", "RESULTS"]

RESULTS = PROJECT_ROOT / "data" / "results"


@dataclass(frozen=True)
class Measured:
    """A model's pooled calibration accuracy on one dataset."""

    accuracy: float
    answers: int
    cells: int
    chance: float
    runs: tuple[str, ...] = ()  # the shipped exports it was measured in


WHOLE = "whole"


def _cells(results: Path) -> list[tuple[str, pd.DataFrame]]:
    folders = [f for f in export_folders(results) if f.name.startswith("dcem_clinical") and (f / "cells.parquet").exists()]
    return [(f.name, pd.read_parquet(f / "cells.parquet", columns=["labels", "info_json"])) for f in folders]


def _pooled(dataset: str, results: Path) -> dict[tuple[str, str], Measured]:
    """(model file, view) -> pooled calibration accuracy; the whole case is :data:`WHOLE`."""
    right: dict[tuple[str, str], float] = {}
    asked: dict[tuple[str, str], int] = {}
    cells: dict[tuple[str, str], int] = {}
    chance: dict[tuple[str, str], float] = {}
    runs: dict[tuple[str, str], list[str]] = {}
    for folder, frame in _cells(results):
        for labels, text in zip(frame["labels"], frame["info_json"]):
            info = json.loads(text)
            if info.get("dataset") != dataset or info.get("mode") != "scored":
                continue
            views = info.get("views") or [None] * len(info.get("agents", []))
            for agent, view, acc in zip(info.get("agents", []), views, info.get("calibration_accuracy", [])):
                if agent.get("backend") != "llama.cpp":
                    continue
                key = (str(agent.get("model")), WHOLE if view in (None, "all", WHOLE) else str(view))
                n = int(info.get("n_cal", 0))
                right[key] = right.get(key, 0.0) + float(acc) * n
                asked[key] = asked.get(key, 0) + n
                cells[key] = cells.get(key, 0) + 1
                chance[key] = 1.0 / len(labels)
                if folder not in runs.setdefault(key, []):
                    runs[key].append(folder)
    return {k: Measured(right[k] / asked[k], asked[k], cells[k], chance[k], tuple(runs[k])) for k in right if asked[k]}


def shipped_accuracy(dataset: str = "ddxplus8", results: Path = RESULTS) -> dict[str, Measured]:
    """Model file (``file.gguf`` or ``base.gguf+lora:adapter.gguf``) -> its pooled
    whole-case calibration accuracy on ``dataset`` over the shipped clinical runs."""
    return {model: m for (model, view), m in _pooled(dataset, results).items() if view == WHOLE}


def shipped_view_accuracy(dataset: str = "ddxplus8", results: Path = RESULTS) -> dict[str, dict[str, Measured]]:
    """Model file -> view -> its pooled calibration accuracy reading only that view of each
    case, over the shipped clinical runs."""
    out: dict[str, dict[str, Measured]] = {}
    for (model, view), m in _pooled(dataset, results).items():
        if view != WHOLE:
            out.setdefault(model, {})[view] = m
    return out


def measured_text(key: str, model_file: str, measured: dict[str, Measured], dataset: str = "DDXPlus-8",
                  views: dict[str, dict[str, Measured]] | None = None) -> str:
    """One sentence: the model's measured accuracy beside chance, or that none is shipped
    for the whole case, with the views of the case shipped runs measured it on."""
    found = measured.get(model_file)
    if found is None:
        parts = [f"the {view} view in {', '.join(m.runs)}: right on {m.accuracy:.1%} of {m.answers} calibration "
                 f"answers over {m.cells} cells (chance {m.chance:.1%})"
                 for view, m in sorted((views or {}).get(model_file, {}).items())]
        if parts:
            return (f"No shipped run measures {key} on {dataset} reading the whole case, as this test prompt gives "
                    f"it. Shipped runs measure it on one part of each case: {'; '.join(parts)}. Those numbers "
                    "are for that part, not for a whole case.")
        return (f"No shipped run measures {key} on {dataset} reading the whole case, so this answer has no "
                "measured accuracy beside it.")
    return (f"Measured: {key} is right on {found.accuracy:.1%} of {dataset} calibration cases in the shipped runs "
            f"({found.answers} answers over {found.cells} cells, whole case read, prompted as those runs did, some "
            f"with solved examples; chance is {found.chance:.1%}). "
            "One answer here says little beside that.")
