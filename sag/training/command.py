"""``python -m sag train``: GRPO for the single agent, GRPO or CTDE for a group, on the
benchmarks' training splits.

The single agent (``--group single``) answers as in a ``single`` run; its adapter, once
trained, runs in any group as ``smollm2-135m+lora:file:<adapter>``.  A group
(``--group sag-6 --method grpo|ctde``) trains from its own debates
(:mod:`sag.training.group_train_run`): one adapter shared by its agents (GRPO) or one per role
(CTDE); the run ends with a group file that ``python -m sag run --group`` plays.  Items of several
benchmarks train together (``--benchmarks medqa,medmcqa,pubmedqa``; ``ddxplus8`` adds the
DDXPlus-8 cases as eight-option diagnosis questions); each benchmark's
HELD-OUT part (``--heldout`` items) is measured before and after.  Needs the training
extra (``make train``); resumable like every run.
"""
from __future__ import annotations

import argparse
from typing import TYPE_CHECKING
from pathlib import Path

from common.cli_args import float_in, int_in
from common.errors import ConfigError

if TYPE_CHECKING:
    from sag.group.config import GroupConfig

__all__ = ["add_train_command"]

KIND = "sag-single"
GROUP_KIND = "sag-group"
GROUP_BENCHMARKS = ("medqa", "medmcqa", "pubmedqa", "medsafetybench", "ddxplus8")
DEFAULT_ROLLOUTS = 4


def _benchmarks(text: str, known: tuple[str, ...] | None = None) -> tuple[str, ...]:
    from sag.training.single_agent import TRAINABLE_BENCHMARKS

    known = known or TRAINABLE_BENCHMARKS
    names = tuple(dict.fromkeys(b.strip().lower() for b in text.split(",") if b.strip()))
    bad = [b for b in names if b not in known]
    if not names or bad:
        raise ConfigError("benchmarks", f"choose among {', '.join(known)}, got {text!r}")
    return names


def _cmd_train(args: argparse.Namespace) -> int:
    from training.cli import require_training_libraries

    if args.group != "single":
        return _cmd_train_group(args)
    if args.method != "grpo":
        raise ConfigError("method", "the single agent trains with grpo; ctde trains a group (--group sag-6)")
    if args.rationale_actions:
        raise ConfigError("rationale_actions", "the single agent answers a letter without a rationale; rationale "
                                               "actions train a group (--group sag-6)")
    if args.group_size is None:
        args.group_size = 0
    benchmarks = _benchmarks(args.benchmarks)
    require_training_libraries()
    from clinical.training_split import heldout_items, train_items
    from runtime.factory import load_gguf
    from runtime.llama_backend import file_sha256
    from runtime.registry import resolve
    from sag.training.single_agent import build_single_items, items_hash
    from training.cli import measure_note, print_result, settings_from, step_bar
    from training.run import LetterRun, run_letter_training
    from training.store import TrainingRecorder

    settings = settings_from(args)
    path = resolve(args.model)
    backend = load_gguf(path, n_ctx=max(2048, settings.max_prompt_tokens + 8), n_threads=1, kv_cache_mb=0)
    train = [item for b in benchmarks for item in train_items(b)]
    items = build_single_items(backend, train, max_tokens=settings.max_prompt_tokens, rewards=settings.rewards)
    heldout = {f"heldout:{b}": build_single_items(backend, list(heldout_items(b))[:args.heldout],
                                                  max_tokens=settings.max_prompt_tokens, rewards=settings.rewards)
               for b in benchmarks} if args.heldout else {}
    del backend
    if len(items.ids) < len(train):
        print(f"left out {len(train) - len(items.ids)} of {len(train)} training items longer than "
              f"{settings.max_prompt_tokens} tokens")
    run = LetterRun(KIND, args.model, path, file_sha256(path), settings, items, "+".join(benchmarks) + ":train",
                    items_hash([i for i in train if i.item_id in set(items.ids)]), heldout, Path(args.out))
    bar, progress = step_bar(settings.steps, args.quiet)
    result = run_letter_training(TrainingRecorder(args.db), run, progress=progress, on_measure=measure_note(args.quiet))
    bar.close()
    print_result(result, settings.steps, args.model)
    return 0


def _group_of(args: argparse.Namespace) -> "GroupConfig":
    """The group to train, checked (a ConfigError for one it cannot train); fills in G."""
    from sag.group.config import preset
    from sag.training.group_training import GROUP_METHODS

    group = preset(args.group)
    if group.method == "single":
        raise ConfigError("group", "the single agent trains with --group single")
    if group.method not in GROUP_METHODS:
        raise ConfigError("group", f"{args.group} does not debate the way group training plays; choose a group of "
                                   f"method {', '.join(GROUP_METHODS)} (sag-6, sag-10, sag-6-no_judge ...)")
    if args.group_size is None:
        args.group_size = DEFAULT_ROLLOUTS
    if args.group_size < 2:
        raise ConfigError("group_size", "a group learns from several debates of each item: give --group-size 2 or more")
    if len(set(group.backbones)) > 1:
        raise ConfigError("group", f"group training adapts one base model; {args.group} mixes "
                                   f"{', '.join(dict.fromkeys(group.backbones))}")
    return group.with_changes(backbones=(args.model,) * 4)  # every role on the base being adapted


