"""A small SAG run launched from the dashboard: its checked settings and what the page says.

The Agent group page offers a benchmark, a group preset, 1-50 items, a seed and the
round limit; :func:`launch_spec` turns them into a :class:`~sag.runs.run.SagRunSpec` or a
:class:`~common.errors.ConfigError` naming the field, before any model is loaded.
"""
from __future__ import annotations

from typing import Sequence

import pandas as pd

from clinical.questions import BENCHMARKS
from common.errors import ConfigError
from sag.group.config import PRESETS, ROLES, GroupConfig, preset
from common.work import WorkSummary
from sag.runs.run import SagRunSpec

__all__ = ["MAX_LAUNCH_ITEMS", "launch_spec", "progress_update", "launch_message", "with_adapter", "LORA_INFIX",
           "time_estimate"]

LORA_INFIX = "+lora:file:"
"""How a model key names a base model with a trained adapter (see docs/adapters.md)."""


def with_adapter(cfg: GroupConfig, base_model: str, adapter_file: str, roles: tuple[str, ...]) -> GroupConfig:
    """``cfg`` whose agents in ``roles`` (role names, e.g. "reasoning") run ``base_model`` with
    the trained adapter; a role on another base model is refused (an adapter fits one base)."""
    names = [r.value for r in ROLES]
    unknown = [r for r in roles if r not in names]
    if unknown or not roles:
        raise ConfigError("adapter_roles", f"choose roles among {', '.join(names)}, got {', '.join(roles) or 'none'}")
    backbones = list(cfg.backbones)
    for role in roles:
        i = names.index(role)
        if backbones[i] != base_model:
            raise ConfigError("adapter_roles", f"the {role} agents run {backbones[i]}, but the adapter was trained on "
                                               f"{base_model}")
        backbones[i] = f"{base_model}{LORA_INFIX}{adapter_file}"
    return cfg.with_changes(backbones=tuple(backbones))

MAX_LAUNCH_ITEMS = 50


def launch_spec(benchmark: str, group: str, n_items: int, seed: int, t_max: int,
                adapter: tuple[str, str, tuple[str, ...]] | Sequence[tuple[str, str, tuple[str, ...]]] | None = None,
                ) -> SagRunSpec:
    """The checked settings of a small run launched from the page (ConfigError names the field).

    ``adapter`` = (base model, adapter file, role names), or several of them (a trained
    group: one adapter per role): those roles' agents use the trained adapter
    (:func:`with_adapter`)."""
    if benchmark not in BENCHMARKS:
        raise ConfigError("benchmark", f"unknown benchmark {benchmark!r}; choose one of {', '.join(BENCHMARKS)}")
    if group not in PRESETS:
        raise ConfigError("group", f"unknown group {group!r}; choose one of {', '.join(PRESETS)}")
    if isinstance(n_items, bool) or not isinstance(n_items, int) or not 1 <= n_items <= MAX_LAUNCH_ITEMS:
        raise ConfigError("items", f"must be a whole number in [1, {MAX_LAUNCH_ITEMS}] here, got {n_items!r}; "
                                   "run bigger experiments with python -m sag run")
    cfg = preset(group).with_changes(t_max=t_max)
    if adapter is not None:
        for one in ([adapter] if isinstance(adapter[0], str) else adapter):  # type: ignore[list-item]
            cfg = with_adapter(cfg, *one)  # type: ignore[misc]
    return SagRunSpec(benchmark, cfg, n_items=n_items, seed=seed)


def progress_update(done: int, total: int, label: str) -> tuple[float, str]:
    """The progress bar's fraction and text for a run's progress callback."""
    fraction = min(max(done / total, 0.0), 1.0) if total else 1.0
    if label == "calibration":
        return fraction, f"calibration: {done} of {total} items"
    return fraction, f"{done} of {total} items answered ({label})"


def launch_message(summary: WorkSummary) -> str:
    """What the page says once a launched run returns."""
    done = "resumed; " if summary.resumed else ""
    text = (f"Run {summary.run_id}: {done}{summary.computed} item(s) answered now of {summary.total}, "
            f"{summary.model_calls} model call(s), {summary.cached_calls} answered from the call log, "
            f"{summary.seconds:.1f} s.")
    if summary.failed:
        text += (f" {len(summary.failed)} item(s) got no answer because a model call failed (first: "
                 f"{summary.failed[0].reason}); they are not counted as answers, the run is not finished, "
                 "and running it again retries them.")
        if summary.stopped:
            text += f" The run {summary.stopped}."
    return text


def time_estimate(outcomes: pd.DataFrame, group: str, items: int) -> str:
    """How long ``items`` items of ``group`` take, from the measured seconds of the items of
    that group stored here (``outcomes``: :meth:`SagStore.outcomes`, all runs)."""
    seconds = outcomes.loc[outcomes["group_name"] == group, "seconds"].astype(float) if not outcomes.empty else None
    if seconds is None or seconds.empty:
        return (f"No {group} item has been answered in this store yet, so there is no measured time: on two CPU "
                "cores one item of a six-agent group can take from under a minute to several minutes, and longer "
                "while other jobs share the machine.")
    median = float(seconds.median())
    total = median * items
    shown = f"{total:.0f} s" if total < 120 else f"{total / 60:.0f} min"
    return (f"Measured here: one {group} item took a median of {median:.0f} s over {len(seconds)} stored items "
            f"(from {float(seconds.min()):.0f} to {float(seconds.max()):.0f} s), so {items} item(s) take about "
            f"{shown}, plus loading the models; longer while other jobs share the machine.")
