"""The command-line kit the project's three command lines share (``python -m dcem``,
``python -m dcem_clinical``, ``python -m sag``): a progress bar on stderr, running a
command with one-line errors and a clean Ctrl-C, the ``merge`` sub-command, and where a
long command's units run (``--executor process|ray``, :func:`add_executor_arguments`).

Bad input exits with status 2 and a one-line message on stderr, never a traceback; an
interrupted command exits with status 130 after saying how to resume.
"""
from __future__ import annotations

import argparse
import contextlib
import logging
import sys
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from common.cli_args import EXIT_USAGE, Parser, float_in, host_port, int_in, one_line
from common.errors import ConfigError, ProjectError

__all__ = ["EXIT_INTERRUPTED", "Parser", "int_in", "float_in", "progress_bar", "fail", "run_command",
           "add_merge_command", "add_executor_arguments", "check_executor_args", "executor_from_args",
           "report_failed_units", "EXIT_FAILED"]

EXIT_INTERRUPTED = 130
EXIT_FAILED = 1  # some units failed (recorded with their messages); the same command retries them


def progress_bar(desc: str, unit: str, *, quiet: bool,
                 total: int = 1) -> tuple[Any, Callable[[int, int, str], None]]:
    """A progress bar on stderr and the ``progress(done, total, label)`` callback the
    runners call; close the bar when done."""
    from tqdm import tqdm

    bar = tqdm(total=total, unit=unit, file=sys.stderr, disable=quiet, desc=desc)

    def progress(done: int, count: int, label: str) -> None:
        bar.total, bar.n = count, done
        bar.set_postfix_str(label, refresh=False)
        bar.refresh()

    return bar, progress


def fail(message: str) -> int:
    """Write ``message`` as one line on stderr; the usage-error exit status."""
    sys.stderr.write(f"error: {one_line(message)}\n")
    return EXIT_USAGE


def run_command(args: argparse.Namespace, interrupted: str) -> int:
    """Run ``args.func`` with logging set up; a ProjectError becomes one line on stderr
    (status 2), Ctrl-C prints ``interrupted`` (status 130)."""
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    try:
        if hasattr(args, "executor"):
            check_executor_args(args)
        return int(args.func(args))
    except ProjectError as exc:
        return fail(str(exc))
    except KeyboardInterrupt:
        sys.stderr.write(interrupted + "\n")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return 0


def _cmd_merge(args: argparse.Namespace) -> int:
    from common.db import Database, default_db_path
    from common.store_merge import merge_store, require_duckdb_file

    target = Path(args.db if args.db is not None else default_db_path())
    if not target.is_file():
        raise ProjectError(f"no store file {target} to merge into; copy the first part there instead of merging it")
    require_duckdb_file(target, "the target")
    with Database(target) as db:
        for source in args.source:
            print("\n".join(merge_store(db, source, args.merge_checks()).lines()))
    return 0


def add_merge_command(sub: Any, checks: Callable[[], Sequence[Any]]) -> None:
    """``merge SOURCE ... --db TARGET``: the rows of other store files that TARGET lacks
    (:mod:`common.store_merge`), each checked by the rules ``checks()`` returns (those of
    the tables the command's stores hold, :class:`common.merge_checks.RowCheck`)."""
    p = sub.add_parser("merge", help="copy into --db the rows of other store files it lacks (a run split "
                                     "over processes or machines)")
    p.add_argument("source", nargs="+", help="store file(s) to merge in; only read, and refused while in use")
    p.add_argument("--db", default=None, help="the store to merge into (default: $DCEM_DB or data/dcem.duckdb)")
    p.set_defaults(func=_cmd_merge, verbose=False, merge_checks=checks)


_WORKER_FLAGS = (("workers", "--workers", 2), ("worker_threads", "--worker-threads", 1),
                 ("worker_gpus", "--worker-gpus", 0.0))  # flags of Ray workers, with their defaults


def add_executor_arguments(p: argparse.ArgumentParser) -> None:
    """``--executor``, ``--ray-address``, ``--workers``, ``--worker-threads``, ``--worker-gpus``
    (the last four need ``--executor ray``: :func:`check_executor_args`)."""
    g = p.add_argument_group("where the units run")
    g.add_argument("--executor", choices=("process", "ray"), default="process",
                   help="process: one after another in this process (default); ray: on Ray workers that keep their "
                        "models loaded, results written here (see docs/cluster.md)")
    g.add_argument("--ray-address", default=None, type=host_port,
                   help="the Ray cluster to join (HOST:PORT of `ray start --head`); default: a local Ray instance")
    g.add_argument("--workers", type=int_in(1, 1024), default=None, help="Ray workers (default 2)")
    g.add_argument("--worker-threads", type=int_in(1, 256), default=None,
                   help="CPU threads of each Ray worker, also its llama.cpp threads (default 1)")
    g.add_argument("--worker-gpus", type=float_in(0.0, 64.0), default=None,
                   help="GPUs each Ray worker reserves, for llama.cpp offload (default 0)")


def check_executor_args(args: argparse.Namespace) -> None:
    """Refuse (one line) the Ray flags without ``--executor ray``, where nothing would read
    them; with it, fill in the defaults of those not given.  :func:`run_command` calls this
    before the command starts."""
    from common.ray_work import check_executor

    name = getattr(args, "executor", "process")
    check_executor(name, getattr(args, "ray_address", None))
    for dest, flag, default in _WORKER_FLAGS:
        if getattr(args, dest, None) is None:
            setattr(args, dest, default if name == "ray" else None)
        elif name != "ray":
            raise ConfigError(dest, f"{flag} sets up Ray workers and needs --executor ray")


@contextlib.contextmanager
def executor_from_args(args: argparse.Namespace) -> Iterator[Any]:
    """The executor the flags ask for (None: in process), checked (:func:`check_executor_args`)
    and, for Ray, connected before the block starts (a cluster that does not answer is one
    line, before anything is stored); a Ray executor ends with the block."""
    check_executor_args(args)
    if getattr(args, "executor", "process") != "ray":
        yield None
        return
    from common.ray_work import RayExecutor

    with RayExecutor(workers=args.workers, threads=args.worker_threads, gpus=args.worker_gpus,
                     address=args.ray_address) as executor:
        executor.connect()
        yield executor


def report_failed_units(summary: Any, unit: str) -> int:
    """Say which units failed (stderr) and return :data:`EXIT_FAILED`, or 0 when none did."""
    if summary.stopped:
        sys.stderr.write(f"error: {summary.stopped}\n")
    if not summary.failed:
        return EXIT_FAILED if summary.stopped else 0
    first = summary.failed[0]
    sys.stderr.write(f"error: {len(summary.failed)} {unit}(s) failed and were recorded (first: {first.key}: "
                     f"{one_line(first.message)}); run the same command again to retry them\n")
    return EXIT_FAILED
