"""Which earlier prompt prefix a batched llama.cpp context reuses, and where it keeps them.

:class:`runtime.llama_batch.BatchedLlamaTurns` holds the shared prefix of a run in
sequence 0.  The sequences a run leaves free can keep earlier prefixes ("parked"), so that
prompts of kinds that alternate in one context each reuse their own: a member with a LoRA
adapter runs alone in its context, and its round-0 and round-1 prompts, which share only
the system prompt, alternate across cases.  Without parking each round's prompt replaces
the other's and reuses about one block; parked, each finds the previous case's prompt of
its kind (the instructions before the case: about two blocks).

This module holds the bookkeeping only (which tokens each sequence holds, which sequence
a new prefix should come from, which free sequence to park sequence 0 in); the runner
does the llama.cpp copies.  Reuse is counted in whole blocks, as the runner evaluates.
"""
from __future__ import annotations

from typing import Sequence

__all__ = ["ParkedPrefixes", "common_prefix"]


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix of two token lists."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


class ParkedPrefixes:
    """The token lists the parked sequences hold, with a least-recently-used order."""

    def __init__(self, block: int) -> None:
        if block < 1:
            raise ValueError(f"block must be >= 1, got {block}")
        self.block = block
        self._held: dict[int, list[int]] = {}
        self._last_use: dict[int, int] = {}
        self._clock = 0

    def __len__(self) -> int:
        return len(self._held)

    def held(self, seq: int) -> list[int]:
        """The tokens sequence ``seq`` holds (empty when nothing is parked there)."""
        return self._held.get(seq, [])

    def reusable(self, held: Sequence[int], prefix: Sequence[int]) -> int:
        """Whole blocks of ``prefix`` that a sequence holding ``held`` already holds."""
        return common_prefix(held, prefix) // self.block * self.block

    def source(self, kept: Sequence[int], prefix: Sequence[int], spare: Sequence[int]) -> tuple[int, int]:
        """(sequence, reusable tokens): sequence 0 (holding ``kept``), or the parked
        sequence among ``spare`` that holds the most of ``prefix`` (ties keep 0)."""
        best, keep = 0, self.reusable(kept, prefix)
        for seq in spare:
            held = self.reusable(self.held(seq), prefix)
            if held > keep:
                best, keep = seq, held
        return best, keep

    def target(self, kept: Sequence[int], keep: int, source: int, spare: Sequence[int]) -> int | None:
        """The free sequence to park sequence 0 (holding ``kept``) in before it is trimmed
        to ``keep`` tokens or replaced by ``source``; None when nothing of value would be
        lost, a parked sequence already holds its whole blocks, or no sequence is free.
        An empty sequence first, else the least recently used."""
        whole = len(kept) // self.block * self.block
        if whole == 0 or (whole <= keep and source == 0):
            return None
        if any(common_prefix(held, kept) >= whole for held in self._held.values()):
            return None
        free = [s for s in spare if s != source]
        if not free:
            return None
        return min(free, key=lambda s: (s in self._held, self._last_use.get(s, -1)))

    def park(self, seq: int, tokens: Sequence[int]) -> None:
        """Record that ``seq`` now holds ``tokens``."""
        self._held[seq] = list(tokens)
        self.touch(seq)

    def touch(self, seq: int) -> None:
        self._clock += 1
        self._last_use[seq] = self._clock

    def forget(self, seqs: Sequence[int]) -> None:
        """The runner overwrote these sequences."""
        for seq in seqs:
            self._held.pop(seq, None)

    def clear(self) -> None:
        self._held.clear()
