"""Command line: ``python -m dcem_clinical run | report | models | export | cache | merge | train``.

``run`` runs the clinical LLM experiment (a progress bar counts agent turns,
cache hits included) and resumes when the same command is repeated.  ``export`` writes
stored runs, the command that made them and their model files' sha256 into a small
directory (:mod:`dcem.store.run_export`); ``report`` prints Tables 6, 7 and 1 of stored runs
or, with ``--from-export``, of such a directory (:mod:`dcem_clinical.report.command`).  ``merge PART.duckdb --db STORE`` copies into STORE the rows of another
store file it lacks (a grid split over processes or machines, one dataset each).  Bad input exits with status 2 and a one-line message on stderr,
never a traceback.
"""
from __future__ import annotations

import argparse
from typing import Sequence

from common.errors import ConfigError
from common.cli_kit import (Parser, add_executor_arguments, add_merge_command, executor_from_args, float_in, int_in,
                            progress_bar, report_failed_units, run_command)
from dcem.core.config import MAX_ROUNDS
from dcem.fit_options import add_fit_options, risk_target_from_args
from dcem_clinical.report.command import add_report_command
from dcem_clinical.train_cli import add_train_command
from runtime.factory import MAX_GPU_LAYERS, MAX_THREADS, N_CTX_RANGE

__all__ = ["main"]


def _scenarios(text: str) -> tuple[str, ...]:
    from dcem.core.vocabulary import SCENARIOS

    if text.strip().lower() == "all":
        return SCENARIOS
    return tuple(s.strip() for s in text.split(",") if s.strip())


def _stat_dialogue(args: argparse.Namespace) -> object:
    from dcem_clinical.stat_dialogue import StatDialogue

    if args.stat_dialogue == "fixed":
        return None
    return StatDialogue(anchor=args.stat_anchor, kappa=args.stat_kappa, compliance=args.stat_compliance)


def _cmd_run(args: argparse.Namespace) -> int:
    from dcem.core.config import MediatorConfig
    from dcem.store.database import Store
    from dcem_clinical.run import ClinicalSpec, check_members, run_clinical

    dataset = _dataset(args)
    _check_cal_cases(dataset, args.cal_cases)
    agents = tuple(a.strip() for a in args.agents.split(","))
    if len(agents) == 1:
        agents = (agents[0], agents[0])
    spec = ClinicalSpec(dataset=dataset, scenarios=_scenarios(args.scenario),
                        seeds=tuple(range(args.seed_start, args.seed_start + args.seeds)),
                        n_cal=args.cal_cases, n_test=args.cases, agents=agents,  # type: ignore[arg-type]
                        mode=args.mode, temperature=args.temperature, free_rounds=args.free_rounds,
                        n_ctx=args.n_ctx, few_shot_k=args.few_shot, stop_when_decided=args.stop_when_decided,
                        layout=args.layout, stat_dialogue=_stat_dialogue(args), delta_rule=args.delta,
                        risk_target=risk_target_from_args(args),
                        base_config=MediatorConfig(prior="empirical", t_max=args.t_max))
    check_members(spec)  # model keys and adapters, before Ray starts or the store opens
    if spec.case_file is not None:
        from clinical.datasets import load_dataset
        from dcem_clinical.case_lengths import check_case_lengths

        check_case_lengths(load_dataset(dataset), spec.agents, spec.scenarios, spec.n_ctx)
    bar, progress = progress_bar(f"{spec.dataset}", "turn", quiet=args.quiet)
    threads = args.threads or (args.worker_threads if args.executor == "ray" else None)
    # Ray is joined (a cluster that does not answer refused) before the store is opened
    with executor_from_args(args) as executor, Store(args.db) as store:
        try:
            summary = run_clinical(store, spec, n_gpu_layers=args.n_gpu_layers, n_threads=threads,
                                   progress=progress, executor=executor)
        finally:
            bar.close()
    state = "resumed" if summary.resumed else "new"
    print(f"run {summary.run_id} ({state}): {summary.computed} cells computed, "
          f"{summary.skipped} already stored, {summary.total} in all; "
          f"report: python -m dcem_clinical report --run {summary.run_id}")
    return report_failed_units(summary, "cell")


