"""D-CEM's tables in the project's DuckDB file: runs, cells, cases, traces, outcomes,
metrics, ablation, case texts and agent turns (:mod:`dcem.store.database`), their
migrations, saved what-if presets and the append-only human reviews."""
from dcem.store.database import Store, StoreError, default_db_path

__all__ = ["Store", "StoreError", "default_db_path"]
