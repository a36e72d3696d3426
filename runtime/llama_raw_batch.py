"""A ``llama_batch`` filled from Python, and freeing a batched context (llama-cpp-python's
low-level API; used by :mod:`runtime.llama_batch`)."""
from __future__ import annotations

from typing import Any

from runtime.backends import BackendError

__all__ = ["RawBatch", "free_context"]


class RawBatch:
    """A ``llama_batch`` filled from Python, one sequence id per token."""

    def __init__(self, capacity: int) -> None:
        import llama_cpp

        self.raw = llama_cpp.llama_batch_init(capacity, 0, 1)
        self.capacity, self.n = capacity, 0

    def clear(self) -> None:
        self.n = 0
        self.raw.n_tokens = 0

    def add(self, token: int, pos: int, seq: int, logits: bool) -> int:
        """Append a token; returns its index in the batch (for ``llama_get_logits_ith``)."""
        if self.n >= self.capacity:
            raise BackendError(f"batch of {self.capacity} tokens is full")
        i, raw = self.n, self.raw
        raw.token[i], raw.pos[i], raw.n_seq_id[i] = token, pos, 1
        raw.seq_id[i][0] = seq
        raw.logits[i] = 1 if logits else 0
        self.n += 1
        raw.n_tokens = self.n
        return i


def free_context(ctx: Any, batch: Any, llm: Any) -> None:
    """Free the context and the batch (``llm`` is passed to keep the weights alive)."""
    import llama_cpp

    llama_cpp.llama_batch_free(batch)
    llama_cpp.llama_free(ctx)
