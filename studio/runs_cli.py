"""``python -m studio runs list | show | export | import | report | merge``: what every run
shares, whatever its kind (:mod:`common.ledger`, :mod:`common.run_kinds`,
:mod:`common.run_export`).

Each kind keeps its own ``run`` command (``python -m dcem run``, ``python -m sag run``,
``python -m sag train-views``, ...); these commands list, show, export, import, report
and merge the runs of every kind the same way.  Bad input exits with status 2 and one line.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from common.cli_kit import add_merge_command, progress_bar, run_command
from common.db import Database, StoreError, default_db_path
from common.errors import InputError
from common.ledger import Ledger
from common.run_kinds import RunKind, describe_run
from common.terminal import escape_controls

__all__ = ["main", "build_parser"]

_NO_COMMAND = "(not given to the export)"
_MESSAGES = 20  # failed units shown by `show`


def _kinds() -> dict[str, RunKind]:
    from studio.run_kinds import load_kinds

    return load_kinds()


def _store(args: argparse.Namespace) -> Path:
    path = Path(args.db) if args.db is not None else default_db_path()
    if not path.is_file():
        raise InputError("db", f"no store {path}")
    return path


def _cmd_list(args: argparse.Namespace) -> int:
    kinds = _kinds()
    with Database(_store(args)) as store:
        runs = Ledger(store).runs(args.kind)
    rows = [{"run_id": str(r.run_id), "kind": str(r.kind), "status": str(r.status), "done": int(r.done),
             "failed": int(r.failed), "created_at": str(r.created_at),
             "finished_at": None if r.finished_at is None or str(r.finished_at) == "NaT" else str(r.finished_at),
             "what": describe_run(kinds, str(r.kind), json.loads(r.spec_json))} for r in runs.itertuples(index=False)]
    if args.json:
        print(json.dumps(rows, indent=1))
        return 0
    if not rows:
        print("(no runs)")
        return 0
    widths = {k: max(len(k), *(len(str(r[k])) for r in rows)) for k in ("run_id", "kind", "status")}
    for r in rows:
        line = (f"{r['run_id']:<{widths['run_id']}}  {r['kind']:<{widths['kind']}}  {r['status']:<{widths['status']}}"
                f"  {r['done']:>5} done {r['failed']:>3} failed  {r['created_at'][:19]}  {r['what']}")
        print(escape_controls(line.rstrip()))
    return 0


def _cmd_show(args: argparse.Namespace) -> int:
    kinds = _kinds()
    with Database(_store(args)) as store:
        ledger = Ledger(store)
        run = ledger.run(args.run)
        units = ledger.units(args.run)
    failed = units[units["state"] == "failed"]
    kind = kinds.get(run.kind)
    shown = {"run_id": run.run_id, "kind": run.kind, "status": run.status, "created_at": str(run.created_at),
             "finished_at": None if run.finished_at is None else str(run.finished_at), "revision": run.revision,
             "units_done": run.done, "units_failed": run.failed, "what": describe_run(kinds, run.kind, run.spec),
             "page": kind.page if kind else None, "spec": run.spec,
             "failures": [{"unit": str(u.unit_key), "message": str(u.message)}
                          for u in failed.head(_MESSAGES).itertuples(index=False)]}
    if args.json:
        print(json.dumps(shown, indent=1, default=str))
        return 0
    for key in ("run_id", "kind", "status", "created_at", "finished_at", "revision", "what", "page"):
        print(escape_controls(f"{key}: {shown[key]}"))
    print(f"units: {run.done} done, {run.failed} failed")
    for f in shown["failures"]:
        print(escape_controls(f"  failed {f['unit']}: {f['message']}"))
    if len(failed) > _MESSAGES:
        print(f"  ... and {len(failed) - _MESSAGES} more failed units")
    print("spec: " + escape_controls(json.dumps(run.spec, sort_keys=True)))
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    from common.run_export import write_runs_export

    path = write_runs_export(_store(args), args.runs, args.out, command=args.command_text or _NO_COMMAND,
                             kinds=_kinds())
    print(f"wrote {path.parent} ({len(args.runs)} run(s))")
    return 0


def _cmd_import(args: argparse.Namespace) -> int:
    from common.run_export import import_runs_export

    bar, progress = progress_bar("import", "step", quiet=not sys.stderr.isatty())
    try:
        report = import_runs_export(args.db, args.folder, _kinds(), progress)
    finally:
        bar.close()
    print("\n".join(report.lines()))
    print(f"imported {report.added:,} rows" if report.added else "the store already holds every row of this "
                                                                   "export; nothing was added")
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from common.run_export import reports_from_export

    kinds = _kinds()
    if (args.run is None) == (args.from_export is None):
        raise InputError("run", "give a run id or --from-export DIR (one of them)")
    if args.from_export is not None:
        reports = reports_from_export(args.from_export, kinds)
    else:
        path = _store(args)
        with Database(path) as store:
            run = Ledger(store).run(args.run)
        kind = kinds.get(run.kind)
        if kind is None:
            raise StoreError(f"run {run.run_id} is of the kind {run.kind!r}, which this version does not know")
        reports = [(run.run_id, run.kind, kind.report(path, run.run_id))]
    for i, (run_id, kind_name, text) in enumerate(reports):
        if len(reports) > 1:
            print(("\n" if i else "") + f"## Run {run_id} ({kind_name})\n")
        print(text.rstrip("\n"))
    return 0


def _merge_checks() -> list[Any]:
    from common.run_export import kind_checks

    return kind_checks(_kinds())


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m studio", description="D-CEM Studio's runs of every kind")
    top = parser.add_subparsers(dest="group", required=True)
    runs = top.add_parser("runs", help="list, show, export, import, report and merge runs of every kind")
    sub = runs.add_subparsers(dest="command", required=True)

    def add(name: str, func: Any, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text)
        p.add_argument("--db", default=None, help="the store (default: $DCEM_DB or data/dcem.duckdb)")
        p.add_argument("-v", "--verbose", action="store_true")
        p.set_defaults(func=func)
        return p

    p = add("list", _cmd_list, "every run of the store: kind, status, units done and failed, what it is")
    p.add_argument("--kind", default=None, help="only runs of this kind")
    p.add_argument("--json", action="store_true", help="as JSON")
    p = add("show", _cmd_show, "one run: its spec, status, units and failures")
    p.add_argument("run")
    p.add_argument("--json", action="store_true", help="as JSON")
    p = add("export", _cmd_export, "runs of any kinds as one export folder (manifest.json + zstd Parquet)")
    p.add_argument("runs", nargs="+", help="the run ids")
    p.add_argument("--out", required=True, help="the export folder (new, or an earlier export)")
    p.add_argument("--command", dest="command_text", default=None, help="the commands that made the runs")
    p = add("import", _cmd_import, "bring an export folder (of any format this version reads) into the store")
    p.add_argument("folder")
    p = add("report", _cmd_report, "a run's report by its kind, from the store or --from-export DIR")
    p.add_argument("run", nargs="?", default=None)
    p.add_argument("--from-export", dest="from_export", default=None, metavar="DIR")
    add_merge_command(sub, _merge_checks)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return run_command(args, "interrupted; nothing half-written was kept")
