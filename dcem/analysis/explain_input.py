"""Validation of an ``explain`` document (see :mod:`dcem.analysis.explain`).

Every number must be a real JSON number: strings such as ``"0.9"``, booleans, NaN,
infinities and integers beyond a float are refused with an :class:`InputError` naming
the field.  An episode has at most the caps of a calibration set
(:mod:`dcem.calibration.csv_limits`): 200 labels, 1,000 agents and 4,000,000 entries of
agents x labels², checked before any array is built.  Arrays must be rectangular; the
walk is iterative, so arbitrarily nested input cannot exhaust the stack.
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from dcem.calibration.csv_limits import MAX_AGENTS, MAX_LABELS, MAX_TABLE_CELLS
from dcem.core.config import MAX_ROUNDS, MediatorConfig
from dcem.core.panel import Panel
from common.errors import InputError
from common.fields import Field, Instance, Number, OneOf, Seq, ToFloat, check, fixed

__all__ = ["parse_episode", "number_array", "MAX_ROUNDS"]

_KEYS = ("labels", "confusion", "prior", "loss", "reports", "params")


_NUMBER = Field((Number(numpy=True, msg="must contain numbers only, got {short}"),
                 ToFloat(msg="contains a number too large for a float"),
                 Number(finite=True, msg="contains a non-finite number ({value})")))
_LABELS = Seq(Instance(str), types=(list,), msg="must be an array of strings")
_OBJECT = Instance(Mapping, msg="must be a JSON object")


def _number(x: Any, field: str) -> float:
    return _NUMBER.check(field, x, error=InputError)


def number_array(value: Any, field: str, ndim: int, shape_hint: str) -> np.ndarray:
    """A float array of ``ndim`` dimensions from nested lists of real numbers.

    ``shape_hint`` describes the expected shape for the error message (for example
    ``"a list of 3x3 matrices, one per agent"``).
    """
    level, shape = [value], []
    for _ in range(ndim):
        check(field, level, Seq(Instance(list)), msg=fixed(f"must be {shape_hint}"), error=InputError)
        lengths = {len(x) for x in level}
        if len(lengths) != 1 or 0 in lengths:
            raise InputError(field, f"must be {shape_hint} (a rectangular, non-empty array)")
        shape.append(lengths.pop())
        level = [x for row in level for x in row]
    flat = [_number(x, field) if not isinstance(x, list) else None for x in level]
    if any(x is None for x in flat):
        raise InputError(field, f"must be {shape_hint}")
    return np.array(flat, dtype=float).reshape(shape)


def _labels(doc: Mapping[str, Any]) -> list[str]:
    labels = check("labels", doc["labels"], _LABELS, error=InputError)
    if len(labels) < 2:
        raise InputError("labels", "at least two labels are required")
    return labels


def _prior(doc: Mapping[str, Any], k: int) -> np.ndarray:
    prior_doc = doc.get("prior", "uniform")
    if isinstance(prior_doc, str):  # a name: only "uniform" is known
        check("prior", prior_doc, OneOf(("uniform",), msg=f'must be "uniform" or an array of {k} numbers, got {{short}}'),
              error=InputError)
        return np.full(k, 1.0 / k)
    return number_array(prior_doc, "prior", 1, f'"uniform" or an array of {k} numbers')


def _config(doc: Mapping[str, Any]) -> MediatorConfig:
    params = check("params", doc.get("params", {}), _OBJECT, error=InputError)
    if "prior" in params:
        raise InputError("params.prior", "give the prior at the top level")
    return MediatorConfig.from_mapping(params)


def _reports(doc: Mapping[str, Any], panel: Panel) -> np.ndarray:
    rounds = check("reports", doc["reports"], Seq(min_len=1, types=(list,), msg="must be a non-empty array of rounds"),
                   error=InputError)
    if len(rounds) > MAX_ROUNDS:
        raise InputError("reports", f"has {len(rounds)} rounds; at most {MAX_ROUNDS} are supported")
    index = {label: i for i, label in enumerate(panel.labels)}
    out = np.empty((len(rounds), panel.n_agents), dtype=np.int64)
    row_rule = Seq(min_len=panel.n_agents, max_len=panel.n_agents, types=(list,))
    label_rule = Field((OneOf(frozenset(index), msg="unknown label {short}"),))
    for t, row in enumerate(rounds):
        check("reports", row, row_rule, error=InputError,
              msg=fixed(f"round {t + 1} must list one label for each of the {panel.n_agents} agents"))
        for a, label in enumerate(row):
            label_rule.check("reports", label, error=lambda f, m: InputError(f, f"round {t + 1} agent {a}: {m}"))
            out[t, a] = index[label]
    return out


def _check_size(confusion: Any, k: int) -> None:
    """The calibration set's caps on labels, agents and agents x labels², checked before
    any array is built (the mediator's work per round grows with agents x agents)."""
    if k > MAX_LABELS:
        raise InputError("labels", f"{k:,} labels; an episode may have at most {MAX_LABELS:,} labels")
    n_agents = len(confusion) if isinstance(confusion, list) else 0
    if n_agents > MAX_AGENTS:
        raise InputError("confusion", f"{n_agents:,} agents (one matrix each); an episode may have at most "
                         f"{MAX_AGENTS:,} agents, as a calibration set")
    if n_agents * k * k > MAX_TABLE_CELLS:
        raise InputError("confusion", f"{n_agents:,} agents and {k:,} labels need {n_agents * k * k:,} "
                         f"confusion-matrix entries (agents x labels²); the limit is {MAX_TABLE_CELLS:,}")


def parse_episode(doc: Any) -> tuple[Panel, MediatorConfig, np.ndarray]:
    """Validate an explain document; return the panel, the config and reports (T, A)."""
    check("input", doc, _OBJECT, error=InputError)
    unknown = sorted(str(key) for key in doc if key not in _KEYS)
    if unknown:
        raise InputError(unknown[0], f"unknown key (expected {', '.join(_KEYS)})")
    for key in ("labels", "confusion", "loss", "reports"):
        if key not in doc:
            raise InputError(key, "is required")
    labels = _labels(doc)
    k = len(labels)
    _check_size(doc["confusion"], k)
    confusion = number_array(doc["confusion"], "confusion", 3, f"a list of {k}x{k} matrices, one per agent")
    loss = number_array(doc["loss"], "loss", 2, f"a {k}x{k} matrix")
    panel = Panel(tuple(labels), confusion, _prior(doc, k), loss)
    cfg = _config(doc)
    return panel, cfg, _reports(doc, panel)
