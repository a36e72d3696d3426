"""Every kind of run this version knows, loaded into the registry (:mod:`common.run_kinds`).

Each kind registers itself in its own package; this module imports them, so the command
line and the pages see every kind: ``synthetic`` (:mod:`dcem.analysis.run_kind`),
``clinical`` (:mod:`dcem_clinical.run_kind`), ``sag`` (:mod:`sag.runs.run_kind`) and ``training``
(:mod:`training.run_kind`).
"""
from __future__ import annotations

import importlib

from common.run_kinds import RunKind, run_kinds

__all__ = ["KIND_MODULES", "load_kinds"]

KIND_MODULES = ("dcem.analysis.run_kind", "dcem_clinical.run_kind", "sag.runs.run_kind", "training.run_kind")


def load_kinds() -> dict[str, RunKind]:
    """Every registered kind, by name, once each kind's module is imported."""
    for module in KIND_MODULES:
        importlib.import_module(module)
    return run_kinds()
