"""Named what-if presets: a mediator configuration and optionally a loss matrix.

A name may be saved many times; every save is a new row (the history is kept) and
reading a name returns its latest save.  Writes use their own cursor and transaction
(:mod:`dcem.store.transactions`), so dashboard sessions can save concurrently.
"""
from __future__ import annotations

import datetime as _dt
import json
import uuid
from typing import Sequence

import duckdb
import numpy as np
import pandas as pd

from common.transactions import cursor, run_in_transaction
from dcem.core.config import MediatorConfig
from dcem.core.panel import validate_loss
from common.errors import InputError
from common.fields import Instance, Seq, Text, check
from dcem.store.database import Store

__all__ = ["MAX_NAME", "MAX_NOTE", "save_preset", "list_presets", "load_preset", "preset_history"]

MAX_NAME = 200
MAX_NOTE = 5000
_LIST_COLUMNS = ["name", "preset_id", "created_at", "note", "config_json", "has_loss", "labels", "versions"]


def _check_name(name: object) -> str:
    name = check("name", name, Text(msg="give the preset a name"), error=InputError).strip()
    if len(name) > MAX_NAME:
        raise InputError("name", f"is {len(name)} characters long; at most {MAX_NAME} are allowed")
    return name


def _check_labels(labels: Sequence[str] | None) -> list[str] | None:
    if labels is None:
        return None
    if isinstance(labels, str):
        raise InputError("labels", "give a list of labels, not one string")
    out = check("labels", list(labels), Seq(Text(nonempty=False, min_len=1), min_len=2),
                msg="need at least two non-empty label names", error=InputError)
    if len(set(out)) != len(out):
        raise InputError("labels", "labels must be unique")
    return out


def _check_loss(loss: object, labels: list[str] | None) -> list[list[float]] | None:
    if loss is None:
        return None
    try:
        arr = np.asarray(loss, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InputError("loss", f"must be numeric ({exc})") from None
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1] or arr.shape[0] < 2:
        raise InputError("loss", f"must be a square K x K matrix with K >= 2, got shape {arr.shape}")
    if labels is not None and arr.shape[0] != len(labels):
        raise InputError("loss", f"is {arr.shape[0]} x {arr.shape[0]} but {len(labels)} labels were given")
    return validate_loss(arr, arr.shape[0]).tolist()


def save_preset(store: Store, name: str, config: MediatorConfig, loss: object | None = None,
                labels: Sequence[str] | None = None, note: str = "") -> str:
    """Save a new version of preset ``name``; returns its preset_id (uuid4 hex).

    loss : optional K x K matrix (finite, >= 0); labels : optional K label names it refers
    to; note : free text (at most :data:`MAX_NOTE` characters).
    """
    name = _check_name(name)
    check("config", config, Instance(MediatorConfig, msg="expected a MediatorConfig, got {type}"), error=InputError)
    label_list = _check_labels(labels)
    loss_rows = _check_loss(loss, label_list)
    note = "" if note is None else note
    check("note", note, Instance(str, msg="must be text"), error=InputError)
    if len(note) > MAX_NOTE:
        raise InputError("note", f"is {len(note):,} characters long; at most {MAX_NOTE:,} are allowed")
    preset_id = uuid.uuid4().hex
    config_json = json.dumps(config.to_dict(), sort_keys=True)

    def write(cur: duckdb.DuckDBPyConnection) -> None:
        row = cur.execute("SELECT max(created_at) FROM presets WHERE name = ?", [name]).fetchone()
        latest = row[0] if row else None
        now = _dt.datetime.now()
        if latest is not None and now <= latest:  # keep "latest save wins" strictly ordered
            now = latest + _dt.timedelta(microseconds=1)
        cur.execute("INSERT INTO presets (preset_id, name, config_json, loss, labels, note, created_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [preset_id, name, config_json, loss_rows, label_list, note, now])

    run_in_transaction(store, write)
    return preset_id


def preset_history(store: Store, name: str) -> pd.DataFrame:
    """Every save of preset ``name``, oldest first (empty when there is none)."""
    name = _check_name(name)
    with cursor(store) as cur:
        return cur.execute(
            "SELECT preset_id, name, config_json, loss, labels, note, created_at FROM presets "
            "WHERE name = ? ORDER BY created_at, preset_id", [name]).df()


def list_presets(store: Store) -> pd.DataFrame:
    """The latest save of every preset name, by name, with the number of saves."""
    with cursor(store) as cur:
        frame = cur.execute(
            "SELECT name, preset_id, created_at, note, config_json, loss IS NOT NULL AS has_loss, labels, "
            "count(*) OVER (PARTITION BY name) AS versions FROM presets "
            "QUALIFY row_number() OVER (PARTITION BY name ORDER BY created_at DESC, preset_id DESC) = 1 "
            "ORDER BY name").df()
    return frame[_LIST_COLUMNS]


def load_preset(store: Store, name: str) -> tuple[MediatorConfig, np.ndarray | None]:
    """The configuration and loss (None if the preset has none) of the latest save of
    ``name``; :class:`InputError` for an unknown name."""
    name = _check_name(name)
    with cursor(store) as cur:
        row = cur.execute(
            "SELECT config_json, loss FROM presets WHERE name = ? "
            "ORDER BY created_at DESC, preset_id DESC LIMIT 1", [name]).fetchone()
    if row is None:
        raise InputError("name", f"no preset named {name!r}")
    config = MediatorConfig.from_mapping(json.loads(row[0]))
    loss = None if row[1] is None else np.array(row[1], dtype=float)
    return config, loss
