"""A finished training run as a compact export: its adapter and its record, never a store
or a checkpoint.

``write_training_export`` writes, for the run ``run_id`` of a store:

- ``<adapters>/<name>.gguf``: the adapter (a copy of the run's GGUF LoRA file), which the
  runtime loads as ``<base>+lora:<name>``;
- ``<out>/manifest.json``: format, date, the commands that made it, the run's row
  (settings, data name and hash, base model, dates), the adapter's name, size and sha256,
  and one entry per table file (rows, size, sha256);
- ``<out>/steps.parquet``, ``evals.parquet``, ``answers.parquet``: the per-step curve, the
  held-out measurements and the per-item held-out answers.

A trained group (a run whose result is a group file) exports its adapters as
``<adapters>/<name>-<adapter>.gguf`` and ``<out>/group.json``, the group file with each
agent's adapter named by registry key (:mod:`training.export_group`); the manifest then
lists ``adapters`` and the ``group`` file instead of one ``adapter``.

Each table is written in the schema declared here once (:data:`SCHEMAS`);
``read_training_export`` checks every file against the manifest and that schema
(:mod:`common.export_schema`: a missing, unknown or retyped column, an empty value) and
the adapter against its sha256, and refuses, with one line naming the file, anything
missing, changed or malformed.  An export's name (:func:`check_name`) is a plain file
name, the same for the export command and ``python -m training report --name``.
"""
from __future__ import annotations

import datetime as _dt
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from common.errors import InputError
from common.fields import Instance, Satisfies, Seq, Text, check, fixed
from common.export_schema import Schema, check_file
from common.table_export import (MANIFEST, file_sha256, make_out_folder, read_manifest, read_tables, writable_folder,
                                  write_manifest, write_table)
from training.export_group import GROUP_FILE, copy_atomically, file_entry, portable_group
from training.store import TrainingStore

__all__ = ["FORMAT", "MANIFEST", "TABLES", "SCHEMAS", "TrainingExport", "check_name", "run_entry",
           "write_training_export", "read_training_export"]

FORMAT = "training-run-export/1"
_S, _I, _D = "VARCHAR", "INTEGER", "DOUBLE"
# table -> (column, DuckDB type), as written and as read; every value is required
SCHEMAS: dict[str, Schema] = {
    "steps": (("step", _I), ("loss", _D), ("reward", _D), ("accuracy", _D), ("kl", _D), ("clipped_share", _D),
              ("items", _I), ("tokens", _I), ("seconds", _D)),
    "evals": (("step", _I), ("split", _S), ("n_items", _I), ("n_correct", _I), ("n_options", _I),
              ("top_letter", _S), ("top_letter_share", _D)),
    "answers": (("step", _I), ("split", _S), ("item_id", _S), ("answer", _S), ("truth", _S)),
}
TABLES = tuple(SCHEMAS)
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_RUN_FIELDS = ("run_id", "kind", "method", "base_model", "settings", "data_name", "data_hash", "n_train",
               "status", "created_at", "finished_at")


@dataclass(frozen=True)
class TrainingExport:
    """A read and checked export: the manifest, the run, its tables, its adapter files (one,
    or one per adapter of a trained group) and a group's group file."""

    folder: Path
    manifest: dict[str, Any]
    steps: pd.DataFrame
    evals: pd.DataFrame
    answers: pd.DataFrame
    adapters: tuple[Path, ...]
    group_file: Path | None = None

    @property
    def run(self) -> dict[str, Any]:
        return dict(self.manifest["run"])

    @property
    def adapter(self) -> Path:
        """The adapter file (the first of a group's)."""
        return self.adapters[0]

    @property
    def adapter_keys(self) -> tuple[str, ...]:
        entries = self.manifest["adapters"] if self.group_file is not None else [self.manifest["adapter"]]
        return tuple(f"{self.manifest['run']['base_model']}+lora:{e['name']}" for e in entries)

    @property
    def adapter_key(self) -> str:
        """The model key of a single adapter; a group's adapters are in :attr:`adapter_keys`."""
        if self.group_file is not None:
            raise ValueError("a trained group has one adapter per role: see adapter_keys and group_file")
        return self.adapter_keys[0]


def check_name(name: str) -> str:
    """``name`` if it can name an export and its adapter: letters, digits, '.', '_' or '-',
    starting with a letter or digit (no path, no ``..``); InputError otherwise."""
    return check("name", name, Text(nonempty=False, pattern=_NAME, msg="must be letters, digits, '.', '_' or '-' "
                                    "(up to 128, starting with a letter or digit; no folder), got {value!r}"),
                 error=InputError)


def _iso(value: Any) -> str | None:
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return None
    return pd.Timestamp(value).isoformat()


def run_entry(row: pd.Series, last_step: int) -> dict[str, Any]:
    """The manifest's ``run`` of a ``train_runs`` row, its settings' ``steps`` the last step
    recorded (the store keeps no step budget: it may change on a resume)."""
    return {"run_id": str(row["run_id"]), "kind": str(row["kind"]), "method": str(row["method"]),
            "base_model": str(row["base_model"]), "settings": {**json.loads(row["settings_json"]), "steps": last_step},
            "data_name": str(row["data_name"]), "data_hash": str(row["data_hash"]), "n_train": int(row["n_train"]),
            "status": str(row["status"]), "created_at": _iso(row["created_at"]),
            "finished_at": _iso(row["finished_at"])}


