"""Turn runners for a group's model keys: one loaded model per key, shared by its agents.

A llama.cpp model gets the batched runner (:class:`runtime.llama_batch.BatchedLlamaTurns`:
shared prompt prefix evaluated once, rationales decoded together) unless ``batched`` is
off; any other backend (``openai:`` keys) is served one turn after another.
"""
from __future__ import annotations

from typing import Sequence

from runtime.factory import make_backend
from runtime.turns import SequentialTurns, TurnRunner

__all__ = ["build_runners", "DEFAULT_N_CTX", "MAX_AGENTS_PER_BATCH"]

DEFAULT_N_CTX = 8192
MAX_AGENTS_PER_BATCH = 16


def build_runners(keys: Sequence[str], *, n_ctx: int = DEFAULT_N_CTX, n_threads: int | None = None,
                  n_gpu_layers: int | None = None, batched: bool = True) -> dict[str, TurnRunner]:
    """One runner per distinct key (:class:`runtime.backends.BackendError` when a model
    cannot be loaded)."""
    out: dict[str, TurnRunner] = {}
    for key in dict.fromkeys(keys):
        backend = make_backend(key, n_ctx=n_ctx, n_threads=n_threads, n_gpu_layers=n_gpu_layers)
        out[key] = _batched(backend, n_ctx) if batched else SequentialTurns(backend)
    return out


def _batched(backend: object, n_ctx: int) -> TurnRunner:
    from runtime.llama_backend import LlamaCppBackend

    if not isinstance(backend, LlamaCppBackend):
        return SequentialTurns(backend)  # type: ignore[arg-type]
    try:
        from runtime.llama_batch import BatchedLlamaTurns
    except ImportError:  # the batched runner is optional
        return SequentialTurns(backend)
    return BatchedLlamaTurns(backend, n_ctx=n_ctx, n_seq_max=MAX_AGENTS_PER_BATCH + 1)
