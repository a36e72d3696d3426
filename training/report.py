"""A training export as Markdown: the run in one paragraph and, per held-out set, accuracy
before and after training with Wilson 95 % intervals, chance, the best a constant answer
can do, the most frequent answer's share, and the paired difference with its bootstrap
interval."""
from __future__ import annotations

from typing import Any

import numpy as np

from common.errors import InputError
from common.intervals import paired_bootstrap, wilson_interval
from training.class_recall import heldout_class_recall
from training.export import MANIFEST, TrainingExport
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


_WHOLE, _NUMBER, _TEXT = "a whole number", "a number", "text"
# what the report reads of the run (path in the manifest's run, kind), beside the tables
_READS: tuple[tuple[tuple[str, ...], str], ...] = (
    (("kind",), _TEXT), (("method",), _TEXT), (("data_name",), _TEXT), (("n_train",), _WHOLE),
    (("settings", "steps"), _WHOLE), (("settings", "batch_size"), _WHOLE), (("settings", "learning_rate"), _NUMBER),
    (("settings", "updates_per_batch"), _WHOLE), (("settings", "lora", "r"), _WHOLE),
    (("settings", "lora", "alpha"), _NUMBER), (("settings", "grpo", "group_size"), _WHOLE),
    (("settings", "grpo", "eps"), _NUMBER), (("settings", "grpo", "beta"), _NUMBER))
_CRITIC = ("hidden", "learning_rate", "epochs", "warmup")
_KEYS = {"steps": ["step"], "evals": ["step", "split"], "answers": ["step", "split", "item_id"]}


def _holds(value: Any, kind: str) -> bool:
    if kind == _TEXT:
        return isinstance(value, str)
    number = isinstance(value, (int, float)) and not isinstance(value, bool) and np.isfinite(value)
    return number and (kind == _NUMBER or isinstance(value, int))


def _check(export: TrainingExport) -> None:
    """InputError naming the field or file when the export lacks what the report reads:
    the run's settings, one row per key of each table, and the step-0 measurement of
    every held-out set with answers."""
    where = _where(export, MANIFEST)
    for path, kind in _READS:
        value: Any = export.run
        for key in path:
            value = value.get(key) if isinstance(value, dict) else None
        if not _holds(value, kind):
            raise InputError("export", f"{where}: run.{'.'.join(path)} must be {kind}, got {value!r}")
    layers = export.run["settings"]["lora"].get("layers")
    critic = export.run["settings"].get("critic")
    if (layers is not None and not _holds(layers, _WHOLE)) or (critic and not (
            isinstance(critic, dict) and all(_holds(critic.get(k), _NUMBER) for k in _CRITIC))):
        raise InputError("export", f"{where}: run.settings.lora.layers or run.settings.critic is malformed")
    for table, key in _KEYS.items():
        twice = getattr(export, table).duplicated(key)
        if twice.any():
            row = getattr(export, table)[twice].iloc[0]
            raise InputError("export", f"{_where(export, table + '.parquet')} holds more than one row for "
                                       f"({', '.join(str(row[k]) for k in key)})")
    measured = set(zip(export.evals["split"], export.evals["step"]))
    missing = sorted(s for s in set(export.answers["split"]) if (s, 0) not in measured)
    if missing:
        raise InputError("export", f"{_where(export, 'evals.parquet')} has no step-0 row for the held-out set "
                                   f"{missing[0]!r}, whose answers the export holds")


def _balanced(settings: dict[str, Any]) -> str:
    """How a step drew its batch, when not uniformly (``--sampling balanced``)."""
    return " with every diagnosis drawn equally often" if settings.get("sampling") == "balanced" else ""


def _supervised(settings: dict[str, Any]) -> str:
    """The log-likelihood term's weight beside GRPO's, when a run had one (``--supervised W``)."""
    weight = float(settings.get("supervised", 0.0) or 0.0)
    return f", log-likelihood weight {weight:g}" if weight else ""