def write_training_export(store: TrainingStore, run_id: str, out: Path, adapters: Path, name: str, *,
                          command: str) -> Path:
    """Write the export of the finished run ``run_id`` (see the module docstring); returns
    the manifest's path.  Refuses an unknown or unfinished run, a run without an adapter
    file, a bad adapter name and an ``out`` folder that holds other files."""
    check_name(name)
    runs = store.runs()
    found = runs[runs["run_id"] == run_id] if not runs.empty else runs
    if found.empty:
        raise InputError("run", f"no training run {run_id!r} in {store.path}")
    row = found.iloc[0]
    if row["status"] != "finished" or not row["adapter_file"]:
        raise InputError("run", f"training run {run_id} is {row['status']}, without an adapter; only a finished "
                                "run is exported")
    source = Path(str(row["adapter_file"]))
    if not source.is_file() or file_sha256(source) != row["adapter_sha256"]:
        raise InputError("run", f"the adapter file of run {run_id} ({source}) is missing or changed since training")
    out = make_out_folder(Path(out), (GROUP_FILE, *(f"{t}.parquet" for t in TABLES)))
    adapters = writable_folder(Path(adapters), "adapters")
    made = _group_files(source, name, out, adapters) if source.suffix == ".json" else \
        {"adapter": _single_file(source, adapters / f"{name}.gguf", name)}
    tables = {"steps": store.steps(run_id).drop(columns=["run_id"]),
              "evals": store.evals(run_id).drop(columns=["run_id"]),
              "answers": store.answers(run_id).drop(columns=["run_id"])}
    files = [write_table(out, table, frame[[c for c, _ in SCHEMAS[table]]], SCHEMAS[table])
             for table, frame in tables.items()]
    run = run_entry(row, int(tables["steps"]["step"].max()))
    manifest = {"format": FORMAT, "created_at": _dt.datetime.now().replace(microsecond=0).isoformat(),
                "command": command, "run": run, **made, "files": files}
    return write_manifest(out, manifest)


def _single_file(source: Path, target: Path, name: str) -> dict[str, Any]:
    copy_atomically(source, target)
    return file_entry(name, target)


def _group_files(source: Path, name: str, out: Path, adapters: Path) -> dict[str, Any]:
    group, entries = portable_group(source, name, adapters)
    path = out / GROUP_FILE
    path.write_text(json.dumps(group, indent=2) + "\n", encoding="utf-8")
    return {"adapters": entries, "group": {"file": GROUP_FILE, "sha256": file_sha256(path)}}


def read_training_export(folder: Path, adapters: Path) -> TrainingExport:
    """The export in ``folder`` with its adapter in ``adapters``, every file checked."""
    folder = Path(folder)
    where = folder / MANIFEST
    manifest = read_manifest(folder, FORMAT)
    check("export", manifest.get("run"), Instance(dict), Satisfies(lambda run: all(k in run for k in _RUN_FIELDS)),
          msg=fixed(f"{where}: run must hold {', '.join(_RUN_FIELDS)}"), error=InputError)
    entries = _adapter_entries(manifest, where)
    frames = read_tables(folder, manifest, SCHEMAS, required={t: [c for c, _ in s] for t, s in SCHEMAS.items()})
    files_of = tuple(_checked(Path(adapters) / e["file"], e.get("sha256"), "the adapter ") for e in entries)
    group = manifest.get("group")
    group_file = _checked(folder / GROUP_FILE, group.get("sha256"), "the group file ") if group else None
    return TrainingExport(folder, manifest, frames["steps"], frames["evals"], frames["answers"], files_of, group_file)


def _names_its_file(entry: dict[str, Any]) -> bool:
    """Whether an adapter entry's ``file`` is ``<name>.gguf`` for a plain ``name``."""
    return _NAME.fullmatch(str(entry.get("name", ""))) is not None and entry.get("file") == f"{entry.get('name')}.gguf"


def _adapter_entries(manifest: dict[str, Any], where: Path) -> list[dict[str, Any]]:
    """The adapter entries of a manifest: its ``adapter``, or a group's ``adapters`` (with
    its ``group`` file), each naming a file ``<name>.gguf``."""
    if "group" in manifest:
        group, entries = manifest.get("group"), manifest.get("adapters")
        check("export", group, Instance(dict), Satisfies(lambda g: g.get("file") == GROUP_FILE),
              msg=fixed(f"{where}: group must name the file {GROUP_FILE}"), error=InputError)
        check("export", entries, Seq(min_len=1, types=(list,)), error=InputError,
              msg=fixed(f"{where}: a group's export must list its adapters"))
    else:
        entries = [manifest.get("adapter")]
    for entry in entries:
        check("export", entry, Instance(dict), Satisfies(_names_its_file), error=InputError,
              msg=fixed(f"{where}: adapter must name a file <name>.gguf"))
    return entries


def _checked(path: Path, sha256: object, what: str) -> Path:
    """The adapter or group file ``path``, checked as every export file is (not a link,
    present, the manifest's sha256)."""
    check("export", sha256, Instance(str), msg=fixed(f"{what}{path}: the manifest gives no sha256 for it"),
          error=InputError)
    return check_file(path.parent, {"name": path.name, "sha256": sha256, "size_bytes": None}, f"{what}{path}")
