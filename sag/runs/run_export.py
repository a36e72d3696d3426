"""SAG runs read from an export, as ``python -m sag compare``, reports and pages need them.

An export is read in either form: the one ``python -m sag export`` writes now (every
table of the runs and their call log, :mod:`sag.runs.store_export`; its rows are
loaded into a temporary store and read like a store), or the older runs export this module
wrote, kept readable.  Either way :func:`read_run_export` returns the same four frames.

The older form: ``write_run_export`` writes, for some runs of a store, ``<out>/manifest.json`` (format,
date, the command that made it, one entry per run: id, benchmark, group, method, seed,
status, items in the run and answered, the group's config) and four Parquet tables:

- ``runs``: one row per run (the manifest's run entries, the config as JSON);
- ``items``: each run's items: id, position, benchmark, options (JSON) and right answer;
- ``outcomes``: each answered item's outcome (answer, truth, correct, refused, rounds,
  calls, tokens, seconds);
- ``answers``: every agent's answer letter in every round (no rationale text), so the
  letter distribution of each agent can be read back.

A run need not be finished: an export of runs stopped part way holds the items they
answered, and the manifest says how many of how many.  Each table is written in the schema
declared here once (:data:`SCHEMAS`), and ``read_run_export`` checks every file against
the manifest and that schema (:mod:`common.export_schema`: a ``rounds`` of 2.6 or a
``seconds`` of text is refused, naming the column and its type) and refuses, with one
line naming the file, anything missing, changed or malformed.
"""
from __future__ import annotations

import datetime as _dt
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from common.errors import InputError
from common.fields import Instance, Satisfies, Seq, check, fixed
from common.export_schema import Schema
from common.scratch import scratch_folder
from common.table_export import export_format, make_out_folder, read_manifest, read_tables, write_manifest, write_table
from sag.store.tables import SagStore

__all__ = ["FORMAT", "TABLES", "SCHEMAS", "RunExport", "write_run_export", "read_run_export"]

FORMAT = "sag-runs-export/1"
_S, _I, _B = "VARCHAR", "INTEGER", "BOOLEAN"
# table -> (column, DuckDB type), as written and as read
SCHEMAS: dict[str, Schema] = {
    "runs": (("run_id", _S), ("benchmark", _S), ("group_name", _S), ("method", _S), ("seed", _I), ("status", _S),
             ("items", "BIGINT"), ("answered", "BIGINT"), ("config_json", _S)),
    "items": (("run_id", _S), ("item_id", _S), ("position", _I), ("benchmark", _S), ("options_json", _S),
              ("answer", _S)),
    "outcomes": (("run_id", _S), ("item_id", _S), ("answer", _S), ("truth", _S), ("correct", _B), ("refused", _B),
                 ("escalated", _B), ("rule", _S), ("rounds", _I), ("stop_reason", _S), ("model_calls", _I),
                 ("cached_calls", _I), ("prompt_tokens", _I), ("completion_tokens", _I), ("seconds", "DOUBLE"),
                 ("benchmark", _S), ("group_name", _S), ("method", _S)),
    "answers": (("run_id", _S), ("item_id", _S), ("seq", _I), ("round", _I), ("phase", _S), ("agent_id", _S),
                ("role", _S), ("model", _S), ("answer", _S)),
}
TABLES = tuple(SCHEMAS)
_ITEM_COLUMNS = [c for c, _ in SCHEMAS["items"]]
_OUTCOME_COLUMNS = [c for c, _ in SCHEMAS["outcomes"]]
_ANSWER_COLUMNS = [c for c, _ in SCHEMAS["answers"]]
_RUN_COLUMNS = [c for c, _ in SCHEMAS["runs"] if c != "config_json"]


@dataclass(frozen=True)
class RunExport:
    """A read and checked export."""

    folder: Path
    manifest: dict[str, Any]
    runs: pd.DataFrame
    items: pd.DataFrame
    outcomes: pd.DataFrame
    answers: pd.DataFrame

    def run_ids(self) -> list[str]:
        return [str(r) for r in self.runs["run_id"]]

    def check_run(self, run_id: str) -> None:
        if run_id not in self.run_ids():
            raise InputError("run", f"no run {run_id!r} in the export {self.folder} (it holds "
                                    f"{', '.join(self.run_ids())})")

    def outcomes_of(self, run_id: str) -> pd.DataFrame:
        self.check_run(run_id)
        return self.outcomes[self.outcomes["run_id"] == run_id].reset_index(drop=True)

    def items_of(self, run_id: str) -> pd.DataFrame:
        self.check_run(run_id)
        return self.items[self.items["run_id"] == run_id].sort_values("position").reset_index(drop=True)


