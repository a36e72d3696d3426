"""Small SAG stores for the merge tests, and an independent reading of what a store may hold.

:func:`build_part` writes two finished scripted runs (a ``sag-6-dcem`` run with its mediator
rounds and calibration, and a ``sag-6-majority`` run), each with its call log, into one
file.  :func:`store_problems` reads a whole store in Python and lists every row that breaks
what the SAG tables and the call log mean (no SQL rule of the merge is reused), so a merge
that was accepted can be checked against it.
"""
from __future__ import annotations

import contextlib
import json
import math
import re
from pathlib import Path
from typing import Any, Iterator

import duckdb

from sag.group.config import preset
from sag.runs.run import SagRunSpec, run_sag
from sag.store.tables import SagStore

from .fakes import ScriptedTurns, constant
from .group_runs import debating

__all__ = ["build_part", "dump", "store_problems", "SAG_TABLES"]

SAG_TABLES = ("sag_runs", "sag_items", "sag_outcomes", "sag_messages", "sag_mediator", "sag_eval_parts",
              "sag_eval_cost", "llm_calls")
_HEX64 = re.compile(r"[0-9a-f]{64}")


def build_part(path: Path) -> dict[str, str]:
    """Two finished scripted runs of two medqa items each; returns their run ids by name."""
    specs = {"dcem": (preset("sag-6-dcem").with_changes(n_cal=2, t_max=2), debating),
             "majority": (preset("sag-6-majority"), constant("C"))}
    out = {}
    with SagStore(path) as store:
        for name, (cfg, policy) in specs.items():
            spec = SagRunSpec("medqa", cfg, n_items=2, seed=0)
            out[name] = run_sag(store, spec, runners={m: ScriptedTurns(policy) for m in cfg.models()},
                                retrievers={}).run_id
    return out


@contextlib.contextmanager
def _reading(store: Path | duckdb.DuckDBPyConnection) -> Iterator[duckdb.DuckDBPyConnection]:
    """A connection to ``store``: the one given, or the file opened read-only and closed after."""
    if isinstance(store, duckdb.DuckDBPyConnection):
        yield store
        return
    con = duckdb.connect(str(store), read_only=True)
    try:
        yield con
    finally:
        con.close()


