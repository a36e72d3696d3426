"""A backend for a model key: the one place that turns a key into a loaded model.

``openai:URL#MODEL`` is a model behind an OpenAI-compatible HTTP server (llama.cpp's
server, vLLM ...); every other key is resolved by :mod:`runtime.registry` to a GGUF file
and loaded in process with llama.cpp.
"""
from __future__ import annotations

from runtime.backends import Backend

__all__ = ["make_backend", "HTTP_PREFIX"]

HTTP_PREFIX = "openai:"


def make_backend(key: str, *, n_ctx: int = 2048, n_gpu_layers: int | None = None,
                 n_threads: int | None = None) -> Backend:
    """A backend for a model key: in-process llama.cpp, or ``openai:URL#MODEL`` over HTTP."""
    if key.startswith(HTTP_PREFIX):
        from runtime.http_backend import OpenAICompatBackend

        url, _, model = key[len(HTTP_PREFIX):].partition("#")
        return OpenAICompatBackend(url, model or "default")
    from runtime.llama_backend import LlamaCppBackend
    from runtime.registry import resolve

    return LlamaCppBackend(resolve(key), n_ctx=n_ctx, n_threads=n_threads, n_gpu_layers=n_gpu_layers)
