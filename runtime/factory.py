"""A backend for a model key: the one place that turns a key into a loaded model.

``openai:URL[,URL...]#MODEL`` is a model behind one or more OpenAI-compatible HTTP
servers (llama.cpp's server, vLLM ...; :mod:`runtime.fleet` parses the key,
:class:`runtime.http_fleet.FleetBackend` sends the requests); every other key is resolved by :mod:`runtime.registry` to a GGUF file
and loaded in process with llama.cpp.
"""
from __future__ import annotations

from runtime.backends import Backend

__all__ = ["make_backend", "HTTP_PREFIX"]

HTTP_PREFIX = "openai:"


def make_backend(key: str, *, n_ctx: int = 2048, n_gpu_layers: int | None = None,
                 n_threads: int | None = None, split: str = "fixed") -> Backend:
    """A backend for a model key: in-process llama.cpp, or ``openai:URL[,URL...]#MODEL``
    over HTTP (a :class:`~common.errors.ConfigError` when that key is malformed).
    ``split`` places an in-process model's evaluation blocks (:mod:`runtime.blocks`); a
    server keeps its own cache."""
    if key.startswith(HTTP_PREFIX):
        from runtime.fleet import parse_openai_key
        from runtime.http_fleet import FleetBackend

        return FleetBackend(parse_openai_key(key))
    from runtime.llama_backend import LlamaCppBackend
    from runtime.registry import resolve

    return LlamaCppBackend(resolve(key), n_ctx=n_ctx, n_threads=n_threads, n_gpu_layers=n_gpu_layers,
                           split=split)
