"""The manifest of a run export (:mod:`dcem.store.run_export`), checked field by field.

:func:`check_manifest` refuses, with an :class:`~common.errors.InputError` that names the
field, any manifest that :func:`~dcem.store.run_export.write_run_export` would not have
written: an unknown or missing field, a value of the wrong type, a file name that is not
the plain ``<table>.parquet`` inside the export folder (no path, no ``..``), a table listed
twice or not at all, a sha256 that is not 64 lowercase hex digits, a row count or size
that is not a whole number, a run listed twice, a run spec or mediator config that does
not hold, a date that is not a date.  No file is read here; the files are checked
against the manifest by :mod:`dcem.store.export_tables`.
"""
from __future__ import annotations

import datetime as _dt
import math
import re
from typing import Any, Callable, Mapping

from dcem.calibration.risk_control import MAX_LAMBDAS, RiskTarget
from dcem.core.config import MediatorConfig
from dcem.core.vocabulary import SCENARIOS
from common.errors import InputError, ProjectError
from common.fields import Flag, Instance, Number, OneOf, Rule, Satisfies, Seq, Text, Whole, check
from common.export_schema import check_entries

__all__ = ["FORMAT", "MANIFEST", "TABLES", "KINDS", "STATUSES", "check_manifest", "check_models", "check_runs",
           "run_cells"]

FORMAT = "dcem-run-export/1"
MANIFEST = "manifest.json"
TABLES: tuple[str, ...] = ("cells", "cases", "traces", "outcomes", "metrics", "turns", "ablation")
KINDS: tuple[str, ...] = ("synthetic", "clinical")
STATUSES: tuple[str, ...] = ("running", "finished")
MAX_SEED = 2**31 - 1  # the store keeps seeds as INTEGER

_TOP = ("format", "created_at", "command", "runs", "models", "files")
_RUN = ("run_id", "kind", "status", "spec", "config", "seeds", "git_revision", "created_at", "finished_at")
_MODEL = ("key", "file", "size_bytes", "sha256", "run_sha256", "note")
_SHA256 = re.compile(r"[0-9a-f]{64}")


_OBJECT = Instance(dict, msg="must be an object, got {got}")
_TEXT, _ANY_TEXT = Text(msg="must be non-empty text, got {got}"), Text(nonempty=False, msg="must be text, got {got}")
_NON_EMPTY_LIST = Seq(min_len=1, types=(list,))
_PLAIN = Instance((str, int, float, bool, type(None)), msg="must be a plain value, got {got}")


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class _Fields:
    """Raises InputError("export", "<manifest>: <field> <problem>"), or without a source
    (the arguments of a writer) InputError("<field>", "<problem>")."""

    def __init__(self, source: str | None) -> None:
        self.source = source

    def fail(self, field: str, problem: str) -> InputError:
        if self.source is None:
            return InputError(field, problem)
        return InputError("export", f"{self.source}: {field} {problem}")

    def check(self, field: str, value: Any, *rules: Rule, optional: bool = False, msg: str | None = None) -> Any:
        """``value`` checked against ``rules`` (:func:`common.fields.check`), refused as :meth:`fail` says."""
        return check(field, value, *rules, optional=optional, msg=msg, error=self.fail, show=_show)

    def keys(self, value: Any, field: str, allowed: tuple[str, ...], required: tuple[str, ...]) -> dict[str, Any]:
        self.check(field, value, _OBJECT)
        unknown = [k for k in value if k not in allowed]
        if unknown:
            raise self.fail(field, f"has an unknown field {_show(unknown[0])}")
        missing = [k for k in required if k not in value]
        if missing:
            raise self.fail(field, f"lacks the field {missing[0]!r}")
        return value

    def text(self, value: Any, field: str, *, optional: bool = False, empty: bool = False) -> str | None:
        if self.check(field, value, _ANY_TEXT if empty else _TEXT, optional=optional) is None:
            return None
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise self.fail(field, f"is not UTF-8 text: {_show(value)}") from None
        return value

    def whole(self, value: Any, field: str, *, low: int = 0, high: int | None = None,
              optional: bool = False) -> int | None:
        return self.check(field, value, Whole(low, high), optional=optional)

    def number(self, value: Any, field: str, low: float, high: float = math.inf) -> float:
        return float(self.check(field, value, Number(low, high, finite=True)))

    def flag(self, value: Any, field: str) -> bool:
        return self.check(field, value, Flag())

    def choice(self, value: Any, field: str, options: tuple[str, ...]) -> str:
        return self.check(field, value, OneOf(options))

    def sha(self, value: Any, field: str, *, optional: bool = False) -> str | None:
        return self.check(field, value, Text(nonempty=False, pattern=_SHA256, msg="must be 64 lowercase hex digits"
                                             + (" or null" if optional else "") + ", got {got}"), optional=optional)

    def when(self, value: Any, field: str, *, optional: bool = False) -> None:
        if value is None and optional:
            return
        try:
            _dt.datetime.fromisoformat(value if isinstance(value, str) else "")
        except ValueError:
            raise self.fail(field, f"must be a date and time, got {_show(value)}") from None

    def strings(self, value: Any, field: str, options: tuple[str, ...] | None = None, *,
                unique: bool = True) -> list[str]:
        self.check(field, value, _NON_EMPTY_LIST)
        for i, item in enumerate(value):
            if options is None:
                self.text(item, f"{field}[{i}]")
            else:
                self.choice(item, f"{field}[{i}]", options)
        if unique and len(set(value)) != len(value):
            raise self.fail(field, "lists a value twice")
        return value

    def config(self, value: Any, field: str) -> None:
        self.check(field, value, _OBJECT)
        try:
            MediatorConfig.from_mapping(value)
        except ProjectError as exc:
            raise self.fail(field, f"is not a valid mediator config: {exc}") from None
        except (TypeError, ValueError, OverflowError) as exc:  # a value the config's checks do not expect
            raise self.fail(field, f"is not a valid mediator config: {exc}") from None