def _tables(store: SagStore, run_ids: Sequence[str]) -> dict[str, pd.DataFrame]:
    known = store.runs().set_index("run_id")
    configs = {r: store.run_config(r).to_dict() for r in run_ids}  # an unknown run id is an error here
    runs = known.loc[list(run_ids)].reset_index()[_RUN_COLUMNS].copy()
    runs["config_json"] = [json.dumps(configs[r], sort_keys=True) for r in runs["run_id"]]
    items = pd.concat([store.items(r)[_ITEM_COLUMNS] for r in run_ids], ignore_index=True)
    outcomes = pd.concat([store.outcomes(r)[_OUTCOME_COLUMNS] for r in run_ids], ignore_index=True)
    answers = pd.concat([store.agent_answers(r)[_ANSWER_COLUMNS] for r in run_ids], ignore_index=True)
    return {"runs": runs, "items": items, "outcomes": outcomes, "answers": answers}


def write_run_export(store: SagStore, run_ids: Sequence[str], out: Path, *, command: str) -> Path:
    """Write the export of ``run_ids`` (see the module docstring); returns the manifest's
    path.  Refuses no run, a run named twice, an unknown run, a run with no answered item
    and an ``out`` folder that holds other files or cannot be written."""
    run_ids = list(run_ids)
    if not run_ids:
        raise InputError("runs", "give at least one run id")
    if len(set(run_ids)) != len(run_ids):
        raise InputError("runs", "a run is named twice")
    tables = _tables(store, run_ids)
    empty = [r for r in run_ids if not (tables["outcomes"]["run_id"] == r).any()]
    if empty:
        raise InputError("runs", f"run {empty[0]} has no answered item yet")
    out = make_out_folder(Path(out), tuple(f"{t}.parquet" for t in TABLES))
    files = [write_table(out, name, frame, SCHEMAS[name]) for name, frame in tables.items()]
    entries = [{k: (int(v) if k in ("seed", "items", "answered") else str(v)) for k, v in row.items()
                if k in _RUN_COLUMNS} for row in tables["runs"].to_dict("records")]
    manifest = {"format": FORMAT, "created_at": _dt.datetime.now().replace(microsecond=0).isoformat(),
                "command": command, "runs": entries, "files": files}
    return write_manifest(out, manifest)


def _from_store_export(folder: Path) -> RunExport:
    """The runs of an export in the store form, read through a temporary store."""
    from sag.runs.store_export import import_store_export, read_store_manifest

    manifest = read_store_manifest(folder)
    with scratch_folder("sag-runs-") as tmp, SagStore(tmp / "runs.duckdb") as store:
        import_store_export(store, folder)
        run_ids = [str(r) for r in manifest.get("runs") or store.runs()["run_id"]]
        answered = [r for r in run_ids if not store.outcomes(r).empty]
        if not answered:
            raise InputError("export", f"{folder} holds no answered SAG item")
        frames = _tables(store, answered)
    return RunExport(folder, manifest, frames["runs"], frames["items"], frames["outcomes"], frames["answers"])


def read_run_export(folder: Path) -> RunExport:
    """The export in ``folder`` (either form, see the module docstring), every file checked
    against its manifest."""
    from sag.runs.store_export import FORMAT as STORE_FORMAT

    folder = Path(folder)
    if export_format(folder) == STORE_FORMAT:
        return _from_store_export(folder)
    manifest = read_manifest(folder, FORMAT)
    runs = check("export", manifest.get("runs"), Seq(Instance(dict), min_len=1, types=(list,)),
                 Satisfies(lambda rs: all("run_id" in r for r in rs)), error=InputError,
                 msg=fixed(f"{folder / 'manifest.json'}: runs must list each run with its run_id"))
    frames = read_tables(folder, manifest, SCHEMAS)
    if sorted(map(str, frames["runs"]["run_id"])) != sorted(str(r["run_id"]) for r in runs):
        raise InputError("export", f"{folder / 'runs.parquet'} and the manifest list different runs")
    return RunExport(folder, manifest, frames["runs"], frames["items"], frames["outcomes"], frames["answers"])
