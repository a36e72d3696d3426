"""The trained adapters a group can use, from the training store's finished runs.

A single-agent or diagnostician run (``adapter_file`` a ``.gguf``) is one adapter whose
roles the user chooses (reasoning by default).  A group run (``adapter_file`` its group
file, :mod:`sag.training.group_train_run`) is the whole trained group: each of its adapters goes
to the roles that trained it, so a CTDE group plays with one adapter per role.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from common.errors import ProjectError
from sag.group.config import load_group_file

__all__ = ["AdapterChoice", "adapter_choices", "Assignment"]

Assignment = tuple[str, str, tuple[str, ...]]
"""(base model, adapter file, role names)."""


@dataclass(frozen=True)
class AdapterChoice:
    """One entry of the picker: its label, and either a single adapter whose roles are chosen
    (``assignments`` of one, roles the default) or a trained group (``fixed``: each
    adapter on its own roles)."""

    label: str
    assignments: tuple[Assignment, ...]
    fixed: bool


def _group_choice(label: str, base_model: str, group_file: str) -> AdapterChoice:
    from runtime.adapters import ADAPTER_MARK

    cfg = load_group_file(group_file)
    roles: dict[str, list[str]] = {}
    for spec in cfg.agents():
        head, mark, tail = spec.model.partition(f"{ADAPTER_MARK}file:")
        if mark and head == base_model:
            roles.setdefault(tail, [])
            if spec.role.value not in roles[tail]:
                roles[tail].append(spec.role.value)
    if not roles:
        raise ProjectError(f"group file {group_file} names no adapter on {base_model}")
    return AdapterChoice(label, tuple((base_model, f, tuple(r)) for f, r in roles.items()), True)


def adapter_choices(runs: Any) -> tuple[list[AdapterChoice], list[str]]:
    """The choices of the finished runs in ``runs`` (a frame of the training store's runs),
    and one line for each run that cannot be offered (a missing or damaged group file)."""
    choices, problems = [], []
    if runs is None or runs.empty:
        return choices, problems
    done = runs[(runs["status"] == "finished") & runs["adapter_file"].notna()]
    for r in done.itertuples():
        label = f"{r.run_id} · {r.kind} · {r.base_model}"
        file = str(r.adapter_file)
        if file.endswith(".json"):
            try:
                choices.append(_group_choice(f"{label} · whole group ({r.method})", str(r.base_model), file))
            except ProjectError as exc:
                problems.append(f"{r.run_id}: {exc}")
        else:
            choices.append(AdapterChoice(label, ((str(r.base_model), file, ("reasoning",)),), False))
    return choices, problems