def _dataset(args: argparse.Namespace) -> str:
    """The dataset name of ``--dataset``: a shipped dataset, or a case file read (and
    checked) here, with ``--labels``, ``--high-risk``, ``--l-high`` and ``--loss``."""
    from clinical.datasets import DATASETS

    own = any(getattr(args, k) is not None for k in ("labels", "high_risk", "l_high", "loss"))
    if args.dataset in DATASETS:
        if own:
            raise ConfigError("dataset", f"--labels, --high-risk, --l-high and --loss describe a case file; "
                                         f"{args.dataset} has its own")
        return str(args.dataset)
    from pathlib import Path

    from clinical.case_file import CaseFileOptions, read_case_file
    from clinical.datasets import use_dataset

    if not Path(args.dataset).is_file():
        raise ConfigError("dataset", f"{args.dataset!r} is neither a shipped dataset ({', '.join(DATASETS)}) nor a "
                                     "case file")
    def names(text: str | None) -> tuple[str, ...] | None:
        return None if text is None else tuple(x.strip() for x in text.split(","))

    options = CaseFileOptions(labels=names(args.labels), high_risk=names(args.high_risk) or (),
                              l_high=5.0 if args.l_high is None else args.l_high, loss_file=args.loss)
    return use_dataset(read_case_file(args.dataset, options)).name


def _check_cal_cases(dataset: str, n_cal: int | None) -> None:
    """``--cal-cases``: at least one CAL case of each of the dataset's classes (the split is
    class-stratified), or the agents' confusions and the thresholds are fitted on nothing;
    refused before any model starts."""
    from clinical.datasets import load_dataset

    classes = len(load_dataset(dataset).labels)
    if n_cal is not None and n_cal < classes:
        raise ConfigError("cal_cases", f"{dataset} has {classes} classes: give --cal-cases {classes} or more (one "
                                       f"CAL case of each class at least), got {n_cal}")


def _cmd_models(args: argparse.Namespace) -> int:
    from common.cli_args import one_line
    from common.errors import ProjectError
    from runtime.model_info import model_info
    from runtime.registry import available_models

    for spec in available_models():  # a file in data/adapters/ that is no adapter is left out with a warning
        line = f"{spec.key:16} {spec.source:9} {spec.licence:28} {spec.name}"
        if not spec.installed:
            line += f"  (not installed: {spec.note})"
        print(line)
        if args.info and spec.installed:
            try:  # one model that cannot be read is said so on its line; the others are still listed
                info = model_info(spec.path)
            except ProjectError as exc:
                print(f"{'':16} cannot describe it: {one_line(str(exc))}")
                continue
            print(f"{'':16} {info.architecture}, {info.quantization}, context {info.context_length}, "
                  f"{info.size_bytes:,} bytes, sha256 {info.sha256}")
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    from dcem.store.database import Store
    from dcem.store.run_export import write_run_export
    from dcem_clinical.informed import run_turn_examples
    from dcem_clinical.model_files import model_file_entries, run_model_keys

    with Store(args.db, read_only=True) as store:
        for run_id in args.run:
            store.check_run(run_id)
        models = model_file_entries(run_model_keys(store, args.run))
        manifest = write_run_export(store, args.run, args.out, command=args.command, models=models,
                                    turn_examples=run_turn_examples(store, args.run))
    rows = sum(f["rows"] for f in manifest["files"])
    print(f"exported {len(manifest['runs'])} run(s), {rows} rows in {len(manifest['files'])} files, to {args.out}; "
          f"report: python -m dcem_clinical report --from-export {args.out}")
    for m in models:
        print(f"  {m['key']}: {m['file'] or '-'} sha256 {m['sha256'] or '-'} {m['note']}".rstrip())
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m dcem_clinical", description="Local LLM agents on clinical datasets under D-CEM.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    _run_parser(sub)
    add_report_command(sub)
    from dcem_clinical.views_references import add_views_references_command

    add_views_references_command(sub)

    p = sub.add_parser("models", help="list the model registry")
    p.add_argument("--info", action="store_true", help="also read each file's GGUF metadata and sha256")
    p.set_defaults(func=_cmd_models)

    p = sub.add_parser("export", help="write stored runs, their command and model sha256 into a directory")
    p.add_argument("--run", action="append", required=True, help="run id (repeat for several runs)")
    p.add_argument("--out", required=True, help="directory of the export (manifest.json and Parquet files)")
    p.add_argument("--command", required=True, help="the exact command(s) that made the runs")
    p.add_argument("--db", default=None, help="DuckDB file (default: $DCEM_DB or data/dcem.duckdb)")
    p.set_defaults(func=_cmd_export)
    _cache_parser(sub)
    add_merge_command(sub, _merge_checks)
    add_train_command(sub)
    return parser


