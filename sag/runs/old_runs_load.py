"""The older SAG runs export (``sag-runs-export/1``, :mod:`sag.runs.run_export`) loaded into SAG tables.

That export kept each run's config, its items' options and right answers, every outcome
(answer, truth, rule, rounds, calls, tokens, seconds) and each agent's answer letter per
round, but no question text, no rationale and no refusal score.  Loading it into the SAG
tables (for ``python -m studio runs import``) keeps what those tables can hold truly:

* ``sag_runs``: the run as exported (created and finished at the export's date; the code
  revision unknown);
* ``sag_items``: each item with its question and context read from the benchmark this
  version ships, by id; an item the benchmark lacks, or whose options or right answer
  differ from the export's, refuses the whole export (its outcomes belong to another item);
* ``sag_outcomes``: every outcome, its refusal score empty (never measured).

The agents' letters are not loaded: a debate message without its text, distribution or
tokens would show an empty debate.  ``python -m sag compare --export`` and the Agent group
page still read them from the export where it lies.
"""
from __future__ import annotations

import datetime as _dt
import json
from functools import lru_cache
from pathlib import Path
from typing import Any

import pandas as pd

from common.errors import InputError
from sag.runs.run_export import read_run_export
from sag.store.old_runs import write_old_runs
from sag.store.tables import SagStore

__all__ = ["load_old_runs_export"]


@lru_cache(maxsize=8)
def _benchmark_items(benchmark: str) -> dict[str, Any]:
    from sag.runs.run import load_items

    return {it.item_id: it for it in load_items(benchmark)}


def _created(manifest: dict[str, Any], folder: Path) -> _dt.datetime:
    try:
        return _dt.datetime.fromisoformat(str(manifest.get("created_at")))
    except ValueError:
        raise InputError("export", f"{folder / 'manifest.json'}: created_at {manifest.get('created_at')!r} is not "
                                   "a date and time; nothing was imported") from None


def load_old_runs_export(folder: str | Path, raw: str | Path, progress: Any = None) -> None:
    """The export in ``folder``, checked (:func:`sag.runs.run_export.read_run_export`), loaded into
    the new store file ``raw`` (see the module docstring); InputError, naming the run and
    item, for an item this version's benchmark does not hold as exported."""
    folder = Path(folder)
    export = read_run_export(folder)
    created = _created(export.manifest, folder)
    runs, items = [], []
    for run in export.runs.itertuples(index=False):
        rows = export.items_of(run.run_id)
        known = _known_items(str(run.benchmark), str(run.run_id), folder)
        runs.append((run.run_id, run.benchmark, run.group_name, run.method, run.config_json,
                     [str(i) for i in rows["item_id"]], int(run.seed), created,
                     created if run.status == "finished" else None, run.status))
        for row in rows.itertuples(index=False):
            item = _matching(known, row, str(run.run_id), folder)
            items.append((run.run_id, row.item_id, int(row.position), row.benchmark, item.question,
                          json.dumps(list(item.options)), item.answer, item.context))
    outcomes = export.outcomes.copy()
    outcomes["refusal_score"] = pd.Series([None] * len(outcomes), dtype="Float64")  # NULL: never measured
    outcomes["created_at"] = created
    with SagStore(raw) as store:
        write_old_runs(store, runs, items, outcomes)
    if progress is not None:
        progress(1, 1, folder.name)


def _known_items(benchmark: str, run_id: str, folder: Path) -> dict[str, Any]:
    try:
        return _benchmark_items(benchmark)
    except Exception as exc:  # noqa: BLE001 - the benchmark's own error, said once with the run
        raise InputError("export", f"{folder}: run {run_id} answered the benchmark {benchmark!r}, which this version "
                                   f"cannot load ({exc}); nothing was imported") from None


def _matching(known: dict[str, Any], row: Any, run_id: str, folder: Path) -> Any:
    item = known.get(str(row.item_id))
    if item is None:
        raise InputError("export", f"{folder}: item {row.item_id} of run {run_id} is not in the benchmark this "
                                   "version ships, so its question is unknown; nothing was imported")
    options = [list(o) for o in json.loads(row.options_json)]
    if options != [list(o) for o in item.options] or str(row.answer) != item.answer:
        raise InputError("export", f"{folder}: item {row.item_id} of run {run_id} has other options or another "
                                   "right answer than the benchmark this version ships; nothing was imported")
    return item
