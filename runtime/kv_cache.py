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
token): the next round of a case replaces the previous round's state, whose tail after
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

__all__ = ["KvSnapshots", "Snapshot", "DEFAULT_MB", "ENV", "kv_cache_mb", "common_length", "reusable_length"]

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
    if isinstance(value, bool) or not 0 <= int(value) <= MAX_MB:
        raise ConfigError("kv_cache_mb", f"must lie in [0, {MAX_MB}] (0 = off), got {value!r}")
    return int(value)


def common_length(a: np.ndarray, b: np.ndarray) -> int:
    """Length of the longest common prefix of two token arrays."""
    m = min(len(a), len(b))
    differ = np.flatnonzero(a[:m] != b[:m])
    return int(differ[0]) if len(differ) else m


def reusable_length(tokens: Sequence[int] | np.ndarray, held: Sequence[int] | np.ndarray, block: int) -> int:
    """KV positions a state holding ``held`` can give a prompt ``tokens`` with numbers
    identical to a cold evaluation: the whole blocks of their common prefix, before the
    last token of either."""
    a, b = np.asarray(tokens, dtype=np.int64), np.asarray(held, dtype=np.int64)
    n = min(common_length(a, b), len(a) - 1, len(b) - 1)
    return max(n, 0) // block * block


@dataclass(frozen=True)
class Snapshot:
    """A saved state: the tokens its sequence holds and the state's bytes."""

    tokens: np.ndarray
    data: bytes

    @property
    def size(self) -> int:
        return len(self.data)


class KvSnapshots:
    """Saved sequence states, at most ``max_bytes`` together (see the module docstring).

    ``block``: prompts are evaluated in blocks of this many tokens from position 0 and
    only whole blocks are reused, so a state's reusable prefix ends on a multiple of it.
    """

    def __init__(self, max_bytes: int, block: int) -> None:
        if max_bytes < 0 or block < 1:
            raise ConfigError("kv_cache", f"needs max_bytes >= 0 and block >= 1, got {max_bytes}, {block}")
        self.max_bytes, self.block = int(max_bytes), int(block)
        self._states: OrderedDict[int, Snapshot] = OrderedDict()
        self._next = 0
        self.bytes = 0
        self.saved = self.restored = self.evicted = self.replaced = 0

    def __len__(self) -> int:
        return len(self._states)

    @property
    def enabled(self) -> bool:
        return self.max_bytes > 0

    def _reusable(self, tokens: np.ndarray, other: np.ndarray) -> int:
        """Tokens of ``other``'s state a prompt ``tokens`` can keep: whole blocks of their
        common prefix before either one's last token (a state's tail after its last whole
        block was evaluated in shorter pieces than a cold evaluation would use)."""
        return reusable_length(tokens, other, self.block)

    def best(self, tokens: Sequence[int]) -> tuple[Snapshot | None, int]:
        """The saved state to restore for ``tokens`` and how many of its tokens to keep
        (``(None, 0)`` when none shares a whole block); marks it as recently used."""
        query = np.asarray(tokens, dtype=np.int64)
        best_id, best_n = None, 0
        for sid, snap in self._states.items():
            n = self._reusable(query, snap.tokens)
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
        snap = Snapshot(np.asarray(tokens, dtype=np.int64), bytes(data))
        for sid in [sid for sid, old in self._states.items() if self._covers(snap.tokens, old.tokens)]:
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

    def _covers(self, new: np.ndarray, old: np.ndarray) -> bool:
        """Whether the state of ``new`` makes the state of ``old`` not worth its memory: it
        holds all but at most one block of ``old``'s reusable prefix."""
        whole = (len(old) - 1) // self.block * self.block
        return reusable_length(new, old, self.block) >= whole - self.block and \
            (len(new) - 1) // self.block * self.block >= whole - self.block

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
