"""The shipped training exports: ``data/results/training/<name>/`` with the adapter
``data/adapters/<name>.gguf`` (see :mod:`training.export`)."""
from __future__ import annotations

from pathlib import Path

from common.db import PROJECT_ROOT
from common.table_export import export_folders
from training.export import TrainingExport, check_name, read_training_export

__all__ = ["exports_dir", "adapters_dir", "shipped_exports", "read_shipped"]


def exports_dir() -> Path:
    return PROJECT_ROOT / "data" / "results" / "training"


def adapters_dir() -> Path:
    return PROJECT_ROOT / "data" / "adapters"


def shipped_exports() -> list[Path]:
    """The export folders (those holding a manifest), by name."""
    return export_folders(exports_dir())


def read_shipped(name: str) -> TrainingExport:
    """The shipped export ``name`` (a plain name, as the export command takes: no path, no ``..``)."""
    return read_training_export(exports_dir() / check_name(name), adapters_dir())
