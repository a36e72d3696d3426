"""The kinds of run the project records, each declared once, in one registry.

Every run is a row of the ledger (:mod:`common.ledger`) with a ``kind``.  A kind declares
here what everything after "a run happened" needs to know of it:

* ``tables``: the tables holding its runs' rows, each with a ``run_id`` column (what an
  export of a run copies, :mod:`common.run_export`); ``linked`` adds, per table without a
  ``run_id``, the SQL condition on a row ``r`` that ties it to the chosen runs (``{runs}``
  stands for the chosen run ids' subquery);
* ``open_store``: opens (creating or upgrading) a store file with the kind's tables, its
  store class;
* ``checks``: the rules a row of its tables keeps when a store or an export is merged in
  (:mod:`common.merge_checks`);
* ``report``: the report of one run, as text, from a store file;
* ``page``: the dashboard page that shows its runs in detail; ``what``: one line;
  ``describe``: a few words on one run, from its spec;
* ``imports``: the older export formats of the kind (format name -> a loader that reads
  such a folder into a new store file), which :func:`common.run_export.import_runs_export`
  still reads.

The kinds register themselves where they are defined (:mod:`dcem.store.run_kinds`:
``synthetic`` and ``clinical``; :mod:`sag.runs.run_kind`: ``sag``; :mod:`training.run_kind`:
``training``); :func:`studio.run_kinds.load_kinds` imports them all.  ``common`` imports no
kind.  Adding a kind is one :func:`register` call beside its own tables
(``docs/architecture.md``, "Adding a kind of run").
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from common.db import Database
from common.errors import InputError
from common.merge_checks import RowCheck

__all__ = ["RunKind", "describe_run", "register", "run_kind", "run_kinds", "unregister"]

_NAME = re.compile(r"^[a-z][a-z0-9-]*$")
_TABLE = re.compile(r"^[a-z_][a-z0-9_]*$")


def _no_description(spec: Mapping[str, Any]) -> str:
    return ""


@dataclass(frozen=True)
class RunKind:
    """One kind of run (see the module docstring)."""

    name: str
    what: str
    page: str
    tables: tuple[str, ...]
    open_store: Callable[[Path], Database]
    checks: Callable[[], Sequence[RowCheck]]
    report: Callable[[Path, str], str]
    describe: Callable[[Mapping[str, Any]], str] = _no_description
    linked: Mapping[str, str] = field(default_factory=dict)
    imports: Mapping[str, Callable[[Path, Path, Any], None]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise ValueError(f"a run kind's name is lower-case letters, digits and '-', got {self.name!r}")
        if not self.tables or not all(isinstance(t, str) and _TABLE.match(t) for t in self.tables):
            raise ValueError(f"run kind {self.name}: tables must name at least one table, each a plain SQL name")
        bad = [t for t in self.linked if not _TABLE.match(t) or t in self.tables]
        if bad:
            raise ValueError(f"run kind {self.name}: linked table {bad[0]!r} is not a plain name or is also in tables")
        for name in ("open_store", "checks", "report", "describe"):
            if not callable(getattr(self, name)):
                raise ValueError(f"run kind {self.name}: {name} must be callable")

    def all_tables(self) -> tuple[str, ...]:
        """Its tables, then its linked tables."""
        return (*self.tables, *self.linked)


_KINDS: dict[str, RunKind] = {}


def register(kind: RunKind) -> RunKind:
    """Add ``kind`` to the registry (registering the same kind again does nothing); a
    different kind under a name already taken is refused."""
    held = _KINDS.get(kind.name)
    if held is not None and held != kind:
        raise ValueError(f"a run kind named {kind.name!r} is registered already")
    _KINDS[kind.name] = kind
    return kind


def unregister(name: str) -> None:
    """Remove the kind ``name`` (tests register kinds of their own)."""
    _KINDS.pop(name, None)


def run_kinds() -> dict[str, RunKind]:
    """Every registered kind, by name (sorted)."""
    return dict(sorted(_KINDS.items()))


def run_kind(name: str) -> RunKind:
    """The kind ``name``; InputError naming the known kinds otherwise."""
    kind = _KINDS.get(name)
    if kind is None:
        known = ", ".join(sorted(_KINDS)) or "none registered"
        raise InputError("kind", f"no run kind {name!r} (known: {known})")
    return kind


def describe_run(kinds: Mapping[str, RunKind], kind: str, spec: Mapping[str, Any]) -> str:
    """A few words on a run of ``kind`` from its spec (its kind's ``describe``); a kind
    ``kinds`` lacks says so, and a spec its kind cannot read (written by another version)
    gives no words rather than an error."""
    found = kinds.get(kind)
    if found is None:
        return "(a kind this version does not know)"
    try:
        return found.describe(spec)
    except (KeyError, TypeError, ValueError, AttributeError):
        return ""

