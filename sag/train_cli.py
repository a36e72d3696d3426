"""``python -m sag train``: GRPO for the single agent on the benchmarks' training splits.

The single agent (``--group single``) answers as in a ``single`` run; its adapter, once
trained, runs in any group as ``smollm2-135m+lora:file:<adapter>``.  Items of several
benchmarks train together (``--benchmarks medqa,medmcqa,pubmedqa``; ``ddxplus8`` adds the
DDXPlus-8 cases as eight-option diagnosis questions); each benchmark's
HELD-OUT part (``--heldout`` items) is measured before and after.  Needs the training
extra (``make train``); resumable like every run.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from common.errors import ConfigError

__all__ = ["add_train_command"]

KIND = "sag-single"


def _benchmarks(text: str) -> tuple[str, ...]:
    from sag.training import TRAINABLE_BENCHMARKS

    names = tuple(dict.fromkeys(b.strip().lower() for b in text.split(",") if b.strip()))
    bad = [b for b in names if b not in TRAINABLE_BENCHMARKS]
    if not names or bad:
        raise ConfigError("benchmarks", f"choose among {', '.join(TRAINABLE_BENCHMARKS)}, got {text!r}")
    return names


def _cmd_train(args: argparse.Namespace) -> int:
    from training.cli import require_training_libraries

    if args.group != "single":
        raise ConfigError("group", "this command trains the single agent; group training (GRPO over debates, "
                                   "CTDE) is not available yet")
    benchmarks = _benchmarks(args.benchmarks)
    require_training_libraries()
    from clinical.training_split import heldout_items, train_items
    from runtime.llama_backend import LlamaCppBackend, file_sha256
    from runtime.registry import resolve
    from sag.training import build_single_items, items_hash
    from training.cli import print_result, settings_from, step_bar
    from training.run import LetterRun, run_letter_training
    from training.store import TrainingRecorder

    settings = settings_from(args)
    path = resolve(args.model)
    backend = LlamaCppBackend(path, n_ctx=max(2048, settings.max_prompt_tokens + 8), n_threads=1, kv_cache_mb=0)
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
    result = run_letter_training(TrainingRecorder(args.db), run, progress=progress)
    bar.close()
    print_result(result, settings.steps, args.model)
    return 0


def add_train_command(sub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    from training.cli import add_training_flags

    p = sub.add_parser("train", help="train the single agent (LoRA, GRPO) on the benchmarks' training splits")
    p.add_argument("--group", default="single", help="the group whose agents train (single)")
    p.add_argument("--benchmarks", default="medqa,medmcqa,pubmedqa", help="comma list of training benchmarks: medqa, medmcqa, pubmedqa, ddxplus8")
    add_training_flags(p)
    p.add_argument("-v", "--verbose", action="store_true")
    p.set_defaults(func=_cmd_train)
