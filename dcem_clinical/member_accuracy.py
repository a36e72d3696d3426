"""The accuracy table of ``docs/clinical_members.md``: each member's CAL and TEST accuracy
on seed 0's split, whole case and partial views, and how often exactly one of two members
is right on TEST.  ``scripts/member_accuracy.py`` prints the rows.

Statistical members are refit here (no model runs): fit on CAL as a cell fits them (folds
drawn by ``numpy.random.default_rng(seed)``; CAL accuracy out-of-fold), TEST answered by
the model fit on all of CAL.  The trained diagnostician's row is read from the shipped
trio export for the view it plays there (its round-1 answers in the S1 cell of seed 0:
CAL accuracy as the cell recorded it, TEST the answers its turns stored); its other views
need model runs (``python -m dcem_clinical run ... --agents MODEL@VIEW --t-max 1``).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from clinical.datasets import ClinicalCase, ClinicalDataset, load_dataset
from dcem_clinical.stat_agent import case_documents
from dcem_clinical.stat_model import fit_stat_model

__all__ = ["ViewAccuracy", "stat_accuracy", "one_right", "trio_member_accuracy", "table_row"]


@dataclass(frozen=True)
class ViewAccuracy:
    """One member reading one view: CAL (out-of-fold) and TEST accuracy, and whether it was
    right on each TEST case (in the split's order)."""

    view: str
    cal: float
    test: float
    right: tuple[bool, ...]


@lru_cache(maxsize=4)
def _dataset(name: str) -> ClinicalDataset:
    return load_dataset(name)


def _split(dataset: str, n_cal: int, n_test: int, seed: int) -> tuple[list[ClinicalCase], list[ClinicalCase]]:
    cal, test, _ = _dataset(dataset).split(seed, n_cal, n_test)
    return cal, test


def stat_accuracy(dataset: str, kind: str, view: str, n_cal: int, n_test: int, seed: int = 0) -> ViewAccuracy:
    """A statistical member ``kind`` reading ``view`` on the split of ``seed``."""
    cal, test = _split(dataset, n_cal, n_test, seed)
    n_labels = len(_dataset(dataset).labels)
    fitted = fit_stat_model(kind, [c.source_id for c in cal], case_documents(kind, cal, view), [c.label for c in cal],
                            n_labels, np.random.default_rng(seed))
    right = fitted.predict(case_documents(kind, test, view)).argmax(1) == np.array([c.label for c in test])
    return ViewAccuracy(view, fitted.oof_accuracy, float(right.mean()), tuple(bool(r) for r in right))


def one_right(a: ViewAccuracy, b: ViewAccuracy) -> float:
    """The share of TEST cases on which exactly one of the two members is right."""
    return float(np.mean(np.array(a.right) != np.array(b.right)))


def trio_member_accuracy(export: Path, agent: int, n_test: int, seed: int = 0,
                         scenario: str = "S1") -> ViewAccuracy:
    """Member ``agent`` of a shipped clinical export in the cell (``scenario``, ``seed``): its
    recorded CAL accuracy and its round-1 answers on the cell's TEST cases, in split order."""
    cells = pd.read_parquet(export / "cells.parquet", columns=["scenario", "seed", "info_json"])
    cell = cells[(cells["scenario"] == scenario) & (cells["seed"] == seed)]
    info = json.loads(cell["info_json"].iloc[0])
    cases = pd.read_parquet(export / "cases.parquet", columns=["case_id", "scenario", "seed", "truth", "source_id"])
    prefix = f"{scenario}-s{seed}-test-"
    test = cases[(cases["scenario"] == scenario) & (cases["seed"] == seed) & cases["case_id"].str.startswith(prefix)]
    turns = pd.read_parquet(export / "turns.parquet", columns=["case_id", "method", "round", "agent", "label"])
    mine = turns[(turns["method"] == "dcem") & (turns["round"] == 1) & (turns["agent"] == agent)]
    answers = mine.drop_duplicates("case_id").set_index("case_id")["label"]
    cal, split_test = _split(info["dataset"], int(info["n_cal"]), n_test, seed)
    order = [f"{prefix}{c.source_id}" for c in split_test]
    truth = test.set_index("case_id")["truth"].reindex(order)
    right = (answers.reindex(order) == truth).to_numpy()
    views = info.get("views") or []
    return ViewAccuracy(views[agent] if views else "all", float(info["calibration_accuracy"][agent]),
                        float(right.mean()), tuple(bool(r) for r in right))


def table_row(name: str, n_cal: int, n_test: int, views: Sequence[ViewAccuracy],
              pairs: Sequence[tuple[str, ViewAccuracy, ViewAccuracy]]) -> str:
    """One Markdown row of the table: the whole case ("all"), the partial views, "one right"."""
    def pair(v: ViewAccuracy) -> str:
        return f"{v.cal:.3f} / {v.test:.3f}"

    whole = next((v for v in views if v.view == "all"), None)
    parts = ", ".join(f"{v.view} {pair(v)}" for v in views if v.view != "all")
    ones = ", ".join(f"{label} {one_right(a, b):.3f}" for label, a, b in pairs)
    return f"| {name} | {n_cal} / {n_test} | {pair(whole) if whole else ''} | {parts} | {ones} |"