def _cmd_train_group(args: argparse.Namespace) -> int:
    from training.cli import require_training_libraries

    group = _group_of(args)
    benchmarks = _benchmarks(args.benchmarks, GROUP_BENCHMARKS)
    from sag.training.group_train_run import GroupPlay, GroupRun
    from training.config import CriticSettings

    if args.rationale_actions and args.method != "grpo":
        raise ConfigError("rationale_actions", "rationale tokens are actions of GRPO only; CTDE weighs each "
                                               "agent's final answer")
    play = GroupPlay(rounds=args.rounds, temperature=args.temperature, rationale_tokens=args.rationale_tokens,
                     rationale_actions=args.rationale_actions)
    critic = CriticSettings(hidden=args.critic_hidden, learning_rate=args.critic_lr, epochs=args.critic_epochs,
                            warmup=args.critic_warmup)
    require_training_libraries()
    from clinical.training_split import train_items
    from runtime.llama_backend import file_sha256
    from runtime.registry import resolve
    from sag.training.group_train_run import run_group_training
    from sag.runs.run import corpora_of, default_retrievers
    from sag.training.single_agent import items_hash
    from training.cli import settings_from, step_bar
    from training.run import check_layers
    from training.store import TrainingRecorder

    settings = settings_from(args, args.method)
    path = resolve(args.model)
    check_layers(path, settings.lora.layers)
    items = tuple(item for b in benchmarks for item in train_items(b))
    run = GroupRun(GROUP_KIND, group, args.model, path, file_sha256(path), settings, play, critic, items,
                   "+".join(benchmarks) + ":train", items_hash(items), Path(args.out))
    bar, progress = step_bar(settings.steps, args.quiet)
    result = run_group_training(TrainingRecorder(args.db), run, retrievers=default_retrievers(corpora_of(group)),
                                progress=progress)
    bar.close()
    if result.resumed_from:
        print(f"resumed from step {result.resumed_from}")
    print(f"run {result.run_id}: {result.steps_done} of {settings.steps} steps"
          + (" (stopped; run the same command to resume)" if result.stopped else ""))
    if result.dropped:
        print(f"{result.dropped} rollouts had a failed model call and were left out")
    if result.group_file is not None:
        print(f"group file: {result.group_file} (measure it: python -m sag run --group {result.group_file} "
              f"--benchmark <name>)")
    return 0


def add_train_command(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    from training.cli import add_training_flags

    p = sub.add_parser("train", help="train the single agent (LoRA, GRPO) on the benchmarks' training splits")
    p.add_argument("--group", default="single",
                   help="the group whose agents train: single, or a group preset such as sag-6")
    p.add_argument("--method", choices=("grpo", "ctde"), default="grpo",
                   help="grpo (one adapter shared by every agent) or ctde (one adapter per role, central critic)")
    p.add_argument("--benchmarks", default="medqa,medmcqa,pubmedqa",
                   help="comma list of training benchmarks: medqa, medmcqa, pubmedqa, ddxplus8 "
                        "(groups also medsafetybench)")
    p.add_argument("--rounds", type=int_in(1, 10), default=1, help="group runs: debate rounds after round 0")
    p.add_argument("--temperature", type=float_in(1e-3, 5.0), default=1.0,
                   help="group runs: sampling temperature of the agents' letters in rollouts")
    p.add_argument("--rationale-tokens", type=int_in(1, 512), default=48, help="group runs: rationale budget per turn")
    p.add_argument("--rationale-actions", action="store_true",
                   help="group GRPO runs: the rationales' tokens are actions too, beside the answers (slow on a "
                        "CPU: the path for a GPU)")
    p.add_argument("--critic-hidden", type=int_in(1, 65_536), default=64, help="ctde: critic width")
    p.add_argument("--critic-lr", type=float_in(1e-8, 1.0), default=1e-3, help="ctde: critic learning rate")
    p.add_argument("--critic-epochs", type=int_in(1, 10_000), default=20, help="ctde: critic passes per step")
    p.add_argument("--critic-warmup", type=int_in(0, 1_000_000), default=5,
                   help="ctde: first steps in which only the critic learns")
    add_training_flags(p)
    p.set_defaults(group_size=None)
    p.add_argument("-v", "--verbose", action="store_true")
    p.set_defaults(func=_cmd_train)
