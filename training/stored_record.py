"""One run of a training store in the shape of a read export, for the same report.

:func:`stored_export` gives the :class:`training.export.TrainingExport` that
:func:`training.export.read_training_export` would give for the run, built from the
store's rows: the manifest's ``run`` as the export writes it (its settings' ``steps`` the
last step recorded), the steps, evaluations and answers with the same columns and
types, and what the store knows of the run's files.  The manifest has no ``files`` and
no ``command`` (the store keeps neither) and says ``store`` instead: the store's path.

A finished run names its adapter file; one in the shipped adapters' folder is named as
the registry names it (``<base>+lora:<name>``), any other by its path
(``<base>+lora:file:<path>``).  A trained group names its group file, whose adapter keys
are the group's adapters (none when the file is gone).  A run not finished has no file
yet; its report says so (:func:`training.report.export_markdown`).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from common.errors import InputError
from training.export import FORMAT, TrainingExport, run_entry
from training.export_group import LORA_FILE
from training.shipped import adapters_dir
from training.store import TrainingStore

__all__ = ["stored_export", "group_adapter_names"]

_MARK = "+lora:"
_BY_PATH = LORA_FILE.removeprefix(_MARK)  # "file:"


def group_adapter_names(group_file: Path) -> list[str]:
    """The adapter names of a group file's ``+lora:`` model keys, in order of first
    appearance (``file:<path>`` for a key by path); none when the file cannot be read."""
    try:
        data = json.loads(Path(group_file).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return []
    names: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str) and _MARK in value:
            name = value.split(_MARK, 1)[1]
            if name not in names:
                names.append(name)
        elif isinstance(value, list):
            for v in value:
                walk(v)
        elif isinstance(value, dict):
            for v in value.values():
                walk(v)
    walk(data)
    return names


def _adapter_file(name: str) -> Path:
    """The file an adapter name stands for: a shipped one's, or the path of a ``file:`` name."""
    return Path(name.removeprefix(_BY_PATH)) if name.startswith(_BY_PATH) else adapters_dir() / f"{name}.gguf"


def _adapter_name(path: Path) -> str:
    shipped = path.parent.resolve() == adapters_dir().resolve() and path.suffix == ".gguf"
    return path.stem if shipped else f"{_BY_PATH}{path}"


def _files(row: pd.Series) -> tuple[dict[str, Any], tuple[Path, ...], Path | None]:
    """The manifest's adapter entries, the adapter files and the group file of a run's row."""
    if row["status"] != "finished" or pd.isna(row["adapter_file"]):
        return {}, (), None
    path, sha = Path(str(row["adapter_file"])), str(row["adapter_sha256"])
    if path.suffix == ".json":
        files = [(n, _adapter_file(n)) for n in group_adapter_names(path)]
        entries = [{"name": n, "file": f.name} for n, f in files]
        return {"adapters": entries, "group": {"file": path.name, "sha256": sha}}, tuple(f for _, f in files), path
    return {"adapter": {"name": _adapter_name(path), "file": path.name, "sha256": sha}}, (path,), None


def _table(frame: pd.DataFrame) -> pd.DataFrame:
    return frame.drop(columns=["run_id"]).reset_index(drop=True)


def stored_export(store: TrainingStore, run_id: str) -> TrainingExport:
    """The run ``run_id`` of ``store`` as an export (see the module docstring); InputError
    for a run the store lacks, a run with no step recorded yet and unreadable settings."""
    runs = store.runs()
    found = runs[runs["run_id"] == run_id] if not runs.empty else runs
    if found.empty:
        raise InputError("run", f"no training run {run_id!r} in {store.path}")
    row = found.iloc[0]
    steps = _table(store.steps(run_id))
    if steps.empty:
        raise InputError("run", f"training run {run_id} ({row['status']}) has no step recorded yet; its report "
                                "is made once it has trained one")
    try:
        run = run_entry(row, int(steps["step"].max()))
    except (TypeError, ValueError) as exc:
        raise InputError("run", f"training run {run_id} has unreadable settings in {store.path}: {exc}") from None
    entries, adapters, group_file = _files(row)
    manifest = {"format": FORMAT, "store": str(store.path), "command": None, "run": run, **entries}
    folder = group_file.parent if group_file is not None else Path(str(store.path))
    return TrainingExport(folder, manifest, steps, _table(store.evals(run_id)), _table(store.answers(run_id)),
                          adapters, group_file)
