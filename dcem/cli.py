"""Command line: ``python -m dcem explain | run synthetic | report | runs | export | ceilings | calibrate | merge``.

Bad input exits with status 2 and a one-line message on stderr, never a traceback.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

from dcem import strict_json
from common.cli_args import MAX_SAMPLES, MAX_SCALE, MAX_SEED, MAX_SEEDS, name_text
from common.cli_kit import (Parser, add_executor_arguments, add_merge_command, executor_from_args, float_in, int_in,
                            progress_bar, report_failed_units, run_command)
from dcem.core.config import MAX_ROUNDS, MediatorConfig
from dcem.fit_options import add_escalation_cost, add_fit_options, risk_target_from_args
from common.bounded_read import JSON_FILE_LIMIT, read_at_most
from common.errors import ProjectError

if TYPE_CHECKING:
    from dcem.analysis.run_report import SyntheticRun

__all__ = ["main", "base_config"]

def _read_json(path: str) -> Any:
    data = read_at_most(path, JSON_FILE_LIMIT)  # counted as read: /dev/zero stops at the limit
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise ProjectError(f"{path} is not UTF-8 text") from None
    return strict_json.loads(text, path)


def _parse_params(items: Sequence[str]) -> dict[str, Any]:
    """``KEY=VALUE`` pairs; a VALUE that is JSON is parsed strictly (finite numbers a
    float can hold, bounded nesting), any other VALUE stays a string."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        if not sep:
            raise ProjectError(f"--param expects KEY=VALUE, got {item!r}")
        try:
            out[key.strip()] = strict_json.loads(raw, f"--param {key.strip()}")
        except strict_json.NotJson:
            out[key.strip()] = raw
    return out


def base_config(t_max: int, params: Sequence[str]) -> MediatorConfig:
    """The mediator defaults of ``run synthetic`` before fitting: empirical prior, the
    round budget ``--t-max`` and the ``--param KEY=VALUE`` overrides."""
    return MediatorConfig.from_mapping({"prior": "empirical", "t_max": t_max, **_parse_params(params)})


def _cmd_explain(args: argparse.Namespace) -> int:
    from dcem.analysis.explain import explain

    result = explain(_read_json(args.file))
    json.dump(result, sys.stdout, indent=None if args.compact else 2, allow_nan=False)
    sys.stdout.write("\n")
    return 0


def _cmd_run(args: argparse.Namespace) -> int:
    from dcem.store.database import Store
    from dcem.synthetic.spec import WORLD_REPORTS, WORLDS, SyntheticSpec, run_synthetic

    scenarios = tuple(s.strip() for s in args.scenarios.split(",") if s.strip())
    sharpness = WORLDS[args.world] if args.sharpness is None else args.sharpness
    spec = SyntheticSpec(
        scenarios=scenarios, seeds=tuple(range(args.seed_start, args.seed_start + args.seeds)),
        xi=args.xi, t_max=args.t_max, free_rounds=args.free_rounds, n_train=args.n_train,
        n_eval=args.n_eval, ablation=not args.no_ablation, sharpness=sharpness, kappa=args.kappa,
        compliance=args.compliance, reports=WORLD_REPORTS[args.world],
        base_config=base_config(args.t_max, args.param), risk_target=risk_target_from_args(args))
    bar, progress = progress_bar("synthetic", "cell", quiet=args.quiet,
                                 total=len(spec.scenarios) * len(spec.seeds))
    # Ray is joined (a cluster that does not answer refused) before the store is opened
    with executor_from_args(args) as executor, Store(args.db) as store:
        try:
            summary = run_synthetic(store, spec, run_id=args.run_id, progress=progress, executor=executor)
        finally:
            bar.close()
    state = "resumed" if summary.resumed else "new"
    print(f"run {summary.run_id} ({state}): {summary.computed} cells computed, "
          f"{summary.skipped} already stored, {summary.total} in all")
    return report_failed_units(summary, "cell")


def _cmd_report(args: argparse.Namespace) -> int:
    from dcem.analysis.run_report import read_synthetic_run
    from dcem.store.database import Store

    if args.from_export is not None:
        return _export_report(args)
    if args.markdown:
        raise ProjectError("--markdown prints from a run export: give --from-export DIR")
    with Store(args.db, create=False) as store:
        run_ids = args.run or [store.latest_run("synthetic")]
        if len(run_ids) > 1:
            raise ProjectError("give one synthetic run with --run")
        run = read_synthetic_run(store, run_ids[0])
    return _synthetic_report(args, run)


