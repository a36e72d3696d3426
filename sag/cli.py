"""Command line: ``python -m sag ask | run | eval | report | compare | export | merge | train``.

- ``ask QUESTION --group sag-6``: one item, the debate printed round by round.
- ``run --benchmark medqa --group sag-10 --items 50 --seed 0``: a set of items into the
  store with a progress bar; the same command resumes; a finished run re-runs with zero
  model calls.
- ``eval --suite core --groups single,vote-6,sag-6 --items 10``: the clinical-utility
  suite (:mod:`sag.evaluation`), resumable, one process per group.
- ``merge PART.duckdb --db STORE``: the rows of another store file that STORE lacks (an
  evaluation split over processes or machines, one group each).
- ``report``: accuracy with a 95 % interval per benchmark and group, rounds, calls,
  tokens and seconds per item; ``report --eval [ID]``: the seed's Tables 2-7 with this
  project's numbers beside them.
- ``compare BASE RUN [RUN ...]``: runs of one benchmark against a base run on the items
  all of them answered (:mod:`sag.runs.versus`): accuracy beside chance and the best constant
  answer, each run's most frequent answer, the paired difference to the base; from the
  store or, with ``--export``, from an export.
- ``export RUN [RUN ...] --out FOLDER``: runs as a compact export (:mod:`sag.runs.run_export`).

Bad input exits with status 2 and a one-line message on stderr, nothing stored.  A model
call that fails is never an answer (:mod:`sag.group.failures`): ``run`` stores the item apart,
leaves the run unfinished and exits with status 1; ``ask`` prints the debate up to the
failure and exits with status 1.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from common.db import StoreError, default_db_path
from common.errors import ConfigError
from common.terminal import escape_controls
from common.cli_kit import (Parser, add_executor_arguments, add_merge_command, executor_from_args, int_in, progress_bar,
                            run_command)
from sag.training.command import add_train_command
from sag.training.views_command import add_train_views_command
from sag.views.command import add_views_commands
from runtime.factory import MAX_GPU_LAYERS, MAX_THREADS
from sag.group.failures import EXIT_FAILED
from sag.group.args import group_from_args

if TYPE_CHECKING:
    import pandas as pd

    from common.work import WorkSummary

__all__ = ["main"]


def _cmd_run(args: argparse.Namespace) -> int:
    from runtime.factory import check_model_keys
    from sag.runs.run import SagRunSpec, run_sag
    from sag.debate.runners import RunnerRecipe
    from sag.store.tables import SagStore

    spec = SagRunSpec(args.benchmark, group_from_args(args), n_items=args.items, seed=args.seed)
    prepared = spec.prepare()  # the items and the group are checked before the store is opened (or created)
    check_model_keys(spec.cfg.models())  # and its models' keys (a Ray run loads them only on the workers)
    bar, progress = progress_bar(f"{spec.cfg.name} on {Path(args.benchmark).name}", "item", quiet=args.quiet)
    threads = args.threads or (args.worker_threads if args.executor == "ray" else None)
    recipe = RunnerRecipe(n_threads=threads, n_gpu_layers=args.n_gpu_layers, batched=not args.sequential)
    # Ray is joined (a cluster that does not answer refused) before the store is opened
    with executor_from_args(args) as executor, SagStore(args.db) as store:
        try:
            summary = run_sag(store, spec, progress=progress, prepared=prepared, runners=recipe, executor=executor)
        finally:
            bar.close()
    state = "resumed" if summary.resumed else "new"
    print(escape_controls(f"run {summary.run_id} ({state}): {summary.computed} items answered now, "
                          f"{summary.total} in the run; {summary.model_calls} model calls, {summary.cached_calls} "
                          f"answered from the call log; {summary.seconds:.1f} s"))
    return _report_failures(summary)


def _report_failures(summary: "WorkSummary") -> int:
    """Exit status 1 and one line per failed item on stderr when items got no answer."""
    if not summary.failed:
        return 0
    for failure in summary.failed:
        print(escape_controls(f"failed: item {failure.item_id}: {failure.reason}"), file=sys.stderr)
    print(f"error: {len(summary.failed)} item(s) got no answer (a model call failed), so the run is not finished"
          + (f"; {summary.stopped}" if summary.stopped else "")
          + "; run the same command again to retry them", file=sys.stderr)
    return EXIT_FAILED


def _cmd_report(args: argparse.Namespace) -> int:
    from sag.runs.report import format_table, sag_run_report_text, summarise
    from sag.store.tables import SagStore

    if args.eval is not None or args.from_export is not None:
        return _report_eval(args)
    with SagStore(args.db, create=False) as store:  # a report creates no store
        if args.run is not None:
            text = sag_run_report_text(store, args.run)
        else:
            outcomes, failures = store.outcomes(), store.failures()
            if outcomes.empty and failures.empty:
                raise StoreError("the store holds no answered SAG items; run `python -m sag run` first")
            text = format_table(summarise(outcomes, failures)) + "\n"
    sys.stdout.write(text)
    return 0


def _cmd_compare(args: argparse.Namespace) -> int:
    from sag.runs.run_export import read_run_export
    from sag.runs.versus import run_rows, versus_markdown

    export = read_run_export(Path(args.export)) if args.export is not None else None
    if args.base is None and export is not None:
        args.base, *args.runs = export.run_ids()
    if args.base is None:
        raise ConfigError("runs", "give the base run and at least one other (or --export FOLDER alone)")
    names = list(dict.fromkeys([args.base, *args.runs]))
    if len(names) < 2:
        raise ConfigError("runs", "give at least one run other than the base")
    if export is not None:
        for name in names:
            export.check_run(name)
        groups = dict(zip(export.runs["run_id"].astype(str), export.runs["group_name"].astype(str)))
        outcomes, items = {n: export.outcomes_of(n) for n in names}, export.items_of(args.base)
    else:
        groups, outcomes, items = _stored_runs(args.db, names)
    for line in versus_markdown(run_rows(groups, outcomes, items, args.base)).splitlines():
        print(escape_controls(line))  # run ids and labels are the user's text
    return 0


def _stored_runs(db: str | None, names: list[str]) -> tuple[dict[str, str], dict[str, "pd.DataFrame"], "pd.DataFrame"]:
    """(group of each run, outcomes of each run, the first run's items) from the store."""
    from sag.store.tables import SagStore

    with SagStore(db, create=False) as store:
        for name in names:
            store.run_config(name)  # an unknown run id is an error
        groups = store.runs().set_index("run_id")["group_name"].astype(str).to_dict()
        return groups, {name: store.outcomes(name) for name in names}, store.items(names[0])


def _cmd_export(args: argparse.Namespace) -> int:
    from sag.runs.store_export import write_store_export

    path = write_store_export(args.db or default_db_path(), Path(args.out), run_ids=list(args.runs),
                              command=args.command_text or f"python -m sag export {' '.join(args.runs)} --out {args.out}")
    print(escape_controls(f"wrote {path.parent}: {len(args.runs)} run(s), every debate and its call log; "
                          f"`python -m sag compare BASE RUN --export {args.out}` compares them, "
                          f"`python -m sag report --from-export {args.out}` reports them"))
    return 0


def _cmd_export_store(args: argparse.Namespace) -> int:
    from sag.runs.store_export import write_store_export

    path = write_store_export(args.db or default_db_path(), Path(args.out),
                              command=args.command_text or f"python -m sag export-store --out {args.out}")
    print(escape_controls(f"wrote {path.parent}: every SAG table and the call log; `python -m sag import-store "
                          f"{args.out}` (or the dashboard's import button) brings it into a store"))
    return 0


def _cmd_import_store(args: argparse.Namespace) -> int:
    from sag.runs.store_export import import_into_store

    try:
        report = import_into_store(args.db, Path(args.folder))  # the store is opened once the export is checked
    except KeyboardInterrupt:  # the merge is one transaction: a Ctrl-C before its commit imports nothing
        print("interrupted: nothing was imported", file=sys.stderr)
        return 130
    print(escape_controls(f"imported {report.added:,} rows from {args.folder}"))
    return 0


def _report_eval(args: argparse.Namespace) -> int:
    from sag.evaluation.export import build_export, check_target, latest_eval_id, load_export, write_export
    from sag.evaluation.tables import render_report
    from sag.store.tables import SagStore

    if args.export is not None:  # a path that cannot be written stops the command before any work
        check_target(args.export)
    if args.from_export is not None and args.from_export.strip() and Path(args.from_export).is_dir():
        return _report_export_folder(args)
    if args.from_export is not None:
        data = load_export(args.from_export)
    else:
        with SagStore(args.db, create=False) as store:
            eval_id = latest_eval_id(store) if args.eval == "latest" else args.eval
            data = build_export(store, eval_id, command=args.command_text or "")
    if args.export is not None:
        write_export(data, args.export)
        print(f"wrote {args.export}", file=sys.stderr)
    print(render_report(data, level=args.level), end="")
    return 0


def _report_export_folder(args: argparse.Namespace) -> int:
    """``report --from-export FOLDER``: an evaluation's tables when the export holds one
    (``--eval ID`` picks one of several), else each run's summary; no store is opened."""
    from common.scratch import scratch_folder
    from common.table_export import export_format
    from sag.evaluation.export import build_export, latest_eval_id
    from sag.runs.store_export import FORMAT, import_store_export
    from sag.evaluation.tables import render_report
    from sag.runs.report import format_table, summarise
    from sag.runs.run_export import read_run_export
    from sag.store.tables import SagStore

    folder = Path(args.from_export)
    if export_format(folder) != FORMAT:  # the older runs export: outcomes only
        print(format_table(summarise(read_run_export(folder).outcomes)))
        return 0
    with scratch_folder("sag-report-") as tmp, SagStore(tmp / "r.duckdb") as store:
        import_store_export(store, folder)
        if store.has_eval_parts():
            eval_id = latest_eval_id(store) if args.eval in (None, "latest") else args.eval
            print(render_report(build_export(store, eval_id, command=args.command_text or ""), level=args.level),
                  end="")
            return 0
        print(format_table(summarise(store.outcomes(), store.failures())))
    return 0


def _cmd_ask(args: argparse.Namespace) -> int:
    from sag.runs.ask import ask

    return ask(args)


def _cmd_eval(args: argparse.Namespace) -> int:
    from sag.evaluation.command import eval_command

    return eval_command(args)


def _common(p: argparse.ArgumentParser, *, group: bool = True) -> None:
    if group:
        _group_argument(p)
    _overrides(p)


def _group_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--group", default="sag-10", help="preset (single, sag-6, sag-10, sag-15, sag-6-mixed, "
                   "sag-6-dcem, sag-6-no_judge ...) or a JSON group file")


def _overrides(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", help="one model key for every role (e.g. gemma3-270m, file:..., hf:..., openai:...)")
    p.add_argument("--t-max", dest="t_max", type=int, help="debate rounds after round 0 (default 3)")
    p.add_argument("--rationale-tokens", dest="rationale_tokens", type=int, help="token budget of each rationale")
    p.add_argument("--top-k", dest="top_k", type=int, help="passages per search")
    p.add_argument("--temperature", type=float, help="decoding temperature of answer letters and rationales (default 0: greedy)")
    p.add_argument("--threads", type=int_in(1, MAX_THREADS), default=None,
                   help=f"CPU threads per model, 1 to {MAX_THREADS} (default: all cores)")
    p.add_argument("--n-gpu-layers", dest="n_gpu_layers", type=int_in(-1, MAX_GPU_LAYERS), default=None,
                   help="layers on the GPU (-1 all, 0 none; default: all when llama.cpp has GPU support)")
    p.add_argument("--sequential", action="store_true", help="one agent after another, no shared prompt state")
    p.add_argument("--db", default=None, help="DuckDB file (default: $DCEM_DB or runs.duckdb)")
    p.add_argument("-v", "--verbose", action="store_true")


def _parser() -> Parser:
    parser = Parser(prog="python -m sag", description="The Small Agent Group: debate, runs, reports.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    ask = sub.add_parser("ask", help="debate one question and print it round by round")
    ask.add_argument("question", help="a .jsonl file, one JSON item, or text: the question then 'A. ...' lines")
    ask.add_argument("--item", help="item id in a .jsonl file (default: its first item)")
    _common(ask)
    ask.set_defaults(func=_cmd_ask)
    run = sub.add_parser("run", help="run a group on benchmark items into the store (resumable)")
    run.add_argument("--benchmark", required=True, help="medqa, medmcqa, mmlu-medical, mmlu-pro-health, "
                     "mmlu-pro-biology, pubmedqa, agentclinic, ddxplus8, heldout:<medqa|medmcqa|pubmedqa|ddxplus8> (the "
                     "HELD-OUT part trained and untrained agents are compared on), or a .jsonl file")
    run.add_argument("--items", type=int_in(1, 100_000), default=20, help="items drawn from the benchmark (default 20)")
    run.add_argument("--seed", type=int_in(0, 2**32 - 1), default=0, help="seed of the item draw (default 0)")
    run.add_argument("--n-cal", dest="n_cal", type=int, help="calibration items of the dcem method (default 20)")
    run.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    _common(run)
    add_executor_arguments(run)
    run.set_defaults(func=_cmd_run)
    ev = sub.add_parser("eval", help="the clinical-utility suite for several groups (resumable)")
    from sag.evaluation.command import add_eval_arguments

    add_eval_arguments(ev)
    ev.add_argument("--n-cal", dest="n_cal", type=int, help="calibration items of the dcem method (default 20)")
    _common(ev, group=False)
    add_executor_arguments(ev)
    ev.set_defaults(func=_cmd_eval)
    report = sub.add_parser("report", help="accuracy with 95%% intervals, rounds, calls, tokens, time per item")
    report.add_argument("--run", default=None, help="one run id (default: all runs)")
    report.add_argument("--eval", nargs="?", const="latest", default=None,
                        help="the evaluation suite's tables beside the seed's (default: the latest evaluation)")
    report.add_argument("--from-export", dest="from_export", help="print the tables of an export: a folder "
                        "(python -m sag export or export-store) or an evaluation's JSON file")
    report.add_argument("--export", help="also write the scored evaluation to this JSON file")
    report.add_argument("--level", type=int, choices=range(1, 6), default=1,
                        help="Markdown heading level of the report's title (sections one below)")
    report.add_argument("--command", dest="command_text", help="the command that made the evaluation (kept in the "
                        "export)")
    report.add_argument("--db", default=None)
    report.add_argument("-v", "--verbose", action="store_true")
    report.set_defaults(func=_cmd_report)
    _add_compare_and_export(sub)
    add_merge_command(sub, _merge_checks)
    add_train_command(sub)
    add_train_views_command(sub)
    add_views_commands(sub)
    return parser


def _add_compare_and_export(sub: "argparse._SubParsersAction[Parser]") -> None:
    compare = sub.add_parser("compare", help="runs of one benchmark against a base run, on their common items")
    compare.add_argument("base", nargs="?", help="the base run's id (e.g. the untrained group); with --export "
                         "and no run ids: the export's first run, compared with all its others")
    compare.add_argument("runs", nargs="*", help="the ids of the runs compared with it")
    compare.add_argument("--db", default=None)
    compare.add_argument("--export", default=None, help="read the runs from this export folder (python -m sag "
                         "export) instead of the store")
    compare.add_argument("-v", "--verbose", action="store_true")
    compare.set_defaults(func=_cmd_compare)
    export = sub.add_parser("export", help="runs as a compact export folder: manifest.json and Parquet tables")
    export.add_argument("runs", nargs="+", help="the ids of the runs exported")
    export.add_argument("--out", required=True, help="the export folder (new, or an earlier export of these runs)")
    export.add_argument("--command", dest="command_text", help="the commands that made the runs (kept in the "
                        "manifest)")
    export.add_argument("--db", default=None)
    export.add_argument("-v", "--verbose", action="store_true")
    export.set_defaults(func=_cmd_export)
    store_out = sub.add_parser("export-store", help="a store's SAG tables and call log (every debate) as a compact "
                               "export folder: manifest.json and zstd Parquet")
    store_out.add_argument("--out", required=True, help="the export folder (new, or an earlier export of this store)")
    store_out.add_argument("--command", dest="command_text", help="the commands that made the store (kept in the "
                           "manifest)")
    store_out.add_argument("--db", default=None)
    store_out.add_argument("-v", "--verbose", action="store_true")
    store_out.set_defaults(func=_cmd_export_store)
    store_in = sub.add_parser("import-store", help="merge a store export (python -m sag export-store) into the store")
    store_in.add_argument("folder", help="the export folder")
    store_in.add_argument("--db", default=None)
    store_in.add_argument("-v", "--verbose", action="store_true")
    store_in.set_defaults(func=_cmd_import_store)


def _merge_checks() -> Sequence[object]:
    from sag.store.merge_checks import sag_store_checks

    return sag_store_checks()


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:2] == ["run", "clinical"] or args[:1] == ["models"]:
        rest = args[2:] if args[0] == "run" else args[1:]
        target = "run" if args[0] == "run" else "models"
        print(f"moved: the D-CEM clinical experiment runs as `python -m dcem_clinical {target}"
              f"{' ' if rest else ''}{' '.join(rest)}`", file=sys.stderr)
        return 2
    return run_command(_parser().parse_args(args),
                       "interrupted: answered items are stored; run the same command again to resume")
