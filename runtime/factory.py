"""A backend for a model key: the one place that turns a key into a loaded model.

``openai:URL[,URL...]#MODEL`` is a model behind one or more OpenAI-compatible HTTP
servers (llama.cpp's server, vLLM ...; :mod:`runtime.fleet` parses the key,
:class:`runtime.http_fleet.FleetBackend` sends the requests); every other key is resolved by :mod:`runtime.registry` to a GGUF file
and loaded in process with llama.cpp, with its LoRA adapter for ``BASE+lora:ADAPTER``.
:func:`load_gguf` loads a GGUF file already resolved (a training run's base, an adapter
file of a run in progress) with the options a key does not carry (no saved KV states, a
known digest).  Nothing outside :mod:`runtime` constructs a backend itself.
"""
from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Sequence

from common.errors import ConfigError
from runtime.backends import Backend
from runtime.kv_cache import MAX_MB as MAX_KV_CACHE_MB

if TYPE_CHECKING:
    from runtime.llama_backend import LlamaCppBackend

__all__ = ["make_backend", "load_gguf", "check_load_options", "check_model_keys", "HTTP_PREFIX", "MAX_THREADS",
           "MAX_GPU_LAYERS", "N_CTX_RANGE", "MAX_KV_CACHE_MB"]

HTTP_PREFIX = "openai:"
MAX_THREADS = 1024
"""CPU threads per model: 1 to this many (None: every core)."""
MAX_GPU_LAYERS = 1024
"""Layers offloaded to a GPU: -1 (all), 0 (none) or up to this many (None: detect)."""
N_CTX_RANGE = (128, 131_072)
"""A model's context length in tokens."""
_SHA256 = re.compile(r"[0-9a-f]{64}")


def _whole(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_load_options(*, n_ctx: int = 2048, n_gpu_layers: int | None = None, n_threads: int | None = None,
                       kv_cache_mb: int | None = None, sha256: str | None = None) -> None:
    """Raise :class:`~common.errors.ConfigError` naming the option when a model-loading
    setting is not a whole number in its range, or a given digest is not 64 lowercase hex
    digits (checked before any file is resolved)."""
    if n_threads is not None and not (_whole(n_threads) and 1 <= n_threads <= MAX_THREADS):
        raise ConfigError("threads", f"must be a whole number from 1 to {MAX_THREADS:,}, got {n_threads!r}")
    if n_gpu_layers is not None and not (_whole(n_gpu_layers) and -1 <= n_gpu_layers <= MAX_GPU_LAYERS):
        raise ConfigError("n_gpu_layers", f"must be -1 (all layers), 0 (none) or a layer count up to "
                          f"{MAX_GPU_LAYERS:,}, got {n_gpu_layers!r}")
    low, high = N_CTX_RANGE
    if not (_whole(n_ctx) and low <= n_ctx <= high):
        raise ConfigError("n_ctx", f"must be a whole number from {low:,} to {high:,} tokens, got {n_ctx!r}")
    if kv_cache_mb is not None and not (_whole(kv_cache_mb) and 0 <= kv_cache_mb <= MAX_KV_CACHE_MB):
        raise ConfigError("kv_cache_mb", f"must lie in [0, {MAX_KV_CACHE_MB}] (0 = off), got {kv_cache_mb!r}")
    if sha256 is not None and not (isinstance(sha256, str) and _SHA256.fullmatch(sha256)):
        raise ConfigError("sha256", f"must be 64 lowercase hexadecimal digits, got {sha256!r}")


def check_model_keys(keys: Sequence[str]) -> None:
    """Refuse, with the :class:`~runtime.backends.BackendError` or
    :class:`~common.errors.ConfigError` that loading would raise, a key that names no usable
    model, without loading any: an ``openai:`` key is parsed, a packaged model must be
    installed (Gemma is assembled when it loads, not here), any other key is resolved (its
    file found and its GGUF header read, its adapter checked against the base).  A command
    calls this before it stores anything."""
    from runtime.backends import BackendError
    from runtime.registry import model_spec, resolve_model

    for key in dict.fromkeys(k.strip() for k in keys):
        if key.startswith(HTTP_PREFIX):
            from runtime.fleet import parse_openai_key

            parse_openai_key(key)
            continue
        spec = model_spec(key)  # an unknown key is refused here
        if spec.source == "packaged":
            if not spec.installed:
                raise BackendError(f"{key}: {spec.note}")
            continue
        resolve_model(key)


def make_backend(key: str, *, n_ctx: int = 2048, n_gpu_layers: int | None = None,
                 n_threads: int | None = None, split: str = "fixed") -> Backend:
    """A backend for a model key: in-process llama.cpp, or ``openai:URL[,URL...]#MODEL``
    over HTTP (a :class:`~common.errors.ConfigError` when that key is malformed).
    ``split`` places an in-process model's evaluation blocks (:mod:`runtime.blocks`); a
    server keeps its own cache.  The settings are checked first (:func:`check_load_options`)."""
    check_load_options(n_ctx=n_ctx, n_gpu_layers=n_gpu_layers, n_threads=n_threads)
    if key.startswith(HTTP_PREFIX):
        from runtime.fleet import parse_openai_key
        from runtime.http_fleet import FleetBackend

        return FleetBackend(parse_openai_key(key))
    from runtime.registry import resolve_model

    path, adapter = resolve_model(key)
    return load_gguf(path, n_ctx=n_ctx, n_threads=n_threads, n_gpu_layers=n_gpu_layers, split=split,
                     lora_path=None if adapter is None else adapter.path)


def load_gguf(path: str | os.PathLike[str], *, n_ctx: int = 2048, n_threads: int | None = None,
              n_gpu_layers: int | None = None, kv_cache_mb: int | None = None, sha256: str | None = None,
              split: str = "fixed", lora_path: str | os.PathLike[str] | None = None) -> LlamaCppBackend:
    """A llama.cpp backend for a resolved GGUF file (:func:`runtime.registry.resolve` of a
    key), with an optional LoRA adapter file for it.

    ``kv_cache_mb`` budgets the saved KV states (0 = off; None = ``DCEM_KV_CACHE_MB`` or
    1024); ``sha256`` is the file's digest when already known (it is then not hashed
    again).  The options are checked first (:func:`check_load_options`, a
    :class:`~common.errors.ConfigError`); a missing or unreadable file or adapter is a
    :class:`~runtime.backends.BackendError`."""
    check_load_options(n_ctx=n_ctx, n_gpu_layers=n_gpu_layers, n_threads=n_threads, kv_cache_mb=kv_cache_mb,
                       sha256=sha256)
    from runtime.llama_backend import LlamaCppBackend

    return LlamaCppBackend(path, n_ctx=n_ctx, n_threads=n_threads, n_gpu_layers=n_gpu_layers, split=split,
                           kv_cache_mb=kv_cache_mb, sha256=sha256, lora_path=lora_path)