def _export_report(args: argparse.Namespace) -> int:
    """The synthetic tables of a run export (``--from-export DIR``): markdown (REPRODUCTION)
    or the usual report per run."""
    from dcem.analysis.run_report import SyntheticRun, clinical_elsewhere
    from dcem.analysis.synthetic_markdown import render_synthetic_markdown
    from dcem.store.run_export import load_run_export

    if args.run or (args.markdown and args.json):
        raise ProjectError("--from-export takes no --run, and prints either --markdown or --json")
    export = load_run_export(args.from_export)
    kinds = {export.run(r)["kind"] for r in export.run_ids}
    if kinds != {"synthetic"}:
        raise clinical_elsewhere(f"{args.from_export} holds {' and '.join(sorted(kinds))} runs "
                                 f"(python -m dcem_clinical report --from-export {args.from_export})")
    if args.markdown:
        sys.stdout.write(render_synthetic_markdown(export, escalation_cost=args.escalation_cost))
        return 0
    for run_id in export.run_ids:
        pick = lambda f: f[f["run_id"] == run_id].drop(columns="run_id").reset_index(drop=True)  # noqa: E731
        _synthetic_report(args, SyntheticRun(run_id, pick(export.metrics), pick(export.ablation),
                                             export.run(run_id)["spec"]))
        print()
    return 0


def _synthetic_report(args: argparse.Namespace, run: SyntheticRun) -> int:
    """Write one run's report: text (:func:`dcem.analysis.run_report.synthetic_run_text`) or ``--json``."""
    from dcem.analysis.run_report import synthetic_run_dict, synthetic_run_text

    if args.json:
        json.dump(synthetic_run_dict(run, escalation_cost=args.escalation_cost), sys.stdout, default=str)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(synthetic_run_text(run, escalation_cost=args.escalation_cost))
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    from dcem.store.database import Store
    from dcem.store.run_export import write_run_export

    with Store(args.db, read_only=True) as store:
        for run_id in args.run:
            store.check_run(run_id)
        manifest = write_run_export(store, args.run, args.out, command=args.command, models=[])
    print(f"wrote {len(manifest['files'])} files for {len(args.run)} run(s) to {args.out}")
    return 0


def _cmd_ceilings(args: argparse.Namespace) -> int:
    from dcem.analysis.ceilings_markdown import ceilings_markdown

    sys.stdout.write(ceilings_markdown(n=args.n, seed=args.seed))
    return 0


def _export_parser(sub: Any) -> None:
    p = sub.add_parser("ceilings", help="accuracy ceilings of the synthetic scenarios (markdown)")
    p.add_argument("--n", type=int_in(1000, MAX_SAMPLES), default=200_000, help="generated cases per scenario")
    p.add_argument("--seed", type=int_in(0, MAX_SEED), default=0)
    p.set_defaults(func=_cmd_ceilings)

    p = sub.add_parser("export", help="write runs as a small checkable directory (manifest + Parquet)")
    p.add_argument("--run", action="append", required=True, help="run id (repeatable)")
    p.add_argument("--out", required=True, help="directory to write")
    p.add_argument("--command", required=True, help="the exact command(s) that made the runs")
    p.set_defaults(func=_cmd_export)


def _cmd_calibrate(args: argparse.Namespace) -> int:
    from dcem.analysis.calibration_summary import calibration_summary, read_calibration_file, summary_text

    labels = [x.strip() for x in args.labels.split(",") if x.strip()] if args.labels else None
    cset, warnings = read_calibration_file(args.file, labels=labels, estimator=args.estimator)
    summary = calibration_summary(cset, warnings, alpha=args.alpha, prior_mode=args.prior)
    if args.json:
        json.dump(summary, sys.stdout, indent=2, allow_nan=False)
        sys.stdout.write("\n")
    else:
        sys.stdout.write(summary_text(summary))
    return 0


def _calibrate_parser(sub: Any) -> None:
    p = sub.add_parser("calibrate", help="read a calibration CSV (labelled or not) and print its confusion "
                                         "matrices and prior (docs/calibration_csv.md)")
    p.add_argument("file", help="calibration CSV: case_id, agent, reported_label and, for labelled cases, true_label")
    p.add_argument("--estimator", choices=["auto", "counts", "dawid-skene", "one-coin"], default="auto",
                   help="for cases without a true label: auto (counts when every case is labelled, else "
                        "dawid-skene with 3+ agents, one-coin with fewer), or one of the three")
    p.add_argument("--labels", default=None, help="the label list, comma-separated (default: the labels in the file)")
    p.add_argument("--alpha", type=float_in(0.01, 10.0), default=0.5, help="smoothing (default 0.5, as runs use)")
    p.add_argument("--prior", choices=["uniform", "empirical"], default="empirical")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_cmd_calibrate)