def check_models(models: Any, source: str | None = None) -> list[dict[str, Any]]:
    """The model entries (``key`` required; ``file``, ``size_bytes``, ``sha256``,
    ``run_sha256``, ``note`` optional), each checked; InputError naming the entry
    (``source``: the manifest they were read from, None for a writer's argument)."""
    f = _Fields(source)
    f.check("models", models, Instance(list))
    out = []
    for i, entry in enumerate(models):
        name = f"models[{i}]"
        f.keys(entry, name, _MODEL, ("key",))
        f.text(entry["key"], f"{name}.key")
        f.text(entry.get("file"), f"{name}.file", optional=True)
        f.whole(entry.get("size_bytes"), f"{name}.size_bytes", optional=True)
        f.sha(entry.get("sha256"), f"{name}.sha256", optional=True)
        f.sha(entry.get("run_sha256"), f"{name}.run_sha256", optional=True)
        f.text(entry.get("note"), f"{name}.note", optional=True, empty=True)
        out.append(dict(entry))
    return out


_Check = Callable[[_Fields, Any, str], object]
# spec fields: checked whenever present (a spec written by another version may lack some)
_SPEC_FIELDS: dict[str, _Check] = {
    "scenarios": lambda f, v, n: f.strings(v, n, SCENARIOS),
    "base_config": lambda f, v, n: f.config(v, n),
    "dataset": lambda f, v, n: f.text(v, n),
    "agents": lambda f, v, n: f.strings(v, n, unique=False),  # a panel may hold one model twice
    "mode": lambda f, v, n: f.text(v, n),
    "layout": lambda f, v, n: f.text(v, n),
    "compliance": lambda f, v, n: f.choice(v, n, ("adopt", "blend")),
    "n_cal": lambda f, v, n: f.whole(v, n, low=1, optional=True),
    "n_test": lambda f, v, n: f.whole(v, n, low=1, optional=True),
    "n_ctx": lambda f, v, n: f.whole(v, n, low=1),
    "n_train": lambda f, v, n: f.whole(v, n, low=1),
    "n_eval": lambda f, v, n: f.whole(v, n, low=1),
    "t_max": lambda f, v, n: f.whole(v, n, low=1),
    "free_rounds": lambda f, v, n: f.whole(v, n, low=0),
    "few_shot_k": lambda f, v, n: f.whole(v, n, low=0),
    "temperature": lambda f, v, n: f.number(v, n, 0.0),
    "xi": lambda f, v, n: f.number(v, n, 0.0, 1.0),
    "sharpness": lambda f, v, n: f.number(v, n, 1e-300),
    "kappa": lambda f, v, n: f.number(v, n, 0.0),
    "stop_when_decided": lambda f, v, n: f.flag(v, n),
    "ablation": lambda f, v, n: f.flag(v, n),
    "stat_dialogue": lambda f, v, n: _plain_settings(f, v, n, _STAT_DIALOGUE_KEYS),
    "risk_target": lambda f, v, n: _risk_target(f, v, n),
    "case_file": lambda f, v, n: _case_file(f, v, n),
}
_CASE_FILE_KEYS = ("file", "sha256", "labels", "high_risk", "loss", "views")


