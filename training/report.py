"""A training export as Markdown: the run in one paragraph and, per held-out set, accuracy
before and after training with Wilson 95 % intervals, chance, the best a constant answer
can do, the most frequent answer's share, and the paired difference with its bootstrap
interval."""
from __future__ import annotations

import numpy as np

from common.intervals import paired_bootstrap, wilson_interval
from training.export import TrainingExport
from training.views import CONSTANT_SHARE, before_after, best_constant

__all__ = ["export_markdown", "BOOTSTRAP_SEED", "RESAMPLES"]

BOOTSTRAP_SEED = 0
RESAMPLES = 10_000


def _acc(right: np.ndarray) -> str:
    low, high = wilson_interval(int(right.sum()), right.size)
    return f"{right.mean():.3f} [{low:.3f}, {high:.3f}]"


def _top(answers: np.ndarray) -> str:
    letters, counts = np.unique(answers, return_counts=True)
    k = int(counts.argmax())
    return f"{letters[k]} {counts[k] / answers.size:.0%}"


def export_markdown(export: TrainingExport) -> str:
    run, s = export.run, export.run["settings"]
    lora, grpo = s["lora"], s["grpo"]
    layers = f"the top {lora['layers']} layers" if lora.get("layers") else "every layer"
    seconds = float(export.steps["seconds"].sum())
    lines = [f"{_what(export)}: {run['kind']} trained with {run['method'].upper()} on "
             f"{run['data_name']} ({run['n_train']} items), {s['steps']} steps of {s['batch_size']} items, "
             f"learning rate {s['learning_rate']:g}, {s['updates_per_batch']} update(s) per batch, "
             f"{_sampling(export, grpo['group_size'])}"
             f", clip {grpo['eps']:g}, KL weight {grpo['beta']:g}, LoRA r={lora['r']} alpha={lora['alpha']:g} on "
             f"{layers}; {seconds / 60:.0f} minutes of optimiser steps.", "",
             "| held-out set | items | chance | best single letter | accuracy before [95 % CI] | "
             "most frequent answer before | accuracy after [95 % CI] | most frequent answer after | "
             "after - before [95 % paired bootstrap] |",
             "|---|---|---|---|---|---|---|---|---|"]
    if export.answers.empty:
        lines[2:] = ["No held-out measurement is part of this run; a trained group is measured by playing it "
                     "(`python -m sag run --group <group file> --benchmark heldout:<name>`)."]
        return "\n".join(lines) + "\n"
    last = int(s["steps"])
    evals = export.evals.set_index(["split", "step"])
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    constant = False
    for split, part in export.answers.groupby("split", sort=True):
        wide, before, after = before_after(part, last)
        diff, low, high = paired_bootstrap(before, after, rng, resamples=RESAMPLES)
        chance = 1.0 / int(evals.loc[(split, 0), "n_options"])
        letter, share = best_constant(part[part["item_id"].isin(wide.index)])
        constant |= max(_share(wide[0]), _share(wide[last])) > CONSTANT_SHARE
        lines.append(f"| {split} | {len(wide)} | {chance:.3f} | {letter} {share:.3f} | {_acc(before)} | "
                     f"{_top(wide[0].to_numpy())} | {_acc(after)} | {_top(wide[last].to_numpy())} | "
                     f"{diff:+.3f} [{low:+.3f}, {high:+.3f}] |")
    if constant:
        lines += ["", f"Where the most frequent answer exceeds {CONSTANT_SHARE:.0%} of the answers the model mostly "
                      "answers one letter: its accuracy is then close to that letter's share of right answers "
                      "(the best single letter shows the most a constant answer reaches), which is not knowledge."]
    return "\n".join(lines) + "\n"


def _sampling(export: TrainingExport, size: int) -> str:
    if export.group_file is not None:
        critic = export.run["settings"].get("critic")
        if not critic:
            return f"{size} debates per item"
        return (f"{size} debates per item, a central critic ({critic['hidden']} hidden units, learning rate "
                f"{critic['learning_rate']:g}, {critic['epochs']} passes per step; the first {critic['warmup']} "
                "steps train only the critic)")
    return "exact expectation over the options" if size == 0 else f"{size} sampled answers"


def _what(export: TrainingExport) -> str:
    if export.group_file is None:
        return f"Adapter `{export.adapter_key}`"
    keys = ", ".join(f"`{k}`" for k in export.adapter_keys)
    return f"Group `{export.folder.name}/{export.group_file.name}` (adapters {keys})"


def _share(answers: object) -> float:
    values = np.asarray(answers)
    return float(np.unique(values, return_counts=True)[1].max() / values.size) if values.size else 0.0