def _cmd_runs(args: argparse.Namespace) -> int:
    from dcem.store.database import Store

    with Store(args.db, create=False) as store:
        runs = store.runs()
    if runs.empty:
        print("(no runs)")
    else:
        print(runs[["run_id", "kind", "status", "created_at", "finished_at", "git_revision"]].to_string(index=False))
    return 0


def _merge_checks() -> Sequence[Any]:
    from dcem.store.merge_checks import DCEM_CHECKS

    return DCEM_CHECKS


def _export_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--from-export", default=None, metavar="DIR",
                   help="report the synthetic runs of a run export (python -m dcem export) instead of the store")
    p.add_argument("--markdown", action="store_true",
                   help="with --from-export: the synthetic blocks of REPRODUCTION.md")
    add_escalation_cost(p)


def _run_parser(sub: Any) -> None:
    """The ``run synthetic`` command and its options (each flag's value checked in range)."""
    p = sub.add_parser("run", help="run an experiment into the store")
    p.add_argument("kind", choices=["synthetic"])
    p.add_argument("--scenarios", default="S1,S2,S3a,S3b", help="comma-separated, e.g. S1,S3b")
    p.add_argument("--seeds", type=int_in(1, MAX_SEEDS), default=10, help="number of seeds")
    p.add_argument("--seed-start", type=int_in(0, MAX_SEED), default=0)
    p.add_argument("--xi", type=float_in(0.0, 1.0), default=1.0, help="steering compliance in [0, 1]")
    p.add_argument("--t-max", type=int_in(1, MAX_ROUNDS), default=12, help="round budget of the mediator")
    p.add_argument("--free-rounds", type=int_in(1, MAX_ROUNDS), default=22, help="rounds of free discussion")
    p.add_argument("--n-train", type=int_in(10, MAX_SAMPLES), default=20000, help="calibration samples per seed")
    p.add_argument("--n-eval", type=int_in(1, MAX_SAMPLES), default=100, help="evaluation samples per seed")
    p.add_argument("--no-ablation", action="store_true", help="skip the compliance ablation")
    world = p.add_mutually_exclusive_group()
    world.add_argument("--world", choices=["seed", "sharpened", "map"], default="seed",
                       help="agents as the specification writes them (p ∝ exp(s)), the sharpened "
                            "variant (p ∝ exp(3 s)) whose accuracies come close to Table 5's, or MAP "
                            "reports (App. B.7's reading: the label of largest score)")
    world.add_argument("--sharpness", type=float_in(0.0, MAX_SCALE), default=None,
                       help="any other inverse temperature (> 0)")
    p.add_argument("--kappa", type=float_in(0.0, MAX_SCALE), default=1.0,
                   help="peer influence of an exchange round (free discussion and CONTINUE)")
    p.add_argument("--compliance", choices=["adopt", "blend"], default="adopt",
                   help="adopt a recommendation with probability xi (eq. 21) or blend it (eq. 19)")
    p.add_argument("--param", action="append", default=[], metavar="KEY=VALUE",
                   help="mediator parameter default before fitting, e.g. alpha=0.5 (repeatable)")
    add_fit_options(p, where="the tuning cases")
    p.add_argument("--run-id", default=None, type=name_text, help="name the run (default: a hash of the settings); a stored run "
                   "resumes only with the settings it was started with")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_executor_arguments(p)
    p.set_defaults(func=_cmd_run)


def _parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m dcem", description="D-CEM mediator: audit, experiments, reports.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)

    p = sub.add_parser("explain", help="explain one episode given as JSON (FILE or - for stdin)")
    p.add_argument("file")
    p.add_argument("--compact", action="store_true", help="one-line JSON output")
    p.set_defaults(func=_cmd_explain)

    _run_parser(sub)

    p = sub.add_parser("report", help="print the comparison and ablation tables of a synthetic run")
    p.add_argument("--run", action="append", default=None,
                   help="run id (default: the newest synthetic run); clinical runs: python -m dcem_clinical report")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    _export_options(p)
    p.set_defaults(func=_cmd_report)

    p = sub.add_parser("runs", help="list stored runs")
    p.set_defaults(func=_cmd_runs)
    _export_parser(sub)
    _calibrate_parser(sub)

    for p in sub.choices.values():
        p.add_argument("--db", default=None, help="DuckDB file (default: $DCEM_DB or data/dcem.duckdb)")
    add_merge_command(sub, _merge_checks)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    return run_command(_parser().parse_args(argv),
                       "interrupted: finished cells are stored; run the same command again to resume")
