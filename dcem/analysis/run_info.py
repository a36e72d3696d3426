"""What a stored run is: its kind, methods and, for language-model runs, its dataset,
scenarios and agents (read from the run's stored specification; no agent is called)."""
from __future__ import annotations

import json
from typing import Any

import pandas as pd

from dcem.core.vocabulary import mediated_methods, order_methods
from dcem.store.database import Store, StoreError

__all__ = ["RUN_COLUMNS", "run_spec", "run_kind", "is_llm_run", "run_methods", "runs_overview",
           "describe_run"]

RUN_COLUMNS = ["run_id", "kind", "status", "dataset", "scenarios", "seeds", "agents", "created_at",
               "finished_at"]


def _parse(blob: object) -> dict[str, Any]:
    try:
        spec = json.loads(blob) if isinstance(blob, str) else {}
    except ValueError:
        return {}
    return spec if isinstance(spec, dict) else {}


def run_spec(store: Store, run_id: str) -> dict[str, Any]:
    """The stored specification of a run ({} when it is not a JSON object)."""
    row = store.con.execute("SELECT spec_json FROM runs WHERE run_id = ?", [run_id]).fetchone()
    if row is None:
        raise StoreError(f"no run {run_id!r} in {store.path}")
    return _parse(row[0])


def run_kind(store: Store, run_id: str) -> str:
    row = store.con.execute("SELECT kind FROM runs WHERE run_id = ?", [run_id]).fetchone()
    if row is None:
        raise StoreError(f"no run {run_id!r} in {store.path}")
    return str(row[0])


def is_llm_run(store: Store, run_id: str) -> bool:
    """True for a run of language-model agents (kind ``clinical``, or agent turns stored)."""
    if run_kind(store, run_id) == "clinical":
        return True
    return store.con.execute("SELECT 1 FROM agent_turns WHERE run_id = ? LIMIT 1", [run_id]).fetchone() is not None


def run_methods(store: Store, run_id: str, *, mediated_only: bool = False) -> list[str]:
    """The methods with stored outcomes, in display order (single, free, pool, dcem, dcem_noesc)."""
    found = {r[0] for r in store.con.execute("SELECT DISTINCT method FROM outcomes WHERE run_id = ?",
                                             [run_id]).fetchall()}
    order = order_methods(found)
    return [m for m in order if m in mediated_methods()] if mediated_only else order


def _join(values: object) -> str | None:
    if isinstance(values, (list, tuple)):
        return ", ".join(str(v) for v in values)
    return None if values is None else str(values)


def runs_overview(store: Store) -> pd.DataFrame:
    """Every stored run, newest first, with its dataset, scenarios, seeds and agents
    (columns :data:`RUN_COLUMNS`; dataset and agents are empty for synthetic runs)."""
    rows = store.con.execute(
        "SELECT run_id, kind, status, spec_json, seeds, created_at, finished_at FROM runs "
        "ORDER BY created_at DESC, run_id").fetchall()
    out = []
    for run_id, kind, status, spec_json, seeds, created, finished in rows:
        spec = _parse(spec_json)
        out.append({"run_id": run_id, "kind": kind, "status": status, "dataset": spec.get("dataset"),
                     "scenarios": _join(spec.get("scenarios")), "seeds": _join(seeds),
                     "agents": _join(spec.get("agents")), "created_at": created, "finished_at": finished})
    return pd.DataFrame(out, columns=RUN_COLUMNS)


def describe_run(store: Store, run_id: str) -> str:
    """One sentence naming what a run holds, e.g. for a page caption."""
    kind, spec = run_kind(store, run_id), run_spec(store, run_id)
    if kind == "clinical":
        return (f"Clinical LLM run on {spec.get('dataset', '?')}: scenarios {_join(spec.get('scenarios')) or '?'}, "
                f"agents {_join(spec.get('agents')) or '?'}, {spec.get('mode', 'scored')} answers.")
    scen = _join(spec.get("scenarios"))
    return f"{kind.capitalize()} run" + (f": scenarios {scen}." if scen else ".")
