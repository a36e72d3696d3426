"""A training export read back into a store: its run row, steps, evaluations and answers.

:func:`import_training_export` reads a ``training-run-export/1`` folder with
:func:`training.export.read_training_export` (the manifest, every file's sha256 and
schema, the adapter files), checks the run's fields and every table's values against
the rules a merge keeps (:mod:`training.merge_checks`), and only then writes the run in
one transaction (:meth:`training.store.TrainingStore.add_whole_run`).  A run the store
already holds is skipped, so importing twice adds nothing; anything missing, changed or
malformed writes nothing and raises one line.

The adapter is not copied: the run's ``adapter_file`` names the export's adapter file
(a trained group's: the export's ``group.json``) and ``adapter_sha256`` the manifest's
sha256 of it, as a finished run names the file it wrote.  The export's command is not
kept (the store has no column for it).  The settings are stored as the run recorded
them: the export adds the steps done as ``steps``, which is left out again unless the
settings hold ``checkpoint_every`` (runs from before the step budget left the recorded
settings kept both).
"""
from __future__ import annotations

import datetime as _dt
import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from common.errors import InputError
from training.export import MANIFEST, TrainingExport, read_training_export
from training.shipped import adapters_dir
from training.store import RUN_COLUMNS, TrainingStore

__all__ = ["import_training_export", "run_row"]

_TEXT = ("run_id", "kind", "method", "base_model", "data_name", "data_hash")
_KEYS = {"steps": ["step"], "evals": ["step", "split"], "answers": ["step", "split", "item_id"]}
_WHOLE, _FINITE, _SHARE = "a non-negative whole number", "a finite number", "a number in [0, 1]"
# the values a merge accepts (training.merge_checks): (table, column, low, high, what it must be)
_RANGES: tuple[tuple[str, str, float | None, float | None, str], ...] = (
    ("steps", "step", 1, None, "a whole number >= 1"),
    *[("steps", c, None, None, _FINITE) for c in ("loss", "reward", "kl")],
    *[("steps", c, 0, 1, _SHARE) for c in ("accuracy", "clipped_share")],
    *[("steps", c, 0, None, "a finite number >= 0") for c in ("items", "tokens", "seconds")],
    *[("evals", c, 0, None, _WHOLE) for c in ("step", "n_items", "n_correct", "n_options")],
    ("evals", "top_letter_share", 0, 1, _SHARE),
    ("answers", "step", 0, None, _WHOLE),
)
_NONEMPTY = (("evals", "split"), ("answers", "split"), ("answers", "item_id"), ("answers", "answer"))


def _fail(where: Path | str, message: str) -> InputError:
    return InputError("export", f"{where}: {message}")


def _outside(values: pd.Series, low: float | None, high: float | None) -> np.ndarray:
    x = values.to_numpy(dtype=float)
    with np.errstate(invalid="ignore"):
        return ~np.isfinite(x) | (x < (-np.inf if low is None else low)) | (x > (np.inf if high is None else high))


def _first(export: TrainingExport, table: str, column: str, bad: np.ndarray, why: str) -> None:
    if bad.any():
        row = int(bad.argmax())
        value = getattr(export, table)[column].iloc[row]
        value = value.item() if isinstance(value, np.generic) else value  # 1.5, not np.float64(1.5)
        raise _fail(export.folder / f"{table}.parquet", f"row {row + 1}: {column} = {value!r} must be {why}")


def _check_tables(export: TrainingExport) -> None:
    """InputError naming the file, row and column of the first value a merge would refuse,
    or the first key held twice."""
    for table, column, low, high, why in _RANGES:
        _first(export, table, column, _outside(getattr(export, table)[column], low, high), why)
    evals = export.evals
    _first(export, "evals", "n_correct", (evals["n_correct"] > evals["n_items"]).to_numpy(dtype=bool),
           "at most n_items")
    for table, column in _NONEMPTY:
        empty = (getattr(export, table)[column].str.strip() == "").to_numpy(dtype=bool)
        _first(export, table, column, empty, "text, not empty")
    for table, key in _KEYS.items():
        twice = getattr(export, table).duplicated(key)
        if twice.any():
            row = getattr(export, table)[twice].iloc[0]
            raise _fail(export.folder / f"{table}.parquet", "holds more than one row for "
                                                            f"({', '.join(str(row[k]) for k in key)})")


def _timestamp(run: dict[str, Any], key: str, where: Path) -> _dt.datetime:
    """The run's date ``key`` (ISO 8601; a time zone is dropped, the store keeps wall time)."""
    try:
        value = _dt.datetime.fromisoformat(run[key]) if isinstance(run[key], str) else None
    except ValueError:
        value = None
    if value is None:
        raise _fail(where, f"run.{key} must be a date and time (ISO 8601), got {run[key]!r}")
    return value.replace(tzinfo=None)


def _settings_json(settings: dict[str, Any]) -> str:
    recorded = settings if "checkpoint_every" in settings else {k: v for k, v in settings.items() if k != "steps"}
    return json.dumps(recorded, sort_keys=True, default=list)


def run_row(export: TrainingExport) -> dict[str, Any]:
    """The ``train_runs`` row of a read export (see the module docstring); InputError
    naming the field the manifest gives wrong."""
    where, run = export.folder / MANIFEST, export.run
    for key in _TEXT:
        if not isinstance(run[key], str) or not run[key].strip() or "\n" in run[key]:
            raise _fail(where, f"run.{key} must be text on one line, got {run[key]!r}")
    if run["status"] != "finished":
        raise _fail(where, f"run.status must be 'finished' (only finished runs are exported), got {run['status']!r}")
    n_train = run["n_train"]
    if not isinstance(n_train, int) or isinstance(n_train, bool) or n_train < 0:
        raise _fail(where, f"run.n_train must be a non-negative whole number, got {n_train!r}")
    if not isinstance(run["settings"], dict):
        raise _fail(where, "run.settings must be an object")
    created, finished = _timestamp(run, "created_at", where), _timestamp(run, "finished_at", where)
    if finished < created:
        raise _fail(where, "run.finished_at is before run.created_at")
    group = export.group_file is not None
    file = export.group_file if group else export.adapter
    sha = export.manifest["group" if group else "adapter"]["sha256"]
    values = {**{k: run[k] for k in _TEXT}, "settings_json": _settings_json(run["settings"]), "n_train": n_train,
              "status": "finished", "created_at": created, "finished_at": finished,
              "adapter_file": str(Path(file).resolve()), "adapter_sha256": sha}
    return {c: values[c] for c in RUN_COLUMNS}


def import_training_export(store: TrainingStore, folder: str | Path, adapters: str | Path | None = None) -> list[str]:
    """Add the run of the export in ``folder`` (its adapters in ``adapters``, the shipped
    adapters' folder by default) to ``store``; the run ids added (none when the store
    already holds the run).  Everything is checked before the one write."""
    export = read_training_export(Path(folder), Path(adapters) if adapters is not None else adapters_dir())
    row = run_row(export)
    _check_tables(export)
    tables = {"steps": export.steps, "evals": export.evals, "answers": export.answers}
    return [row["run_id"]] if store.add_whole_run(row, tables) else []
