"""``python -m sag eval``: run the evaluation suite for several groups, one process each.

Every group name is checked before anything runs.  With more than one group, each runs in
a child process of its own (the same command with one group), so its peak memory is its
own; ``--in-process`` keeps them in this process (tests, or when memory is not wanted).
An interrupted command is resumed by running it again.  ``--parts`` runs some parts of the
suite only, so one group can be shared between processes or machines (their store files
are joined with ``python -m sag merge``).
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from common.errors import ConfigError
from sag.config import GroupConfig
from sag.failures import EXIT_FAILED

__all__ = ["eval_command", "add_eval_arguments", "parse_groups", "parse_parts"]


def parse_groups(text: str, args: argparse.Namespace) -> list[GroupConfig]:
    """The groups of ``--groups`` (comma-separated presets or JSON files), with the overrides."""
    from sag.group_args import group_from_args

    names = [g.strip() for g in text.split(",") if g.strip()]
    if not names:
        raise ConfigError("groups", "give at least one group, e.g. --groups single,vote-6,sag-6")
    cfgs = [group_from_args(argparse.Namespace(**{**vars(args), "group": g})) for g in names]
    seen: set[str] = set()
    for cfg in cfgs:
        if cfg.name in seen:
            raise ConfigError("groups", f"group {cfg.name!r} is named twice; names identify groups in the report")
        seen.add(cfg.name)
    return cfgs


def parse_parts(text: str | None) -> tuple[str, ...]:
    """The names of ``--parts`` (none: every part); an empty list is an error."""
    if text is None:
        return ()
    names = tuple(n.strip().strip("/") for n in text.split(",") if n.strip().strip("/"))
    if not names:
        raise ConfigError("parts", "give at least one part, e.g. --parts consistency or --parts accuracy/medqa")
    return names


def add_eval_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--suite", default="core", help="core (all six metrics) or a comma-separated list of "
                   "accuracy, relevance, fairness, safety, robustness, consistency")
    p.add_argument("--groups", default="single,vote-6,sag-6", help="comma-separated presets or JSON group files")
    p.add_argument("--items", type=int, default=10, help="items per subset, at most 100 (default 10)")
    p.add_argument("--consistency-items", dest="consistency_items", type=int, default=None,
                   help="items of each consistency run (default: half of --items, at least 2)")
    p.add_argument("--parts", default=None,
                   help="run only these parts of the suite, comma-separated part keys or their starts (e.g. "
                        "consistency or accuracy/medqa); the evaluation stays the same, so another process can "
                        "run the other parts into another store file, joined later with `python -m sag merge`")
    p.add_argument("--in-process", dest="in_process", action="store_true",
                   help="run every group in this process (peak memory is then shared)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")


def _child_argv(args: argparse.Namespace, group: str) -> list[str]:
    argv = ["-m", "sag", "eval", "--suite", args.suite, "--items", str(args.items), "--groups", group]
    for flag, name in (("--consistency-items", "consistency_items"), ("--parts", "parts"), ("--db", "db"),
                       ("--threads", "threads"), ("--n-gpu-layers", "n_gpu_layers"), ("--model", "model"),
                       ("--t-max", "t_max"), ("--rationale-tokens", "rationale_tokens"), ("--top-k", "top_k"),
                       ("--temperature", "temperature"), ("--n-cal", "n_cal")):
        value = getattr(args, name, None)
        if value is not None:
            argv += [flag, str(value)]
    for flag, name in (("--sequential", "sequential"), ("--quiet", "quiet")):
        if getattr(args, name, False):
            argv.append(flag)
    return argv


def eval_command(args: argparse.Namespace) -> int:
    from common.cli_kit import progress_bar
    from sag.evaluation.runner import run_group_eval
    from sag.evaluation.suite import SuiteSpec
    from sag.runners import batch_width, build_runners
    from sag.store.tables import SagStore

    spec = SuiteSpec(args.suite, n_items=args.items, consistency_items=args.consistency_items)
    cfgs = parse_groups(args.groups, args)
    only = parse_parts(getattr(args, "parts", None))
    if only:  # a wrong name stops the command before any group starts
        from sag.evaluation.runner import select_parts
        from sag.evaluation.subsets import load_subsets
        from sag.evaluation.suite import build_parts

        select_parts(build_parts(spec, load_subsets()), only)
    if len(cfgs) > 1 and not args.in_process:
        for name in [g.strip() for g in args.groups.split(",") if g.strip()]:
            code = subprocess.call([sys.executable, *_child_argv(args, name)])
            if code != 0:
                print(f"group {name} stopped (exit {code}); run the same command again to resume", file=sys.stderr)
                return code
        print(f"evaluation {spec.eval_id}: {len(cfgs)} groups done; `python -m sag report --eval {spec.eval_id}`")
        return 0
    with SagStore(args.db) as store:
        for cfg in cfgs:
            bar, progress = progress_bar(f"{cfg.name} {spec.eval_id}", "item", quiet=args.quiet)
            try:
                summary = run_group_eval(
                    store, spec, cfg, progress=progress,
                    runners=lambda c: build_runners(c.models(), n_threads=args.threads, n_gpu_layers=args.n_gpu_layers,
                                                    batched=not args.sequential, width=batch_width(c)),
                    measure_memory=len(cfgs) == 1 or not args.in_process, only=only)
            finally:
                bar.close()
            rss = f", peak RSS {summary.peak_rss_mb:.0f} MB" if summary.peak_rss_mb else ""
            print(f"{cfg.name}: {summary.parts} parts, {summary.items} items ({summary.answered_now} answered now; "
                  f"{summary.model_calls} model calls, {summary.cached_calls} from the call log) in "
                  f"{summary.seconds:.0f} s{rss}{'' if summary.complete else '; incomplete'}"
                  + (f"; only the parts {', '.join(only)}" if only else "")
                  + (f"; skipped {', '.join(summary.skipped)} (D-CEM needs one option count)" if summary.skipped else ""))
            if summary.failed:
                print(f"error: {cfg.name}: {len(summary.failed)} item(s) got no answer (a model call failed; first: "
                      f"{summary.failed[0].reason}); they are not counted; run the same command again to retry them",
                      file=sys.stderr)
                return EXIT_FAILED
    return 0