def _case_file(f: Any, value: Any, name: str) -> None:
    """A run on a researcher's case file: its name and sha256, labels, high-risk classes
    (label indices), K x K loss of finite numbers >= 0, and views."""
    f.keys(value, name, _CASE_FILE_KEYS, _CASE_FILE_KEYS)
    f.text(value["file"], f"{name}.file")
    f.sha(value["sha256"], f"{name}.sha256")
    labels = f.strings(value["labels"], f"{name}.labels")
    k = len(labels)
    f.check(f"{name}.high_risk", value["high_risk"], Seq(Whole(0, k - 1), types=(list,), msg=(
        f"must be a list of label indices 0..{k - 1}, got {{got}}")))
    f.check(f"{name}.loss", value["loss"], Seq(Seq(Number(0.0, finite=True), min_len=k, max_len=k, types=(list,)),
                                               min_len=k, max_len=k, types=(list,)),
            msg=f"must be a {k} x {k} list of numbers >= 0, got {{got}}")
    f.check(f"{name}.views", value["views"], Seq(Text(), types=(list,), msg="must be a list of view names, got {got}"))
_STAT_DIALOGUE_KEYS = ("anchor", "kappa", "compliance", "residual", "cues", "calibrate")
_RISK_TARGET_KEYS = ("risk", "alpha", "delta", "fwer", "lambdas")


def _risk_target(f: Any, value: Any, name: str) -> None:
    """A Learn-then-Test run's target (:meth:`RiskTarget.to_dict`): exactly its keys, a
    target :class:`RiskTarget` accepts, written back as it was read."""
    f.keys(value, name, _RISK_TARGET_KEYS, _RISK_TARGET_KEYS)
    lambdas = f.check(f"{name}.lambdas", value["lambdas"], Seq(Number(), max_len=MAX_LAMBDAS, types=(list,), msg=(
        f"must be a list of at most {MAX_LAMBDAS} numbers, got {{got}}")))
    try:
        target = RiskTarget(**{**value, "lambdas": tuple(lambdas)})
    except ProjectError as exc:
        raise f.fail(name, f"is not a valid Learn-then-Test target: {exc}") from None
    if target.to_dict() != value:
        raise f.fail(name, f"is not a Learn-then-Test target as a run writes it, got {_show(value)}")


def _plain_settings(f: Any, value: Any, name: str, keys: tuple[str, ...]) -> None:
    """A small settings object: known keys, each a number or a flag."""
    f.check(name, value, Instance(dict), Satisfies(lambda v: not set(v) - set(keys)),
            msg=f"must be an object with keys among {', '.join(keys)}, got {{got}}")
    for key, item in value.items():
        if isinstance(item, bool):
            continue
        f.number(item, f"{name}.{key}", 0.0)
# what every writer of the format wrote and the reports print
_SPEC_REQUIRED = {"synthetic": ("scenarios", "seeds", "base_config", "xi", "n_train", "n_eval"),
                  "clinical": ("scenarios", "seeds", "base_config", "dataset", "agents", "n_cal", "n_test")}


