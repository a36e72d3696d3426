"""One export format for every kind of run, one import, and a report from an export.

:func:`write_runs_export` writes chosen runs of a store, whatever their kinds, as a folder:
``manifest.json`` (format :data:`FORMAT`; the runs with their kinds and statuses, the
kinds, the store's migrations, the command that made them, each file's table, rows, size
and sha256) beside zstd Parquet files: the ledger's rows of the runs and every row of
their kinds' tables (:mod:`common.run_rows`, :mod:`common.run_kinds`).

:func:`import_runs_export` brings an export into a store: the manifest and every file are
checked before anything is written (a file changed, missing or not listed refuses the
whole import), the rows are loaded into a scratch store of the current schema, each file's
columns checked against its table (:mod:`common.export_schema`), and that store is merged
into the target (:func:`common.store_merge.merge_store`: rows the target lacks, each kept
to its table's rules, in one transaction), so a second import adds nothing.  The older
per-kind formats are read by the loaders their kinds declare (``RunKind.imports``), into
the same scratch store; the ledger then lists their runs as well.  A store this import
created is removed again when the import is refused.

:func:`reports_from_export` prints each run of an export by its kind's report, from the
scratch store, without touching any store of the user's.
"""
from __future__ import annotations

import contextlib
import datetime as _dt
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

from common.db import Database, default_db_path
from common.errors import InputError
from common.export_schema import check_entries, check_file, check_unlisted, load_files, refuse
from common.fields import Text, check
from common.ledger import Ledger, ledger_checks
from common.merge_checks import RowCheck
from common.run_kinds import RunKind
from common.run_rows import LEDGER_TABLES, copy_run_rows
from common.scratch import scratch_folder
from common.store_merge import MergeReport, merge_store
from common.table_export import MANIFEST, export_format, make_out_folder, read_manifest, write_manifest
from common.work import Progress

__all__ = ["FORMAT", "ImportResult", "write_runs_export", "read_runs_manifest", "import_runs_export", "reports_from_export",
           "readable_formats", "kind_checks"]

FORMAT = "studio-run/1"
Loader = Callable[[Path, Path, "Progress | None"], None]


def _kind_of(kinds: Mapping[str, RunKind], name: str, what: str) -> RunKind:
    kind = kinds.get(name)
    if kind is None:
        raise InputError("kind", f"{what} is of the kind {name!r}, which this version does not know "
                                 f"(it knows {', '.join(sorted(kinds)) or 'none'})")
    return kind


def _tables(chosen: Sequence[RunKind]) -> tuple[list[str], dict[str, str]]:
    tables = list(dict.fromkeys(t for k in chosen for t in k.tables))
    linked: dict[str, str] = {}
    for k in chosen:
        linked.update(k.linked)
    return tables, linked


def write_runs_export(store_path: str | Path | None, run_ids: Sequence[str], out: str | Path, *, command: str,
                      kinds: Mapping[str, RunKind]) -> Path:
    """Export the runs ``run_ids`` of the store file ``store_path`` (None: the default
    store) into ``out``; returns the manifest's path.  Refuses no run or a run named twice,
    a run the ledger lacks, a run of a kind not in ``kinds``, and an ``out`` folder that
    holds files of anything but such an export."""
    ids = [str(r) for r in run_ids]
    if not ids or len(set(ids)) != len(ids):
        raise InputError("runs", "give at least one run id, each once")
    check("command", command, Text(msg="give the command that made the runs"), error=InputError)
    path = Path(store_path) if store_path is not None else default_db_path()
    if not path.is_file():
        raise InputError("db", f"no store {path}")
    with Database(path, create=False) as store:
        ledger = Ledger(store)
        runs = [ledger.run(r) for r in ids]
        chosen = list({r.kind: _kind_of(kinds, r.kind, f"run {r.run_id}") for r in runs}.values())
        tables, linked = _tables(chosen)
        folder = make_out_folder(out, tuple(f"{t}.parquet" for t in (*LEDGER_TABLES, *tables, *linked)))
        files = copy_run_rows(store, ids, tables, linked, folder)
        migrations = store.migration_names()
    written = {str(f["name"]) for f in files}
    for stale in folder.glob("*.parquet"):  # an earlier export's table these runs have no row of
        if stale.name not in written:
            stale.unlink()
    manifest = {"format": FORMAT, "created_at": _dt.datetime.now().replace(microsecond=0).isoformat(),
                "command": command.strip(), "kinds": sorted(k.name for k in chosen),
                "runs": [{"run_id": r.run_id, "kind": r.kind, "status": r.status} for r in runs],
                "migrations": migrations, "files": files}
    return write_manifest(folder, manifest)


def read_runs_manifest(folder: str | Path, kinds: Mapping[str, RunKind]) -> dict[str, Any]:
    """The manifest of an export in :data:`FORMAT`, with every entry and file checked
    (kinds known, runs listed with a known kind, files of the ledger's and those kinds'
    tables only, each present with its sha256 and size, none unlisted); InputError naming
    the first problem."""
    folder = Path(folder)
    where = str(folder / MANIFEST)
    manifest = read_manifest(folder, FORMAT)
    named = manifest.get("kinds")
    if not isinstance(named, list) or not named or not all(isinstance(k, str) for k in named):
        raise refuse(f"{where}: kinds", "must list the kinds of its runs by name")
    chosen = [_kind_of(kinds, k, f"{where}: a run") for k in named]
    runs = manifest.get("runs")
    if not isinstance(runs, list) or not runs:
        raise refuse(f"{where}: runs", "must list the runs it holds")
    for i, run in enumerate(runs):
        if not isinstance(run, dict) or not isinstance(run.get("run_id"), str) or run.get("kind") not in named:
            raise refuse(f"{where}: runs[{i}]", "must give a run id and one of the export's kinds")
    tables, linked = _tables(chosen)
    allowed = {*LEDGER_TABLES, *tables, *linked}
    entries = check_entries(manifest.get("files"), where, allowed=lambda t: t in allowed)
    missing = [t for t in LEDGER_TABLES if t not in entries]
    if missing:
        raise refuse(f"{where}: files", f"lists no file for {missing[0]}")
    check_unlisted(folder, entries)
    for entry in entries.values():
        check_file(folder, entry)
    return manifest


