"""A resume runs the stored settings, or nothing: the check every kind of run makes before it writes.

Every kind of run (the synthetic and clinical D-CEM grids, a Small Agent Group run, each
group of an evaluation, a training run) stores the settings it was started with, and the
same command resumes it.  Before a run writes anything under an id the store already
holds, :func:`check_resume` compares the stored settings with the given ones, field by
field in the given order, and refuses a difference with :class:`ResumeRefused`: one line
naming the first field that differs (``base_config.t_max`` for a nested one) with its
stored and given values.  So a named run (``--run-id``) can never take cells computed
with other settings, and a store merged from elsewhere cannot slip other settings under
an id.  What a kind of run leaves out of its stored settings (a training run's threads,
device and step budget) may change on a resume.
"""
from __future__ import annotations

import json
from typing import Any, Mapping

from common.errors import ProjectError

__all__ = ["ResumeRefused", "check_resume", "first_difference", "NOT_SET"]


class _NotSet:
    def __repr__(self) -> str:
        return "NOT_SET"


NOT_SET: Any = _NotSet()
"""The value of a field one side does not have."""

_SHOWN = 80  # characters of a value shown in the message


class ResumeRefused(ProjectError):
    """A resume whose settings differ from the stored run's: ``field``, ``stored``, ``given``."""

    def __init__(self, what: str, field: str, stored: Any, given: Any, hint: str) -> None:
        self.field, self.stored, self.given = field, stored, given
        super().__init__(f"{what} is stored with other settings: {field} stored {_show(stored)}, given "
                         f"{_show(given)}; nothing was written ({hint})")


def _show(value: Any) -> str:
    if value is NOT_SET:
        return "(not set)"
    text = json.dumps(value, sort_keys=True)  # ASCII: control characters come out escaped, on one line
    return text if len(text) <= _SHOWN else text[:_SHOWN - 4] + " ..."


def _plain(value: Any) -> Any:
    """JSON's view of a value: tuples are lists, keys are strings (as the store keeps them)."""
    return json.loads(json.dumps(value, default=str))


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def _walk(stored: Any, given: Any, path: str) -> tuple[str, Any, Any] | None:
    if isinstance(stored, dict) and isinstance(given, dict):
        for key in [*given, *(k for k in stored if k not in given)]:
            found = _walk(stored.get(key, NOT_SET), given.get(key, NOT_SET), f"{path}.{key}" if path else key)
            if found is not None:
                return found
        return None
    if stored is NOT_SET or given is NOT_SET or not _same(stored, given):
        return path, stored, given
    return None


def first_difference(stored: Mapping[str, Any], given: Mapping[str, Any]) -> tuple[str, Any, Any] | None:
    """(field, stored value, given value) of the first field that differs, in the given
    settings' order (then the stored-only fields); nested mappings are compared field by
    field (``base_config.t_max``), lists as a whole; a field one side lacks is
    :data:`NOT_SET` there.  None when the two are the same settings."""
    return _walk(_plain(dict(stored)), _plain(dict(given)), "")


def check_resume(what: str, stored: Mapping[str, Any], given: Mapping[str, Any], *, hint: str) -> None:
    """Refuse (:class:`ResumeRefused`) to resume ``what`` (``run myrun``) with ``given``
    settings that differ from the ``stored`` ones; ``hint`` says what to do instead."""
    found = first_difference(stored, given)
    if found is not None:
        raise ResumeRefused(what, *found, hint)
