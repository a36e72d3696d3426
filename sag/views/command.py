"""``python -m sag eval-views`` and ``python -m sag views-report``: a view group measured on
DDXPlus-8 HELD-OUT (``docs/group_views.md``).

``eval-views --group FILE`` plays, into the store and resumably, every run the report reads
(:func:`sag.views.report.view_runs`: the group on the 200 TEST cases, on the 130 CAL cases,
its D-CEM variant, its 400 twins, and one single SmolLM2 answer per TEST case), then
prints the report; run again, it makes no model call.  ``views-report --group FILE``
prints the report from the store alone (``--markdown`` for REPRODUCTION.md's block,
``--references FILE.json`` adds reference rows).
"""
from __future__ import annotations

import argparse
import sys

__all__ = ["add_views_commands"]


def _print_report(args: argparse.Namespace, cfg: object) -> int:
    from sag.store.tables import SagStore
    from sag.views.report import build_report, read_references, report_markdown

    references = read_references(args.references) if args.references else None
    with SagStore(args.db, create=False) as store:
        report = build_report(store, cfg, references)  # type: ignore[arg-type]
    print(report_markdown(report))
    return 0


def _cmd_views_report(args: argparse.Namespace) -> int:
    from sag.group.config import load_group_file

    cfg = load_group_file(args.group)
    if not cfg.views:
        from common.errors import ConfigError

        raise ConfigError("group", f"{cfg.name} gives its members no views; views-report measures view groups")
    return _print_report(args, cfg)


def _cmd_eval_views(args: argparse.Namespace) -> int:
    from common.cli_kit import progress_bar
    from common.errors import ConfigError
    from runtime.factory import check_model_keys
    from sag.group.config import load_group_file
    from sag.runs.run import run_sag
    from sag.debate.runners import RunnerRecipe
    from sag.store.tables import SagStore

    cfg = load_group_file(args.group)
    if not cfg.views:
        raise ConfigError("group", f"{cfg.name} gives its members no views; eval-views measures view groups")
    from sag.views.report import view_specs

    specs = list(view_specs(cfg).values())
    prepared = [spec.prepare() for spec in specs]  # type: ignore[attr-defined]  # every input checked first
    for spec in specs:
        check_model_keys(spec.cfg.models())  # type: ignore[attr-defined]
    recipe = RunnerRecipe(n_threads=args.threads)
    failed = 0
    for spec, items in zip(specs, prepared):
        bar, progress = progress_bar(f"{spec.cfg.name} on {spec.benchmark}", "item", quiet=args.quiet)  # type: ignore
        with SagStore(args.db) as store:
            try:
                summary = run_sag(store, spec, progress=progress, prepared=items, runners=recipe)  # type: ignore
            finally:
                bar.close()
        print(f"run {summary.run_id}: {summary.computed} answered now, {summary.total} in the run, "
              f"{summary.model_calls} model calls", file=sys.stderr)
        failed += len(summary.failed)
    if failed:
        print(f"error: {failed} item(s) got no answer; run the same command again to retry them", file=sys.stderr)
        return 1
    return _print_report(args, cfg)


def add_views_commands(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    for name, func, text in (("eval-views", _cmd_eval_views, "play and report every run a view group is measured by"),
                             ("views-report", _cmd_views_report, "a view group's measurement, from the store")):
        p = sub.add_parser(name, help=text)
        p.add_argument("--group", required=True, help="the view group's JSON file")
        p.add_argument("--references", default=None, help="reference answers, JSON {name: {item id: letter}}")
        p.add_argument("--db", default=None, help="DuckDB file (default: $DCEM_DB or data/dcem.duckdb)")
        if name == "eval-views":
            p.add_argument("--threads", type=int, default=None, help="llama.cpp threads")
            p.add_argument("--quiet", action="store_true")
        p.add_argument("-v", "--verbose", action="store_true")
        p.set_defaults(func=func)
