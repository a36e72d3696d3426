"""The group a command names: a preset or a group file, with the command line's overrides
(shared by ``run``, ``ask`` and ``eval``, so none of them imports another's command)."""
from __future__ import annotations

import argparse

from sag.group.config import GroupConfig, load_group_file, preset

__all__ = ["group_from_args"]


def group_from_args(args: argparse.Namespace) -> GroupConfig:
    """The group: a preset name or a JSON file, then the command-line overrides."""
    text = args.group
    cfg = load_group_file(text) if text.lower().endswith(".json") else preset(text)
    changes: dict[str, object] = {}
    if args.model:
        changes["backbones"] = (args.model,) * 4
    for name in ("t_max", "rationale_tokens", "top_k", "temperature", "n_cal"):
        value = getattr(args, name, None)
        if value is not None:
            changes[name] = value
    return cfg.with_changes(**changes) if changes else cfg
