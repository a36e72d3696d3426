"""Where a prompt's evaluation blocks start: fixed-size blocks, or blocks that also start at
every paragraph break.

llama.cpp's numbers depend slightly on how a prompt's tokens are grouped into batches, so
a KV prefix can be reused with numbers identical to a cold evaluation only up to a block
start that the cold evaluation shares (see :mod:`runtime.llama_backend`).  Both splits
place a block start by looking only at the tokens before it, so two prompts agree on
their starts as far as they agree on their tokens: what one evaluated in whole blocks,
the other may keep.

- :class:`FixedSplit`: a start every ``size`` tokens from position 0.
- :class:`ParagraphSplit`: a start after every paragraph break (the text so far ends with
  a blank line, ``"\\n\\n"``) and every ``size`` tokens after the last start.  Prompts that
  differ from one paragraph on (the same case with another mediator note) then share
  every token up to that paragraph, where a fixed split loses the partial block before it
  (half a block on average).

A split returns the sorted start positions of a token list (always position 0 first);
:func:`floor_start` and :func:`spans` turn them into what the backend keeps and evaluates.
"""
from __future__ import annotations

from typing import Callable, Protocol, Sequence

import numpy as np

from common.errors import ConfigError
from common.fields import Whole, check

__all__ = ["BlockSplit", "FixedSplit", "ParagraphSplit", "SPLITS", "check_split", "floor_start", "make_split", "spans"]

SPLITS = ("fixed", "paragraph")


class BlockSplit(Protocol):
    name: str
    size: int

    def starts(self, tokens: Sequence[int] | np.ndarray) -> np.ndarray:
        """Sorted block start positions of ``tokens`` (0 first; none for no tokens)."""


def _check_size(size: int) -> int:
    check("block size", size, Whole(1, numpy=True))
    return int(size)


class FixedSplit:
    """A block start every ``size`` tokens from position 0."""

    name = "fixed"

    def __init__(self, size: int) -> None:
        self.size = _check_size(size)

    def starts(self, tokens: Sequence[int] | np.ndarray) -> np.ndarray:
        return np.arange(0, len(tokens), self.size, dtype=np.int64)


class ParagraphSplit:
    """A block start after every blank line and every ``size`` tokens since the last start.

    ``piece(token)`` gives a token's bytes (the model's detokenizer).  The text before
    position ``i`` ends with a blank line when token ``i-1``'s bytes end with ``"\\n\\n"``,
    or are ``"\\n"`` and token ``i-2``'s end with ``"\\n"`` (tokenizers write a blank line
    either way).  The pieces are looked up once per token id.
    """

    name = "paragraph"

    def __init__(self, piece: Callable[[int], bytes], size: int) -> None:
        self.size = _check_size(size)
        self._piece = piece
        self._kind: dict[int, int] = {}  # token -> bit 1: ends with "\n"; 2: is "\n"; 4: ends with "\n\n"

    def _kinds(self, tokens: np.ndarray) -> np.ndarray:
        out = np.empty(len(tokens), dtype=np.int64)
        for i, t in enumerate(tokens.tolist()):
            kind = self._kind.get(t)
            if kind is None:
                b = self._piece(t)
                kind = (b.endswith(b"\n") * 1) | ((b == b"\n") * 2) | (b.endswith(b"\n\n") * 4)
                self._kind[t] = kind
            out[i] = kind
        return out

    def starts(self, tokens: Sequence[int] | np.ndarray) -> np.ndarray:
        arr = np.asarray(tokens, dtype=np.int64)
        if len(arr) == 0:
            return np.zeros(0, dtype=np.int64)
        kind = self._kinds(arr)
        blank = (kind & 4) > 0
        blank[1:] |= ((kind[1:] & 2) > 0) & ((kind[:-1] & 1) > 0)  # "\n" after a piece ending in "\n"
        breaks = np.flatnonzero(blank[:-1]) + 1  # a start after token i is position i + 1
        bounds = np.concatenate(([0], breaks, [len(arr)]))
        return np.concatenate([np.arange(lo, hi, self.size, dtype=np.int64)
                               for lo, hi in zip(bounds[:-1], bounds[1:]) if hi > lo])


def floor_start(starts: np.ndarray, n: int) -> int:
    """The last block start at or before position ``n`` (0 when ``n`` <= 0)."""
    if n <= 0 or len(starts) == 0:
        return 0
    return int(starts[int(np.searchsorted(starts, n, side="right")) - 1])


def spans(starts: np.ndarray, begin: int, end: int) -> list[tuple[int, int]]:
    """Half-open spans evaluating positions ``begin .. end-1`` in the split's blocks: from
    ``begin`` (a block start) to each next start, the last one cut at ``end``."""
    if end <= begin:
        return []
    cuts = [int(s) for s in starts if begin < s < end]
    edges = [begin] + cuts + [end]
    return list(zip(edges[:-1], edges[1:]))


def check_split(name: object) -> str:
    """``name`` if it is one of :data:`SPLITS`, else a :class:`~common.errors.ConfigError`."""
    if name not in SPLITS:
        raise ConfigError("split", f"must be one of {', '.join(SPLITS)}, got {name!r}")
    return str(name)


def make_split(name: str, size: int, piece: Callable[[int], bytes] | None = None) -> BlockSplit:
    """The split called ``name`` (one of :data:`SPLITS`); ``paragraph`` needs ``piece``."""
    if check_split(name) == "fixed":
        return FixedSplit(size)
    if piece is None:
        raise ConfigError("split", "the paragraph split needs the model's token pieces")
    return ParagraphSplit(piece, size)
