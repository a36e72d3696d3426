"""Importing every shipped export into one fresh store with the one import
(``python -m studio runs import``, :func:`common.run_export.import_runs_export`), against
each format's own import where it has one (a D-CEM run export's ``import_run_export``, a SAG
store export's ``import_store_export``, a training export's ``import_training_export``),
each into a fresh store of its own, in one run, and what the ledger then lists:

    .venv/bin/python benchmarks/runs_import.py

Prints one row per export: rows brought in, seconds of each import and their ratio, then the
runs per kind the one store lists.  Ratios measured in one run; seconds depend on the load.
"""
from __future__ import annotations

import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _own(fmt: str, folder: Path, db: Path) -> float:
    start = time.perf_counter()
    if fmt == "dcem-run-export/1":
        from dcem.store.database import Store
        from dcem.store.run_import import import_run_export

        with Store(db) as store:
            import_run_export(store, folder)
    elif fmt == "sag-store-export/1":
        from sag.runs.store_export import import_store_export
        from sag.store.tables import SagStore

        with SagStore(db) as store:
            import_store_export(store, folder)
    elif fmt == "training-run-export/1":
        from training.import_export import import_training_export
        from training.store import TrainingStore

        with TrainingStore(db) as store:
            import_training_export(store, folder)
    else:
        return float("nan")
    return time.perf_counter() - start


def main() -> int:
    from common.db import Database
    from common.ledger import Ledger
    from common.run_export import import_runs_export
    from common.table_export import export_folders, export_format
    from studio.run_kinds import load_kinds

    root = Path(__file__).resolve().parents[1] / "data" / "results"
    folders = sorted({*export_folders(root), *export_folders(root / "training"), *export_folders(root / "sag_runs")})
    kinds = load_kinds()
    print("| export | format | rows | one import (s) | its own import (s) | ratio |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        one = Path(tmp) / "all.duckdb"
        for i, folder in enumerate(folders):
            fmt = str(export_format(folder))
            start = time.perf_counter()
            try:
                rows = import_runs_export(one, folder, kinds).added
            except Exception as exc:  # noqa: BLE001 (a benchmark reports what it could not import)
                print(f"| {folder.relative_to(root)} | {fmt} | not imported: {str(exc).splitlines()[0][:90]} | | | |")
                continue
            took = time.perf_counter() - start
            own = _own(fmt, folder, Path(tmp) / f"own-{i}.duckdb")
            print(f"| {folder.relative_to(root)} | {fmt} | {rows:,} | {took:.1f} | {own:.1f} | {took / own:.2f} |")
        with Database(one) as store:
            counts = Counter(Ledger(store).runs()["kind"])
    print("\nruns per kind in the one store: " + ", ".join(f"{k} {n}" for k, n in sorted(counts.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