def _load_new(folder: Path, raw: Path, progress: Progress | None, kinds: Mapping[str, RunKind]) -> None:
    """An export in :data:`FORMAT`, checked, loaded into the new store file ``raw``."""
    manifest = read_runs_manifest(folder, kinds)
    for name in manifest["kinds"]:
        kinds[name].open_store(raw).close()
    with Database(raw) as store:
        Ledger(store)
        load_files(store, folder, manifest["files"], progress)


def readable_formats(kinds: Mapping[str, RunKind]) -> dict[str, Loader]:
    """Every export format this version imports: :data:`FORMAT`, and the older formats the
    kinds' loaders read (a format two kinds declare must be read by one loader)."""
    loaders: dict[str, Loader] = {}
    for kind in kinds.values():
        for fmt, load in kind.imports.items():
            if loaders.setdefault(fmt, load) is not load:
                raise ValueError(f"two kinds read the export format {fmt!r} with different loaders")
    return {FORMAT: lambda folder, raw, progress: _load_new(folder, raw, progress, kinds), **loaders}


@contextlib.contextmanager
def _unpacked(folder: Path, kinds: Mapping[str, RunKind], progress: Progress | None) -> Iterator[Path]:
    """The export in ``folder`` checked and loaded into a scratch store (its path), with
    every run in the scratch store's ledger; removed when the block ends."""
    formats = readable_formats(kinds)
    if not folder.is_dir():
        raise InputError("export", f"no export folder {folder}")
    fmt = export_format(folder)
    if fmt is None:
        read_manifest(folder, FORMAT)  # says what is wrong with the manifest
    if fmt not in formats:
        raise InputError("export", f"{folder / MANIFEST}: format {fmt!r} is not one this version imports "
                                   f"({', '.join(sorted(formats))})")
    with scratch_folder("run-export-") as tmp:
        raw = tmp / "export.duckdb"
        formats[str(fmt)](folder, raw, progress)
        with Database(raw) as store:
            Ledger(store)  # an older format's runs enter the ledger from their kind's tables
        yield raw


def kind_checks(kinds: Mapping[str, RunKind]) -> list[RowCheck]:
    """The merge rules of the ledger and of every kind in ``kinds``, each once."""
    seen: dict[tuple[str, str, str], RowCheck] = {}
    for rule in (*ledger_checks(), *(r for k in kinds.values() for r in k.checks())):
        seen.setdefault((rule.table, rule.column, str(rule.bad) if isinstance(rule.bad, str) else repr(rule.bad)),
                        rule)
    return list(seen.values())


@dataclass(frozen=True)
class ImportResult:
    """What an import did: the merge's report, table by table, and the runs the export
    holds (run id, kind), whether or not the store held them already."""

    report: MergeReport
    runs: tuple[tuple[str, str], ...]

    @property
    def added(self) -> int:
        return self.report.added

    def lines(self) -> list[str]:
        return self.report.lines()


def import_runs_export(store_path: str | Path | None, folder: str | Path, kinds: Mapping[str, RunKind],
                       progress: Progress | None = None) -> ImportResult:
    """Bring the export in ``folder`` (any format :func:`readable_formats` names) into the
    store file ``store_path`` (None: the default store; created if need be, and removed
    again when the import is refused).  InputError for an export that is unreadable,
    changed or incomplete; StoreError (:class:`common.merge_checks.MergeRefused`) for a
    row the target cannot take.  The target is unchanged after any of them."""
    path = Path(store_path) if store_path is not None else default_db_path()
    with _unpacked(Path(folder), kinds, progress) as raw:
        with Database(raw) as scratch:
            held = Ledger(scratch).runs()
        runs = tuple((str(r), str(k)) for r, k in zip(held["run_id"], held["kind"]))
        new = not path.exists()
        try:
            for kind in kinds.values():
                kind.open_store(path).close()
            with Database(path) as store:
                Ledger(store)
                return ImportResult(merge_store(store, raw, kind_checks(kinds), progress), runs)
        except BaseException:
            if new:
                for made in (path, path.with_name(path.name + ".wal")):
                    made.unlink(missing_ok=True)
            raise


def reports_from_export(folder: str | Path, kinds: Mapping[str, RunKind],
                        progress: Progress | None = None) -> list[tuple[str, str, str]]:
    """(run id, kind, report text) of every run the export holds, oldest first, each by its
    kind's report, read from a scratch store."""
    with _unpacked(Path(folder), kinds, progress) as raw:
        with Database(raw) as store:
            runs = Ledger(store).runs()
        out = []
        for row in runs.iloc[::-1].itertuples(index=False):
            kind = _kind_of(kinds, str(row.kind), f"run {row.run_id}")
            out.append((str(row.run_id), kind.name, kind.report(raw, str(row.run_id))))
        return out
