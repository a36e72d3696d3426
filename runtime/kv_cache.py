"""Saved KV states of one llama.cpp sequence, reused across calls (bounded, least recently used).

A model's prompts repeat themselves: every prompt of an agent starts with the same system
prompt and category list, and a case's next-round prompt repeats the whole case before
the mediator's note.  :class:`KvSnapshots` keeps the KV state of recent prompts (the bytes
of ``llama_state_seq_get_data`` for sequence 0) keyed by their tokens.  Before a prompt is
evaluated, :meth:`KvSnapshots.best` finds the saved state that shares the longest token
prefix with it; the backend restores that state and evaluates only the rest.

Bounded memory: the saved states never hold more than ``max_bytes`` together; the least
recently used ones are dropped first.  A state is also dropped when a newer one holds all
but at most one block of the older one's reusable prefix (the whole blocks before its last
token; blocks as the backend's :mod:`runtime.blocks` split places them): the next round
of a case replaces the previous round's state, whose tail after
the case (the answer request, an older note) the next prompts do not repeat anyway, while
another case's state, which shares only the system prompt and the categories, stays.

The size is a setting: ``DCEM_KV_CACHE_MB`` (default :data:`DEFAULT_MB`; 0 turns the saved
states off) or the backend's ``kv_cache_mb`` parameter.  This module holds no llama.cpp
code: the backend passes the bytes in and gets them back.
"""
from __future__ import annotations

import os
from collections import OrderedDict
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from common.errors import ConfigError
from common.fields import Number, check
from runtime.blocks import BlockSplit, FixedSplit, floor_start

__all__ = ["KvSnapshots", "Snapshot", "DEFAULT_MB", "ENV", "kv_cache_mb", "common_length", "reusable_length",
           "as_split"]

DEFAULT_MB = 1024
ENV = "DCEM_KV_CACHE_MB"
MAX_MB = 1 << 20  # a terabyte: anything larger is a typo


def kv_cache_mb(value: int | None = None, env: Mapping[str, str] | None = None) -> int:
    """The saved-state budget in MB: ``value`` when given, else ``DCEM_KV_CACHE_MB``, else
    :data:`DEFAULT_MB`.  A :class:`~common.errors.ConfigError` names a bad value."""
    if value is None:
        raw = (os.environ if env is None else env).get(ENV, "").strip()
        if not raw:
            return DEFAULT_MB
        try:
            value = int(raw)
        except ValueError:
            raise ConfigError(ENV, f"must be a whole number of megabytes, got {raw!r}") from None
    check("kv_cache_mb", value, Number(0, MAX_MB, msg="must lie in [0, {high}] (0 = off), got {value!r}"))
    return int(value)


def common_length(a: np.ndarray, b: np.ndarray) -> int:
    """Length of the longest common prefix of two token arrays."""
    m = min(len(a), len(b))
    differ = np.flatnonzero(a[:m] != b[:m])
    return int(differ[0]) if len(differ) else m


def as_split(split: int | BlockSplit) -> BlockSplit:
    """A split, or fixed blocks of ``split`` tokens for a number."""
    return FixedSplit(split) if isinstance(split, (int, np.integer)) else split


def reusable_length(tokens: Sequence[int] | np.ndarray, held: Sequence[int] | np.ndarray,
                    split: int | BlockSplit, starts: np.ndarray | None = None) -> int:
    """KV positions a state holding ``held`` can give a prompt ``tokens`` with numbers
    identical to a cold evaluation: the whole blocks of their common prefix, before the
    last token of either.  ``split`` places the blocks (a number: fixed blocks of that
    size); ``starts``, the block starts of ``tokens`` when already known."""
    a, b = np.asarray(tokens, dtype=np.int64), np.asarray(held, dtype=np.int64)
    n = min(common_length(a, b), len(a) - 1, len(b) - 1)
    if n <= 0:
        return 0
    return floor_start(as_split(split).starts(a) if starts is None else starts, n)


@dataclass(frozen=True)
class Snapshot:
    """A saved state: the tokens its sequence holds, the state's bytes and the tokens'
    block starts."""

    tokens: np.ndarray
    data: bytes
    starts: np.ndarray

    @property
    def size(self) -> int:
        return len(self.data)


class KvSnapshots:
    """Saved sequence states, at most ``max_bytes`` together (see the module docstring).

    ``split``: where the backend's evaluation blocks start (a number: fixed blocks of that
    many tokens from position 0); only whole blocks are reused, so a state's reusable
    prefix ends on a block start.
    """

    def __init__(self, max_bytes: int, split: int | BlockSplit) -> None:
        if max_bytes < 0:
            raise ConfigError("kv_cache", f"needs max_bytes >= 0, got {max_bytes}")
        self.max_bytes, self.split = int(max_bytes), as_split(split)
        self._states: OrderedDict[int, Snapshot] = OrderedDict()
        self._next = 0
        self.bytes = 0
        self.saved = self.restored = self.evicted = self.replaced = 0

    def __len__(self) -> int:
        return len(self._states)

    @property
    def enabled(self) -> bool:
        return self.max_bytes > 0

    def best(self, tokens: Sequence[int]) -> tuple[Snapshot | None, int]:
        """The saved state to restore for ``tokens`` and how many of its tokens to keep
        (``(None, 0)`` when none shares a whole block); marks it as recently used."""
        query = np.asarray(tokens, dtype=np.int64)
        starts = self.split.starts(query)
        best_id, best_n = None, 0
        for sid, snap in self._states.items():
            n = reusable_length(query, snap.tokens, self.split, starts)
            if n > best_n:
                best_id, best_n = sid, n
        if best_id is None:
            return None, 0
        self._states.move_to_end(best_id)
        return self._states[best_id], best_n

    def put(self, tokens: Sequence[int], data: bytes) -> bool:
        """Save the state of ``tokens``; False when it alone exceeds the budget."""
        if not self.enabled or len(data) > self.max_bytes:
            return False
        held = np.asarray(tokens, dtype=np.int64)
        snap = Snapshot(held, bytes(data), self.split.starts(held))
        for sid in [sid for sid, old in self._states.items() if self._covers(snap, old)]:
            self._drop(sid)
            self.replaced += 1
        self._states[self._next] = snap
        self._next += 1
        self.bytes += snap.size
        self.saved += 1
        while self.bytes > self.max_bytes:
            self._drop(next(iter(self._states)))
            self.evicted += 1
        return True

    def _covers(self, new: Snapshot, old: Snapshot) -> bool:
        """Whether the state of ``new`` makes the state of ``old`` not worth its memory: it
        holds all but at most one block of ``old``'s reusable prefix."""
        whole = floor_start(old.starts, len(old.tokens) - 1)
        lower = floor_start(old.starts, whole - 1)  # one block less
        return reusable_length(new.tokens, old.tokens, self.split, new.starts) >= lower and \
            floor_start(new.starts, len(new.tokens) - 1) >= lower

    def _drop(self, sid: int) -> None:
        self.bytes -= self._states.pop(sid).size

    def clear(self) -> None:
        self._states.clear()
        self.bytes = 0

    def stats(self) -> dict[str, int]:
        """Counts for a benchmark or a log line."""
        return {"states": len(self._states), "bytes": self.bytes, "max_bytes": self.max_bytes,
                "saved": self.saved, "restored": self.restored, "evicted": self.evicted,
                "replaced": self.replaced}