def export_markdown(export: TrainingExport) -> str:
    _check(export)
    run, s = export.run, export.run["settings"]
    lora, grpo = s["lora"], s["grpo"]
    layers = f"the top {lora['layers']} layers" if lora.get("layers") else "every layer"
    seconds = float(export.steps["seconds"].sum())
    lines = [f"{_what(export)}: {run['kind']} trained with {run['method'].upper()} on "
             f"{run['data_name']} ({run['n_train']} items), {s['steps']} steps of {s['batch_size']} items"
             f"{_balanced(s)}, "
             f"learning rate {s['learning_rate']:g}, {s['updates_per_batch']} update(s) per batch, "
             f"{_sampling(export, grpo['group_size'])}"
             f", clip {grpo['eps']:g}, KL weight {grpo['beta']:g}{_supervised(s)}, LoRA r={lora['r']} "
             f"alpha={lora['alpha']:g} on "
             f"{layers}; {seconds / 60:.0f} minutes of optimiser steps.", "",
             "| held-out set | items | chance | best single letter | accuracy before [95 % CI] | "
             "most frequent answer before | accuracy after [95 % CI] | most frequent answer after | "
             "after - before [95 % paired bootstrap] |",
             "|---|---|---|---|---|---|---|---|---|"]
    if run.get("status", "finished") != "finished":
        return "\n".join(lines[:2] + _unfinished_lines(export)) + "\n"
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
    lines += _recall_lines(export)
    if constant:
        lines += ["", f"Where the most frequent answer exceeds {CONSTANT_SHARE:.0%} of the answers the model mostly "
                      "answers one letter: its accuracy is then close to that letter's share of right answers "
                      "(the best single letter shows the most a constant answer reaches), which is not knowledge."]
    return "\n".join(lines) + "\n"


def _unfinished_lines(export: TrainingExport) -> list[str]:
    """What a run not finished has: its state, and each held-out set's accuracy before training."""
    run = export.run
    resume = " Repeat the command that started it to resume it." if run["status"] == "stopped" else ""
    lines = [f"This run is {run['status']} after step {run['settings']['steps']}: it has no adapter yet, and its "
             f"held-out sets are measured after training when it finishes.{resume}"]
    evals = export.evals.set_index(["split", "step"])
    for split, part in export.answers[export.answers["step"] == 0].groupby("split", sort=True):
        right = (part["answer"] == part["truth"]).to_numpy()
        chance = 1.0 / int(evals.loc[(split, 0), "n_options"])
        lines.append(f"Before training on {split} ({right.size} items): accuracy {_acc(right)}, chance "
                     f"{chance:.3f}, most frequent answer {_top(part['answer'].to_numpy())}.")
    return lines


def _recall_lines(export: TrainingExport) -> list[str]:
    """Recall per class after training, one line per held-out set (each class with its
    recall and its number of items), and each class never answered right in bold words."""
    table, flags = heldout_class_recall(export.answers, str(export.run["data_name"]))
    lines = [""]
    for split, part in table.groupby("Held-out set", sort=True):
        classes = ", ".join(f"{name} {recall:.2f} ({items})" for name, recall, items
                            in zip(part["Class"], part["Recall after"], part["Items"]))
        lines.append(f"Recall per class after training on {split} (items): {classes}.")
    lines += [f"**{flag}**" for flag in flags]
    return lines


def _sampling(export: TrainingExport, size: int) -> str:
    if export.group_file is not None or "group" in export.run["settings"]:
        critic = export.run["settings"].get("critic")
        if not critic and size == 0:
            return ("exact expectation over each member's letters with the other members' answers held fixed "
                    "(a central critic that knows the right answer)")
        if not critic:
            return f"{size} debates per item"
        return (f"{size} debates per item, a central critic ({critic['hidden']} hidden units, learning rate "
                f"{critic['learning_rate']:g}, {critic['epochs']} passes per step; the first {critic['warmup']} "
                "steps train only the critic)")
    return "exact expectation over the options" if size == 0 else f"{size} sampled answers"


def _what(export: TrainingExport) -> str:
    """The adapter or group the run made (a run of a store without one: the run)."""
    if export.group_file is None and "adapter" not in export.manifest:
        return f"Training run `{export.run['run_id']}`"
    if export.group_file is None:
        return f"Adapter `{export.adapter_key}`"
    keys = ", ".join(f"`{k}`" for k in export.adapter_keys) or "unknown: the group file cannot be read"
    return f"Group `{export.folder.name}/{export.group_file.name}` (adapters {keys})"


def _where(export: TrainingExport, file: str) -> str:
    """Where a problem lies: a file of the export, or the run in its store."""
    store = export.manifest.get("store")
    return f"training run {export.run.get('run_id')} in {store}" if store else str(export.folder / file)


def _share(answers: object) -> float:
    values = np.asarray(answers)
    return float(np.unique(values, return_counts=True)[1].max() / values.size) if values.size else 0.0
