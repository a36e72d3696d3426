"""``python -m dcem_clinical report``: the clinical tables of stored runs or of a run export.

From the store, ``--run`` (repeatable; default the newest clinical run) prints Tables 6, 7
and 1 as mean ± std over seeds, or ``--json``.  From an export (``--from-export DIR``,
written by ``python -m dcem_clinical export``) the same tables, or ``--markdown`` (the
blocks of REPRODUCTION.md, ours beside the paper's), or ``--paired`` (D-CEM minus each
baseline with paired bootstrap intervals).  Synthetic runs are reported by
``python -m dcem report``; naming one here says so.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from common.errors import ProjectError
from dcem.fit_options import add_escalation_cost

if TYPE_CHECKING:
    from dcem_clinical.report.run_report import ClinicalRuns

__all__ = ["add_report_command"]


def _cmd_report(args: argparse.Namespace) -> int:
    from dcem.store.database import Store
    from dcem_clinical.report.run_report import read_clinical_runs

    if args.from_export is not None:
        return _export_report(args)
    if args.markdown or args.paired:
        raise ProjectError(f"{'--markdown' if args.markdown else '--paired'} prints from a run export: "
                           "give --from-export DIR")
    with Store(args.db, create=False) as store:
        runs = read_clinical_runs(store, args.run or [store.latest_run("clinical")])
    return _print_tables(args, runs)


def _export_report(args: argparse.Namespace) -> int:
    """The clinical tables of a run export instead of the store."""
    from dcem.store.run_export import load_run_export
    from dcem_clinical.report.agents import export_agent_rows
    from dcem_clinical.report.markdown import render_clinical_markdown
    from dcem_clinical.report.run_report import ClinicalRuns

    if args.run or sum((args.markdown, args.json, args.paired)) > 1:
        raise ProjectError("--from-export takes no --run, and prints one of --markdown, --json or --paired")
    export = load_run_export(args.from_export)
    kinds = {export.run(r)["kind"] for r in export.run_ids}
    if kinds != {"clinical"}:
        raise ProjectError(f"{args.from_export} holds {' and '.join(sorted(kinds))} runs: report synthetic runs "
                           "with python -m dcem report --from-export, and export the kinds separately")
    if args.paired:
        from dcem_clinical.report.paired import export_paired_markdown

        sys.stdout.write(export_paired_markdown(export, escalation_cost=args.escalation_cost))
        return 0
    if args.markdown:
        sys.stdout.write(render_clinical_markdown(export.metrics, export.manifest, agents=export_agent_rows(export),
                                                  escalation_cost=args.escalation_cost))
        return 0
    metrics = export.metrics.drop(columns="run_id")
    frames = tuple((r, metrics[export.metrics["run_id"] == r].reset_index(drop=True)) for r in export.run_ids)
    outcomes = {r: export.outcomes[export.outcomes["run_id"] == r].reset_index(drop=True) for r in export.run_ids}
    labels = {r: tuple(export.cells[export.cells["run_id"] == r]["labels"].iloc[0]) for r in export.run_ids
              if (export.cells["run_id"] == r).any()}
    return _print_tables(args, ClinicalRuns(frames, {r: export.run(r)["spec"] for r in export.run_ids},
                                            {r: o for r, o in outcomes.items() if r in labels}, labels))


def _print_tables(args: argparse.Namespace, runs: ClinicalRuns) -> int:
    """Write the runs' tables: text (:func:`dcem_clinical.report.run_report.clinical_runs_text`) or ``--json``."""
    from dcem_clinical.report.run_report import clinical_runs_dict, clinical_runs_text

    if args.json:
        json.dump(clinical_runs_dict(runs, escalation_cost=args.escalation_cost), sys.stdout, default=str)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(clinical_runs_text(runs, escalation_cost=args.escalation_cost))
    return 0


def add_report_command(sub: Any) -> None:
    """The ``report`` command and its options."""
    p = sub.add_parser("report", help="print Tables 6, 7 and 1 of clinical runs (stored, or from an export)")
    p.add_argument("--run", action="append", default=None,
                   help="run id (default: the newest clinical run); repeat to combine runs")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--from-export", default=None, metavar="DIR",
                   help="report the runs of a run export (python -m dcem_clinical export) instead of the store")
    p.add_argument("--markdown", action="store_true",
                   help="with --from-export: Tables 6, 7 and 1 as markdown, ours beside the paper's, and each "
                        "panel member's accuracies")
    p.add_argument("--paired", action="store_true", help="with --from-export: D-CEM minus each baseline with "
                   "95 %% paired bootstrap intervals over the TEST cases, as markdown")
    add_escalation_cost(p)
    p.add_argument("--db", default=None, help="DuckDB file (default: $DCEM_DB or data/dcem.duckdb)")
    p.set_defaults(func=_cmd_report)