def _merge_checks() -> Sequence[object]:
    """The rules of a clinical store's tables: D-CEM's and the call log's."""
    from dcem.store.merge_checks import DCEM_CHECKS
    from runtime.merge_checks import call_log_checks

    return (*DCEM_CHECKS, *call_log_checks(("runs",)))


def _stat_options(p: argparse.ArgumentParser) -> None:
    """The statistical members' options of ``run``."""
    p.add_argument("--stat-dialogue", choices=["responsive", "fixed"], default="responsive",
                   help="statistical members: responsive (take the scenario's role, hear the others' previous "
                        "answers, answer a challenge) or fixed (always the classifier's answer, as in the runs "
                        "shipped before views existed)")
    p.add_argument("--stat-anchor", type=float_in(0.0, 20.0), default=3.0,
                   help="log-odds an anchored statistical member adds to its anchor labels")
    p.add_argument("--stat-kappa", type=float_in(0.0, 20.0), default=1.0,
                   help="score the other members' previous answers add (kappa / (A - 1) per member)")
    p.add_argument("--stat-compliance", type=float_in(0.0, 1.0), default=1.0,
                   help="share of the reference contrast a challenged statistical member adopts (xi)")


def _dataset_options(p: argparse.ArgumentParser) -> None:
    """``run``'s dataset: a shipped one or a case file, with the case file's labels and loss."""
    p.add_argument("--dataset", default="ddxplus8",
                   help="ddxplus8, medqa-tri, or your own case file (.jsonl or .csv: id, text, label[, views, split]; "
                        "docs/own_cases.md)")
    p.add_argument("--labels", default=None, help="a case file's labels A,B,... in this order (default: those that "
                                                  "occur, sorted)")
    p.add_argument("--high-risk", default=None, help="a case file's high-risk classes A,B (missing one costs --l-high)")
    p.add_argument("--l-high", type=float_in(0.0, 1000.0), default=None,
                   help="a case file's cost of missing a high-risk class (default 5; others cost 1)")
    p.add_argument("--loss", default=None, help="a case file's whole loss matrix, a JSON file {labels, loss}")


