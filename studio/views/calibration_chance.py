"""Is an agent's calibration at chance level?

An agent whose reports carry no information about the true label has, in expectation, a
per-class recall of 1/K for every class, so its balanced accuracy (the mean of its
calibration confusion matrix's diagonal, rows = true label) is 1/K.  With n calibration
cases the balanced accuracy of such an agent varies by about sqrt(p (1 - p) / n) around
p = 1/K.  The check calls an agent **at chance level** when its balanced accuracy is at
most ``1/K + CHANCE_Z`` standard errors (:func:`chance_band`); when n is unknown the band
is :data:`UNKNOWN_N_BAND`.  The mediator then learns next to nothing from that agent: its
posteriors stay close to the prior.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from dcem.store.database import Store
from dcem.store.run_reads import cell_confusions

__all__ = ["CHANCE_Z", "UNKNOWN_N_BAND", "ChanceCheck", "chance_band", "chance_checks", "calibration_size",
           "run_chance_warnings"]

CHANCE_Z = 2.0
"""Standard errors above 1/K within which a balanced accuracy counts as chance level."""
UNKNOWN_N_BAND = 0.05
"""The band above 1/K used when the number of calibration cases is not stored."""


def chance_band(k: int, n_cases: int | None, z: float = CHANCE_Z) -> float:
    """How far above 1/K a no-information agent's balanced accuracy may lie by noise."""
    if not n_cases or n_cases <= 0:
        return UNKNOWN_N_BAND
    p = 1.0 / k
    return z * math.sqrt(p * (1.0 - p) / n_cases)


@dataclass(frozen=True)
class ChanceCheck:
    """One agent's balanced calibration accuracy against chance 1/K."""

    agent: int
    name: str
    balanced_accuracy: float
    k: int
    band: float
    n_cases: int | None

    @property
    def chance(self) -> float:
        return 1.0 / self.k

    @property
    def at_chance(self) -> bool:
        return self.balanced_accuracy <= self.chance + self.band


def chance_checks(confusion: np.ndarray, n_cases: int | None, names: Sequence[str] = (),
                  z: float = CHANCE_Z) -> list[ChanceCheck]:
    """One :class:`ChanceCheck` per agent of a calibration confusion array (A, K, K),
    rows = true label (each row is normalised here, so counts work too)."""
    conf = np.asarray(confusion, dtype=float)
    k = conf.shape[-1]
    rows = conf / np.clip(conf.sum(axis=-1, keepdims=True), 1e-12, None)
    band = chance_band(k, n_cases, z)
    out = []
    for a in range(conf.shape[0]):
        name = names[a] if a < len(names) else f"Agent {a + 1}"
        out.append(ChanceCheck(a, name, float(np.mean(np.diagonal(rows[a]))), k, band, n_cases))
    return out


def calibration_size(info: Mapping[str, object]) -> int | None:
    """The number of calibration cases a cell's info records (``n_cal`` of a clinical
    run, ``n_estimation`` of a synthetic one), or None."""
    for key in ("n_cal", "n_estimation"):
        value = info.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            return int(value)
    return None


def _names(info: Mapping[str, object]) -> list[str]:
    agents = info.get("agents")
    if not isinstance(agents, list):
        return []
    return [str(a.get("name")) if isinstance(a, dict) and a.get("name") else f"Agent {i + 1}"
            for i, a in enumerate(agents)]


def _sentence(name: str, checks: list[tuple[str, ChanceCheck]], total: int) -> str:
    cell, first = checks[0]
    n = f"{first.n_cases} calibration cases" if first.n_cases else "an unknown number of calibration cases"
    where = f"cell {cell}" if total == 1 else f"{len(checks)} of {total} cells (first: {cell})"
    return (f"{name} is at chance level on calibration in {where}: its mean per-class recall is "
            f"{first.balanced_accuracy:.2f}, within noise of chance 1/{first.k} = {first.chance:.3f} "
            f"(band +{first.band:.2f}, {CHANCE_Z:g} standard errors over {n}). Its reports tell the mediator "
            "next to nothing; its posteriors stay close to the prior.")


def run_chance_warnings(store: Store, run_id: str) -> list[str]:
    """One sentence per agent that is at chance level in some cell of the run (empty
    when every agent beats chance)."""
    rows = cell_confusions(store, run_id)
    flagged: dict[str, list[tuple[str, ChanceCheck]]] = {}
    for scenario, seed, confusion, info_json in rows:
        try:
            info = json.loads(info_json) if info_json else {}
        except ValueError:
            info = {}
        info = info if isinstance(info, dict) else {}
        for check in chance_checks(np.asarray(confusion, dtype=float), calibration_size(info), _names(info)):
            if check.at_chance:
                flagged.setdefault(check.name, []).append((f"{scenario} seed {seed}", check))
    return [_sentence(name, checks, len(rows)) for name, checks in flagged.items()]
