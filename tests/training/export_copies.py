"""What the import, store-report and merge tests share: a copy of a shipped export and a
whole training store read back as rows."""
from __future__ import annotations

import shutil
from pathlib import Path

from training.shipped import exports_dir
from training.store import TrainingStore

__all__ = ["copy_export", "dump", "TABLES"]

TABLES = ("train_runs", "train_steps", "train_evals", "train_answers")


def copy_export(name: str, into: Path) -> Path:
    """A copy of the shipped export ``name`` in ``into`` (its adapters stay where they are shipped)."""
    return Path(shutil.copytree(exports_dir() / name, into / name))


def dump(db: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every row of the training tables of the store file ``db``, sorted."""
    with TrainingStore(db, read_only=True) as store:
        return {t: store.con.execute(f"SELECT * FROM {t} ORDER BY ALL").fetchall() for t in TABLES}
