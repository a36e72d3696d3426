"""The model runtime: typed messages, backends (llama.cpp in process, an OpenAI-compatible
HTTP server, and a scripted test double), the model registry (packaged models, ``file:``
paths, ``hf:`` Hub files cache-first), the GGUF header reader and the append-only call log
with its cache.  It knows nothing of D-CEM or SAG."""