def dump(store: Path | duckdb.DuckDBPyConnection) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table, sorted (NaN shown as text so equal dumps compare equal)."""
    with _reading(store) as con:
        tables = [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables() WHERE schema_name = 'main' "
                                            "AND database_name = current_database() ORDER BY table_name").fetchall()]
        return {t: sorted((tuple(map(repr, row)) for row in con.execute(f'SELECT * FROM "{t}"').fetchall()))
                for t in tables}


def _rows(con: duckdb.DuckDBPyConnection, table: str) -> list[dict[str, Any]]:
    cur = con.execute(f'SELECT * FROM "{table}"')
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row)) for row in cur.fetchall()]


def _count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _finite(v: Any, low: float | None = 0.0, high: float | None = None) -> bool:
    return (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            and (low is None or v >= low) and (high is None or v <= high))


def _json(v: Any) -> bool:
    try:
        json.loads(v, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
    except (TypeError, ValueError):
        return False
    return True


def _letters(options_json: str) -> list[str] | None:
    try:
        options = json.loads(options_json)
    except ValueError:
        return None
    if not isinstance(options, list) or not 2 <= len(options) <= 26:
        return None
    if not all(isinstance(o, list) and len(o) == 2 and all(isinstance(x, str) for x in o) for o in options):
        return None
    letters = [o[0] for o in options]
    return letters if letters == [chr(65 + i) for i in range(len(letters))] else None


def _check_item_rows(tables: dict[str, list[dict[str, Any]]], runs: dict[str, Any],
                     items: dict[tuple[str, str], Any]) -> list[str]:
    bad = []
    for o in tables["sag_outcomes"]:
        item = items.get((o["run_id"], o["item_id"]))
        letters = _letters(item["options_json"]) if item else None
        ok = (item is not None and letters is not None and o["answer"] in letters + ["REFUSE", "ESCALATE"]
              and o["truth"] == item["answer"] and o["correct"] == (o["answer"] == o["truth"])
              and o["refused"] == (o["answer"] == "REFUSE") and o["escalated"] == (o["answer"] == "ESCALATE")
              and all(_count(o[c]) for c in ("rounds", "model_calls", "cached_calls", "prompt_tokens",
                                             "completion_tokens"))
              and _finite(o["seconds"]) and _finite(o["refusal_score"], 0.0, 1.0))
        bad += [] if ok else [f"sag_outcomes {o}"]
    for m in tables["sag_messages"]:
        item = items.get((m["run_id"], m["item_id"]))
        letters = _letters(item["options_json"]) if item else None
        ok = (item is not None and letters is not None and (m["answer"] is None or m["answer"] in letters + ["REFUSE"])
              and all(_count(m[c]) for c in ("seq", "round", "prompt_tokens", "completion_tokens", "reused_tokens"))
              and m["phase"] in ("retrieve", "propose", "debate", "audit", "judge", "answer")
              and m["role"] in ("reasoning", "knowledge", "safety", "judge")
              and all(_finite(p, 0.0, 1.0) for p in m["distribution"])
              and (m["refuse_probability"] is None or _finite(m["refuse_probability"], 0.0, 1.0))
              and _finite(m["duration_s"]) and _json(m["retrieved_json"]))
        bad += [] if ok else [f"sag_messages {m}"]
    for r in tables["sag_mediator"]:
        ok = ((r["run_id"], r["item_id"]) in items and _count(r["round"]) and _finite(r["energy"], None)
              and _finite(r["margin"], None) and r["action"] in ("CONTINUE", "DIFFERENTIAL_STEER", "STOP_AND_DECIDE",
                                                                  "STOP_AND_ESCALATE", "PENDING"))
        bad += [] if ok else [f"sag_mediator {r}"]
    for c in tables["llm_calls"]:
        probs = c["probabilities"]
        ok = (bool(_HEX64.fullmatch(c["cache_key"])) and bool(c["call_id"])
              and all(c[k] is None or _count(c[k]) for k in ("agent", "round", "prompt_tokens", "completion_tokens"))
              and (c["duration_s"] is None or _finite(c["duration_s"]))
              and _json(c["messages_json"]) and _json(c["options_json"])
              and (c["parsed_json"] is None or _json(c["parsed_json"]))
              and (probs is None or all(_finite(p, 0.0, 1.0) for p in probs))
              and (c["error"] is not None or not probs or sum(probs) > 0)
              and (c["run_id"] is None or c["run_id"] in runs))
        bad += [] if ok else [f"llm_calls {c['call_id']}"]
    return bad


def store_problems(store: Path | duckdb.DuckDBPyConnection) -> list[str]:
    """Every row of the SAG tables and call log of ``store`` that breaks what they mean."""
    with _reading(store) as con:
        tables = {t: _rows(con, t) for t in SAG_TABLES}
    runs = {r["run_id"]: r for r in tables["sag_runs"]}
    items = {(i["run_id"], i["item_id"]): i for i in tables["sag_items"]}
    bad = []
    for r in runs.values():
        ids = r["item_ids"]
        ok = (r["status"] in ("running", "finished", "interrupted")
              and (r["status"] == "finished") == (r["finished_at"] is not None)
              and bool(ids) and None not in ids and len(set(ids)) == len(ids) and _json(r["config_json"])
              and _count(r["seed"])
              and (r["calibration_json"] is None or _json(r["calibration_json"]))
              and all(r[c] for c in ("run_id", "benchmark", "group_name", "method")))
        bad += [] if ok else [f"sag_runs {r['run_id']}"]
    for (run_id, item_id), i in items.items():
        run, letters = runs.get(run_id), _letters(i["options_json"])
        ok = (run is not None and item_id in run["item_ids"] and run["item_ids"].index(item_id) == i["position"]
              and letters is not None and i["answer"] in letters)
        bad += [] if ok else [f"sag_items {(run_id, item_id)}"]
    return bad + _check_item_rows(tables, runs, items)