def _run_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``run`` command and its options."""
    p = sub.add_parser("run", help="run a clinical experiment into the store")
    _dataset_options(p)
    p.add_argument("--scenario", default="S1", help="S1, S2, S3a, S3b, a comma list, or all")
    p.add_argument("--seeds", type=int_in(1, 10_000), default=1, help="number of seeds (0 .. N-1 after --seed-start)")
    p.add_argument("--seed-start", type=int_in(0, 2**31 - 1), default=0)
    p.add_argument("--cases", type=int_in(1, 1_000_000), default=None, help="TEST cases per seed (default 160 / 140)")
    p.add_argument("--cal-cases", type=int_in(1, 1_000_000), default=None, help="CAL cases per seed (default 80 / 70)")
    p.add_argument("--agents", default="smollm2-135m,gemma3-270m",
                   help="the panel's members A,B[,C...] (2 to 8; one key alone is used twice): model keys, e.g. "
                        "smollm2-135m,file:models/x.gguf (file: paths must lie in $DCEM_MODELS_DIR, default "
                        "models/), or a statistical agent fit on each seed's CAL split: stat (DDXPlus: naive "
                        "Bayes over evidence codes; MedQA-Tri: TF-IDF + logistic regression), stat:nb-evidence, "
                        "stat:lr-evidence, stat:tfidf-lr, each with an optional @VIEW reading part of a case "
                        "(DDXPlus: complaint, history, symptoms; MedQA-Tri: history, findings, vignette, answer); "
                        "e.g. stat@complaint,stat@history,smollm2-135m")
    _stat_options(p)
    p.add_argument("--mode", choices=["scored", "json", "scored-calibrated"], default="scored",
                   help="scored-calibrated: scored answers divided by the agent's content-free distribution")
    p.add_argument("--few-shot", type=int_in(0, 16), default=0, metavar="K",
                   help="show each agent the K most similar solved CAL cases of the seed (0 = none)")
    p.add_argument("--stop-when-decided", action="store_true",
                   help="on TEST, ask a case's agents nothing after D-CEM certifies or escalates it (the "
                        "paper's protocol; default: every case plays all --t-max rounds, so a what-if can "
                        "replay later stops)")
    p.add_argument("--layout", choices=["agent-first", "case-first"], default="agent-first",
                   help="where each agent's name and role stand in its prompt: agent-first (the system turn; "
                        "every shipped run) or case-first (after the case, so agents on one model evaluate "
                        "a case once between them)")
    p.add_argument("--delta", choices=["fitted", "eq14"], default="fitted",
                   help="the escalation gate's delta: fitted on CAL with the other thresholds (every shipped run) "
                        "or c / kappa_1 of eq. 14, kappa_1 the slope of the loss on the energy over CAL")
    add_fit_options(p, where="the CAL trajectories")
    p.add_argument("--temperature", type=float_in(0.0, 2.0), default=0.0)
    p.add_argument("--t-max", type=int_in(1, MAX_ROUNDS), default=6, help="mediator round budget")
    p.add_argument("--free-rounds", type=int_in(1, MAX_ROUNDS), default=6, help="rounds of free discussion")
    p.add_argument("--n-ctx", type=int_in(max(256, N_CTX_RANGE[0]), N_CTX_RANGE[1]), default=2048,
                   help="model context length in tokens")
    p.add_argument("--n-gpu-layers", type=int_in(-1, MAX_GPU_LAYERS), default=None,
                   help="layers to offload to a GPU (-1 all, 0 none; default: all when a GPU build is found)")
    p.add_argument("--threads", type=int_in(1, MAX_THREADS), default=None,
                   help=f"CPU threads per model, 1 to {MAX_THREADS} (default: all cores)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.add_argument("--db", default=None, help="DuckDB file (default: $DCEM_DB or data/dcem.duckdb)")
    add_executor_arguments(p)
    p.set_defaults(func=_cmd_run)


def _cmd_cache(args: argparse.Namespace) -> int:
    from dcem.store.database import Store
    from runtime.call_log import CallLog

    with Store(args.db, create=False) as store:
        log = CallLog(store)
        if args.clear_invalid:
            print(f"marked {log.clear_invalid()} logged replies with unusable probability vectors as failed; "
                  "they will be asked again")
        else:
            print(f"{log.count()} logged calls, {log.invalid_count()} with unusable probability vectors "
                  "(clear them with --clear-invalid)")
    return 0


def _cache_parser(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("cache", help="inspect the call log; --clear-invalid stops poisoned replies from answering")
    p.add_argument("--clear-invalid", action="store_true",
                   help="mark logged replies whose probability vector is not finite or has no mass as failed")
    p.add_argument("--db", default=None, help="DuckDB file (default: $DCEM_DB or data/dcem.duckdb)")
    p.set_defaults(func=_cmd_cache)


def main(argv: Sequence[str] | None = None) -> int:
    return run_command(_parser().parse_args(argv),
                       "interrupted: finished cells are stored and every agent call is in the call log; "
                       "run the same command again to resume")
