"""Test helper: a small SAG evaluation store and its store export, and a fingerprint of a
store's rows (what an import may change)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb

from sag.group.config import preset
from sag.evaluation.runner import run_group_eval
from sag.runs.store_export import write_store_export
from sag.evaluation.suite import SuiteSpec
from sag.store.tables import SagStore
from tests.sag.fakes import ScriptedTurns

__all__ = ["small_export", "fingerprint"]


def _answer_b(agent: str, prompt: str, request) -> tuple[str, str]:  # type: ignore[no-untyped-def]
    return ("B" if "B" in request.options else request.options[0]), "It fits. NEW: no"


def small_export(folder: Path) -> tuple[Path, Path]:
    """(a store of a scripted sag-6 safety evaluation of 2 items, its export), in ``folder``."""
    raw = folder / "made.duckdb"
    with SagStore(raw) as store:
        cfg = preset("sag-6")
        run_group_eval(store, SuiteSpec("safety", n_items=2), cfg,
                       runners={m: ScriptedTurns(_answer_b) for m in cfg.models()}, measure_memory=False)
    write_store_export(raw, folder / "export", command="made by the test")
    return raw, folder / "export"


def fingerprint(db: Path, *, skip: tuple[str, ...] = ()) -> dict[str, tuple[Any, ...]]:
    """Every table's row count and a digest of its rows (but the tables ``skip``)."""
    with duckdb.connect(str(db), read_only=True) as con:
        tables = [t for (t,) in con.execute("SELECT table_name FROM information_schema.tables "
                                            "WHERE table_schema = 'main'").fetchall() if t not in skip]
        return {t: con.execute(f'SELECT count(*), md5(coalesce(string_agg(CAST(x AS VARCHAR), \'|\' '
                               f'ORDER BY CAST(x AS VARCHAR)), \'\')) FROM "{t}" x').fetchone() for t in tables}
