"""``python -m sag eval``: run the evaluation suite for several groups, one process each.

Every group name is checked before anything runs, and so is every group the store's
evaluation already holds: with the settings it was started with, or refused (one line
naming the first field that differs, :mod:`common.resume`).  With more than one group, each runs in
a child process of its own (the same command with one group), so its peak memory is its
own; ``--in-process`` keeps them in this process (tests, or when memory is not wanted).
An interrupted command is resumed by running it again.  ``--executor ray`` spreads the
items of every part over Ray workers (a local instance, or a cluster with
``--ray-address``) that keep their models loaded; the groups then run one after another in
this process, which alone writes the store.  Stores made on different machines are joined
with ``python -m sag merge``.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from common.errors import ConfigError
from sag.group.config import GroupConfig
from sag.group.failures import EXIT_FAILED

if TYPE_CHECKING:
    from sag.evaluation.suite import SuiteSpec

__all__ = ["eval_command", "add_eval_arguments", "parse_groups"]


def parse_groups(text: str, args: argparse.Namespace) -> list[GroupConfig]:
    """The groups of ``--groups`` (comma-separated presets or JSON files), with the overrides."""
    from sag.group.args import group_from_args

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


def add_eval_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--suite", default="core", help="core (all six metrics) or a comma-separated list of "
                   "accuracy, relevance, fairness, safety, robustness, consistency")
    p.add_argument("--groups", default="single,vote-6,sag-6", help="comma-separated presets or JSON group files")
    p.add_argument("--items", type=int, default=10, help="items per subset, at most 100 (default 10)")
    p.add_argument("--consistency-items", dest="consistency_items", type=int, default=None,
                   help="items of each consistency run (default: half of --items, at least 2)")
    p.add_argument("--in-process", dest="in_process", action="store_true",
                   help="run every group in this process (peak memory is then shared)")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar")


def _child_argv(args: argparse.Namespace, group: str) -> list[str]:
    argv = ["-m", "sag", "eval", "--suite", args.suite, "--items", str(args.items), "--groups", group]
    for flag, name in (("--consistency-items", "consistency_items"), ("--db", "db"),
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
    from common.ray_work import check_executor
    from runtime.factory import check_model_keys
    from sag.evaluation.suite import SuiteSpec

    check_executor(args.executor, args.ray_address)  # before any group starts
    spec = SuiteSpec(args.suite, n_items=args.items, consistency_items=args.consistency_items)
    cfgs = parse_groups(args.groups, args)
    check_model_keys([key for cfg in cfgs for key in cfg.models()])  # every group's models, before any starts
    _check_stored_groups(args, spec, cfgs)
    if len(cfgs) > 1 and not args.in_process and args.executor != "ray":
        for name in [g.strip() for g in args.groups.split(",") if g.strip()]:
            code = subprocess.call([sys.executable, *_child_argv(args, name)])
            if code != 0:
                print(f"group {name} stopped (exit {code}); run the same command again to resume", file=sys.stderr)
                return code
        print(f"evaluation {spec.eval_id}: {len(cfgs)} groups done; `python -m sag report --eval {spec.eval_id}`")
        return 0
    return _run_groups(args, spec, cfgs)


def _check_stored_groups(args: argparse.Namespace, spec: "SuiteSpec", cfgs: list[GroupConfig]) -> None:
    """Every group the store's evaluation already holds must come with the settings it was
    started with: checked for all groups before the first one runs, so a refusal writes nothing."""
    from common.db import default_db_path
    from sag.evaluation.runner import check_group_settings
    from sag.store.tables import SagStore

    if not (Path(args.db) if args.db is not None else default_db_path()).is_file():
        return  # a new store holds no evaluation
    with SagStore(args.db) as store:
        check_group_settings(store, spec, cfgs)


def _run_groups(args: argparse.Namespace, spec: "SuiteSpec", cfgs: list[GroupConfig]) -> int:
    """Every group in this process, one after another (their units on the executor)."""
    from common.cli_kit import executor_from_args, progress_bar
    from sag.evaluation.runner import run_group_eval
    from sag.debate.runners import RunnerRecipe
    from sag.store.tables import SagStore

    threads = args.threads or (args.worker_threads if args.executor == "ray" else None)
    recipe = RunnerRecipe(n_threads=threads, n_gpu_layers=args.n_gpu_layers, batched=not args.sequential)
    # Ray is joined (a cluster that does not answer refused) before the store is opened
    with executor_from_args(args) as executor, SagStore(args.db) as store:
        for cfg in cfgs:
            bar, progress = progress_bar(f"{cfg.name} {spec.eval_id}", "item", quiet=args.quiet)
            try:
                summary = run_group_eval(store, spec, cfg, progress=progress, runners=recipe, executor=executor,
                                         measure_memory=len(cfgs) == 1 or not args.in_process)
            finally:
                bar.close()
            rss = f", peak RSS {summary.peak_rss_mb:.0f} MB" if summary.peak_rss_mb else ""
            print(f"{cfg.name}: {summary.parts} parts, {summary.total} items ({summary.computed} answered now; "
                  f"{summary.model_calls} model calls, {summary.cached_calls} from the call log) in "
                  f"{summary.seconds:.0f} s{rss}{'' if summary.complete else '; incomplete'}"
                  + (f"; skipped {', '.join(summary.skipped_parts)} (D-CEM needs one option count)"
                     if summary.skipped_parts else ""))
            if summary.failed:
                print(f"error: {cfg.name}: {len(summary.failed)} item(s) got no answer (a model call failed; first: "
                      f"{summary.failed[0].reason}); they are not counted; run the same command again to retry them",
                      file=sys.stderr)
                return EXIT_FAILED
    return 0
