"""Turn runners for a group's model keys: one loaded model per key, shared by its agents.

Each backend offers its own runner (:func:`runtime.turns.runner_of`).  A llama.cpp
model gives the batched runner (:class:`runtime.llama_batch.BatchedLlamaTurns`: shared
prompt prefix evaluated once, rationales decoded together) unless ``batched`` is off,
when it runs one turn after another.  An ``openai:`` key's turns of one step go to its
server fleet concurrently (a :class:`runtime.fleet_turns.ConcurrentTurns`, up to
``DCEM_OPENAI_CONCURRENCY`` at once).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

from runtime.backends import Backend
from runtime.factory import make_backend
from runtime.turns import TurnRunner, runner_of
from sag.group.config import GroupConfig

__all__ = ["RunnerRecipe", "build_runners", "runner_for", "batch_width", "DEFAULT_N_CTX", "MAX_AGENTS_PER_BATCH"]

DEFAULT_N_CTX = 4096  # tokens per sequence: the longest transcript of a SAG-15 item fits
MAX_AGENTS_PER_BATCH = 8  # sequences decoded together; larger steps run in chunks (KV memory)


def batch_width(cfg: GroupConfig) -> int:
    """Agents of the group's largest step (all agents for the majority vote), at most
    :data:`MAX_AGENTS_PER_BATCH`."""
    counts = cfg.role_counts()
    largest = cfg.size if cfg.method == "majority" else max(counts[0] + counts[1], counts[2], counts[3])
    return max(1, min(largest, MAX_AGENTS_PER_BATCH))


def build_runners(keys: Sequence[str], *, n_ctx: int = DEFAULT_N_CTX, n_threads: int | None = None,
                  n_gpu_layers: int | None = None, batched: bool = True,
                  width: int = MAX_AGENTS_PER_BATCH) -> dict[str, TurnRunner]:
    """One runner per distinct key (:class:`runtime.backends.BackendError` when a model
    cannot be loaded); ``width`` agents are decoded together (see :func:`batch_width`).
    The batched runner keeps one KV stream of ``n_ctx`` tokens per sequence (so its
    numbers equal an agent evaluated alone): about ``(width + 1) x n_ctx`` tokens of KV."""
    out: dict[str, TurnRunner] = {}
    for key in dict.fromkeys(keys):
        backend = make_backend(key, n_ctx=n_ctx, n_threads=n_threads, n_gpu_layers=n_gpu_layers)
        out[key] = runner_for(backend, n_ctx=n_ctx, width=width, batched=batched)
    return out


def runner_for(backend: Backend, *, n_ctx: int = DEFAULT_N_CTX, width: int = MAX_AGENTS_PER_BATCH,
               batched: bool = True) -> TurnRunner:
    """The runner one loaded backend offers (batched for llama.cpp unless ``batched`` is off)."""
    return runner_of(backend, batched=batched, n_ctx=n_ctx, width=width)


@dataclass(frozen=True)
class RunnerRecipe:
    """How a command builds a group's runners (picklable and hashable: a Ray worker builds
    them itself and keeps them for every job that asks for the same ones)."""

    n_threads: int | None = None
    n_gpu_layers: int | None = None
    batched: bool = True

    def __call__(self, cfg: GroupConfig) -> Mapping[str, TurnRunner]:
        return build_runners(cfg.models(), n_threads=self.n_threads, n_gpu_layers=self.n_gpu_layers,
                             batched=self.batched, width=batch_width(cfg))
