"""``python -m sag train-views``: train a view group stage by stage (``docs/group_views.md``).

``--stage members`` trains each reasoning agent on its own view (``--agent R2`` for one);
each member is a run of its own, resumed from its last checkpoint by the same command,
and when all are trained the command writes a group file whose members carry their
adapters.  ``--stage debate`` (CTDE) and ``--stage judge`` each take the group file the
stage before wrote and write the next one.  Needs the training extra (``make train``).
"""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from common.cli_args import float_in, int_in

if TYPE_CHECKING:
    from sag.group.config import GroupConfig

__all__ = ["add_train_views_command"]

STAGES = ("members", "debate", "judge", "ship")


def _cmd_train_views(args: argparse.Namespace) -> int:
    from common.errors import ConfigError
    from sag.group.config import load_group_file
    from training.cli import require_training_libraries

    cfg = load_group_file(args.group)
    if args.stage == "ship":
        return _cmd_ship(args, cfg)
    if args.stage in ("debate", "judge"):
        return _cmd_later_stage(args, cfg)
    from sag.training.view_train_run import MemberStage, reasoning_ids

    agents = reasoning_ids(cfg) if args.agent == "all" else (args.agent,)
    if args.stage not in STAGES:
        raise ConfigError("stage", f"choose one of {', '.join(STAGES)}")
    from training.cli import settings_from

    settings = settings_from(args)
    stages = [MemberStage(cfg, a, args.model, settings, Path(args.out), args.fold_limit) for a in agents]  # checked before loading
    require_training_libraries()
    from sag.training.view_train_run import train_member
    from training.cli import measure_note, print_result, step_bar
    from training.store import TrainingRecorder

    adapters = {}
    for stage in stages:
        print(f"{stage.agent_id} reads {cfg.view_of(stage.agent_id)}")
        bar, progress = step_bar(settings.steps, args.quiet)
        result = train_member(TrainingRecorder(args.db), stage, progress=progress, on_measure=measure_note(args.quiet))
        bar.close()
        print_result(result, settings.steps, args.model)
        if result.stopped or result.adapter is None:
            return 0
        adapters[stage.agent_id] = f"{args.model}+lora:file:{result.adapter}"
    if args.agent == "all":
        from sag.training.view_stages import write_group_file

        keys = {**dict(cfg.agent_models), **adapters}
        out = write_group_file(cfg.with_changes(agent_models=keys), Path(args.out) / f"views-{cfg.digest()}" /
                               "group-members.json")
        print(f"group file: {out} (next: --stage debate --group {out})")
    return 0


def _cmd_ship(args: argparse.Namespace, cfg: "GroupConfig") -> int:
    """The trained group file with its adapters named by registry key (once exported)."""
    from common.db import PROJECT_ROOT
    from sag.training.view_stages import exported_names, shipped_group, write_group_file

    shipped = shipped_group(cfg, exported_names(cfg, PROJECT_ROOT / "data" / "adapters"), args.name)
    out = write_group_file(shipped, Path(args.ship_to))
    print(f"group file: {out} ({', '.join(f'{a} {m}' for a, m in shipped.agent_models)})")
    return 0


def _cmd_later_stage(args: argparse.Namespace, cfg: "GroupConfig") -> int:
    from training.cli import require_training_libraries, settings_from, step_bar

    from sag.training.view_stages import DebateStage, JudgeStage, train_debate, train_judge

    settings = settings_from(args)
    if args.stage == "debate":
        stage: DebateStage | JudgeStage = DebateStage(cfg, args.model, settings, Path(args.out), args.group_weight,
                                                    args.fold_limit)
    else:
        stage = JudgeStage(cfg, args.model, settings, Path(args.out), args.fold_limit)
    require_training_libraries()
    from training.cli import measure_note
    from training.store import TrainingRecorder

    bar, progress = step_bar(settings.steps, args.quiet)
    if isinstance(stage, DebateStage):
        result = train_debate(TrainingRecorder(args.db), stage, progress=progress)
    else:
        result = train_judge(TrainingRecorder(args.db), stage, progress=progress, on_measure=measure_note(args.quiet))
    bar.close()
    for name, value in result.measured.items():
        print(f"{name}: {value}")
    print(f"run {result.run_id}: {result.steps_done} of {settings.steps} steps"
          + (" (stopped; run the same command to resume)" if result.stopped else ""))
    if result.group_file is not None:
        print(f"group file: {result.group_file}")
    return 0


def add_train_views_command(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    from training.cli import add_training_flags

    p = sub.add_parser("train-views", help="train a group whose members read different views of DDXPlus-8 cases")
    p.add_argument("--group", required=True, help="the view group's JSON file (e.g. data/groups/ddx-views.json)")
    p.add_argument("--stage", default="members", choices=STAGES,
                   help="members: each reasoning agent learns its own view; debate: the members learn to use one "
                        "another's round-0 answers (CTDE); judge: the judge learns to weigh the debate; ship: the "
                        "judge stage's group file with every adapter named by the registry key it was exported to")
    p.add_argument("--name", default="ddx-views-trained", help="ship: the shipped group's name")
    p.add_argument("--ship-to", default="data/groups/ddx-views-trained.json", help="ship: the group file to write")
    p.add_argument("--fold-limit", type=int_in(2, 10_000), default=None,
                   help="use only the first N cases of each fold (a quick try; the shipped group uses every case)")
    p.add_argument("--group-weight", type=float_in(0.0, 100.0), default=1.0,
                   help="debate stage: the critic's weight of the group's answer beside the agent's own")
    p.add_argument("--agent", default="all", help="one reasoning agent (R1, R2 ...) or all")
    p.add_argument("--sampling", choices=("uniform", "balanced"), default="balanced",
                   help="balanced: every diagnosis drawn equally often in a batch")
    add_training_flags(p, steps=100)
    p.add_argument("-v", "--verbose", action="store_true")
    p.set_defaults(func=_cmd_train_views)