def _check_spec(f: _Fields, spec: Any, name: str, kind: str, seeds: list[int]) -> None:
    f.keys(spec, name, tuple(spec) if isinstance(spec, dict) else (), _SPEC_REQUIRED[kind])
    for key, value in spec.items():
        check = _SPEC_FIELDS.get(key)
        if key == "seeds":
            continue
        if check is not None:
            check(f, value, f"{name}.{key}")
        else:
            f.check(f"{name}.{key}", value, _PLAIN)
    same = isinstance(spec["seeds"], list) and len(spec["seeds"]) == len(seeds) and all(
        type(a) is int and a == b for a, b in zip(spec["seeds"], seeds))  # noqa: E721 (no bool, no float)
    if not same:
        raise f.fail(f"{name}.seeds", f"must equal the run's seeds {_show(seeds)}, got {_show(spec['seeds'])}")


def _check_run(f: _Fields, entry: Any, i: int) -> str:
    name = f"runs[{i}]"
    f.keys(entry, name, _RUN, _RUN)
    run_id = f.text(entry["run_id"], f"{name}.run_id")
    assert run_id is not None
    if len(run_id) > 200 or not run_id.isprintable():
        raise f.fail(f"{name}.run_id", f"must be printable text of at most 200 characters, got {_show(run_id)}")
    kind = f.choice(entry["kind"], f"{name}.kind", KINDS)
    f.choice(entry["status"], f"{name}.status", STATUSES)
    seeds = f.check(f"{name}.seeds", entry["seeds"], _NON_EMPTY_LIST)
    for j, seed in enumerate(seeds):
        f.whole(seed, f"{name}.seeds[{j}]", high=MAX_SEED)
    if len(set(seeds)) != len(seeds):
        raise f.fail(f"{name}.seeds", "lists a seed twice")
    _check_spec(f, entry["spec"], f"{name}.spec", kind, seeds)
    f.config(entry["config"], f"{name}.config")
    f.text(entry["git_revision"], f"{name}.git_revision", optional=True)
    f.when(entry["created_at"], f"{name}.created_at")
    f.when(entry["finished_at"], f"{name}.finished_at", optional=True)
    return run_id


def _check_files(f: _Fields, files: Any) -> dict[str, dict[str, Any]]:
    """The file entries by table: the check every export reader makes of them
    (:func:`common.export_schema.check_entries`)."""
    f.check("files", files, Instance(list))
    return check_entries(files, str(f.source), TABLES)


def check_runs(runs: Any, source: str | None = None) -> list[str]:
    """The run entries, each checked (kind, status, spec, config, seeds, dates); their ids."""
    f = _Fields(source)
    f.check("runs", runs, _NON_EMPTY_LIST)
    ids = [_check_run(f, entry, i) for i, entry in enumerate(runs)]
    if len(set(ids)) != len(ids):
        twice = next(r for r in ids if ids.count(r) > 1)
        raise f.fail("runs", f"lists the run {twice!r} twice")
    return ids


def check_manifest(manifest: Any, source: str) -> dict[str, dict[str, Any]]:
    """Check a parsed manifest (``source`` names it in messages); return its file
    entries by table.  Raises InputError naming the first bad field."""
    f = _Fields(source)
    found = manifest.get("format") if isinstance(manifest, dict) else None
    if found != FORMAT:
        raise InputError("export", f"{source} is not a D-CEM run export: format {_show(found)}, "
                                   f"expected {FORMAT!r}")
    f.keys(manifest, "the manifest", _TOP, _TOP)
    f.when(manifest["created_at"], "created_at")
    f.text(manifest["command"], "command")
    check_models(manifest["models"], source)
    check_runs(manifest["runs"], source)
    return _check_files(f, manifest["files"])


def run_cells(manifest: Mapping[str, Any]) -> list[tuple[str, str, int, int | None]]:
    """(run_id, scenario, seed, panel size) of every cell the checked manifest's runs
    plan; the panel size (the spec's agents) is known for clinical runs only."""
    return [(r["run_id"], s, k, len(r["spec"]["agents"]) if r["kind"] == "clinical" else None)
            for r in manifest["runs"] for s in r["spec"]["scenarios"] for k in r["seeds"]]
