"""Helpers of the Models page: the GPU offload setting, model metadata, a test prompt
and Hugging Face Hub look-ups.

Session state shared with other pages:

- ``st.session_state["n_gpu_layers"]`` (:data:`GPU_LAYERS_KEY`): the number of layers
  llama.cpp offloads to the GPU, an integer >= -1 (-1 = all layers, 0 = CPU only).
  Set on the Models page; read it with :func:`gpu_layers`, which falls back to
  :func:`default_gpu_layers` when the page has not been opened.
- ``st.session_state["models_extra_keys"]`` (:data:`EXTRA_KEYS_KEY`): ``hf:`` keys
  fetched on the Models page in this session, offered next to the registry's models.

Loaded models are shared by all sessions through ``st.cache_resource``, keyed by
(model key, n_gpu_layers).  Every failure a user can cause is raised as a
:class:`~dcem.errors.DcemError` (``BackendError`` for model problems) with a one-line
message for ``st.error``.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import pandas as pd
import streamlit as st

from dcem.errors import ConfigError
from sag.backends import BackendError
from sag.ddxplus import LABELS as DDXPLUS_LABELS
from sag.llama_backend import LlamaCppBackend, detect_gpu_layers
from sag.llm_agent import DiagnosticAgent
from sag.model_cache import cached_sha256
from sag.models import available_models, model_info, resolve
from sag.prompts import letters

__all__ = ["GPU_LAYERS_KEY", "EXTRA_KEYS_KEY", "MAX_CASE_CHARS", "TEST_N_CTX", "EXAMPLE_CASE", "TEST_LABELS",
           "gpu_offload_supported", "default_gpu_layers", "validate_gpu_layers", "gpu_layers",
           "gpu_layers_setting", "registry_table", "installed_keys", "model_facts", "check_case_text",
           "LoadedModel", "PromptResult", "load_model", "run_test_prompt", "hub_offline", "hub_key",
           "fetch_hub_model"]

GPU_LAYERS_KEY = "n_gpu_layers"
EXTRA_KEYS_KEY = "models_extra_keys"
MAX_CASE_CHARS = 4000
TEST_N_CTX = 2048
TEST_LABELS: tuple[str, ...] = DDXPLUS_LABELS
EXAMPLE_CASE = ("A 58-year-old man. Presenting complaint: he has chest pain. Pain: described as heavy; "
                "located at the chest and the left arm; intensity 7; speed of onset 8 (10 = sudden). "
                "Other symptoms: he is short of breath; he is sweating. History and risk factors: he "
                "smokes; he has high blood pressure.")


# --------------------------------------------------------------------- GPU offload
def gpu_offload_supported() -> bool:
    """Whether this llama.cpp build can offload layers to a GPU."""
    return detect_gpu_layers(None) != 0


def default_gpu_layers() -> int:
    """-1 (all layers) on a GPU build of llama.cpp, 0 otherwise."""
    return detect_gpu_layers(None)


def validate_gpu_layers(value: object) -> int:
    """``value`` as an int if it is an integer >= -1, else :class:`ConfigError`."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ConfigError(GPU_LAYERS_KEY, f"must be an integer, got {value!r}")
    if isinstance(value, float) and not value.is_integer():
        raise ConfigError(GPU_LAYERS_KEY, f"must be a whole number, got {value}")
    if value < -1:
        raise ConfigError(GPU_LAYERS_KEY, f"must be -1 (all layers), 0 (CPU only) or a positive "
                                          f"layer count, got {int(value)}")
    return int(value)


def gpu_layers() -> int:
    """The session's n_gpu_layers setting (the default when it was never set)."""
    stored = st.session_state.get(GPU_LAYERS_KEY)
    return default_gpu_layers() if stored is None else int(stored)


def gpu_layers_setting() -> int:
    """Number input for n_gpu_layers; a valid value is stored under :data:`GPU_LAYERS_KEY`,
    an invalid one is refused with an error and the previous value kept."""
    current = gpu_layers()
    chosen = st.number_input("n_gpu_layers", value=current, step=1, key="models_gpu_input",
                             help="Layers llama.cpp puts on the GPU: -1 = all layers, 0 = CPU only.")
    try:
        st.session_state[GPU_LAYERS_KEY] = validate_gpu_layers(chosen)
    except ConfigError as exc:
        st.session_state[GPU_LAYERS_KEY] = current
        st.error(f"Refused: {exc}. Keeping n_gpu_layers = {current}.")
    if gpu_offload_supported():
        st.caption("This llama.cpp build supports GPU offload; -1 puts every layer on the GPU.")
    else:
        st.caption("This llama.cpp build has no GPU offload support: models run on the CPU "
                   "whatever the value.")
    return int(st.session_state[GPU_LAYERS_KEY])


# ------------------------------------------------------------------ registry and facts
def registry_table() -> pd.DataFrame:
    """The model registry as a table (nothing is resolved or loaded)."""
    return pd.DataFrame([{"key": s.key, "name": s.name, "source": s.source, "licence": s.licence,
                          "installed": s.installed, "note": s.note} for s in available_models()])


def installed_keys() -> list[str]:
    """Installed registry models, then the Hub keys fetched in this session."""
    keys = [s.key for s in available_models() if s.installed]
    return keys + [k for k in st.session_state.get(EXTRA_KEYS_KEY, []) if k not in keys]


def model_facts(key: str) -> dict[str, str]:
    """Metadata of a model's file (resolving it, without loading the weights)."""
    info = model_info(resolve(key))
    params = "unknown" if info.parameter_count is None else f"{info.parameter_count:,}"
    ctx = "unknown" if info.context_length is None else f"{info.context_length:,}"
    return {"file": info.path.name, "size": f"{info.size_mb:.1f} MB ({info.size_bytes:,} bytes)",
            "sha256": info.sha256, "architecture": info.architecture,
            "quantization": info.quantization or "unknown", "context length": ctx, "parameters": params,
            "chat template": "yes" if info.chat_template else "no (prompted as plain text)",
            "name in the file": info.name or "-", "licence in the file": info.licence or "-",
            "read by": info.read_by}


# --------------------------------------------------------------------- test prompt
def check_case_text(text: str) -> str:
    """The stripped case text, or :class:`ConfigError` when empty or too long."""
    text = text.strip()
    if not text:
        raise ConfigError("case text", "type a short case description")
    if len(text) > MAX_CASE_CHARS:
        raise ConfigError("case text", f"{len(text):,} characters is too long; the test prompt takes at "
                                       f"most {MAX_CASE_CHARS:,}")
    return text


@dataclass(frozen=True)
class LoadedModel:
    key: str
    backend: LlamaCppBackend
    load_s: float
    loaded_at: float  # time.monotonic() when loading finished


@st.cache_resource(show_spinner=False, max_entries=3)
def _cached_model(key: str, n_gpu_layers: int) -> LoadedModel:
    start = time.perf_counter()
    path = resolve(key)
    backend = LlamaCppBackend(path, n_ctx=TEST_N_CTX, n_gpu_layers=n_gpu_layers, sha256=cached_sha256(path))
    return LoadedModel(key, backend, time.perf_counter() - start, time.monotonic())


def load_model(key: str, n_gpu_layers: int) -> LoadedModel:
    """The model, loaded once per (key, n_gpu_layers) for all sessions."""
    return _cached_model(key.strip(), validate_gpu_layers(n_gpu_layers))


@dataclass(frozen=True)
class PromptResult:
    key: str
    table: pd.DataFrame  # letter, label, probability
    label: str
    load_s: float
    cached: bool
    answer_s: float
    prompt_tokens: int
    n_gpu_layers: int


def run_test_prompt(key: str, n_gpu_layers: int, text: str,
                    labels: Sequence[str] = TEST_LABELS) -> PromptResult:
    """Load ``key`` (cached) and ask a scored-mode agent for probabilities over ``labels``."""
    text = check_case_text(text)
    if not key.strip():
        raise ConfigError("model key", "pick a model or type a model key")
    asked = time.monotonic()
    loaded = load_model(key, n_gpu_layers)
    agent = DiagnosticAgent(loaded.backend, labels, name="Test agent", mode="scored")
    start = time.perf_counter()
    try:
        report = agent.classify(text)
    except (RuntimeError, OSError) as exc:  # llama.cpp failures not wrapped by the backend
        raise BackendError(f"the model call failed: {exc}") from None
    table = pd.DataFrame({"letter": letters(len(labels)), "label": list(labels),
                          "probability": report.probabilities})
    return PromptResult(loaded.key, table, labels[report.label], loaded.load_s, loaded.loaded_at < asked,
                        time.perf_counter() - start, report.prompt_tokens, loaded.backend.n_gpu_layers)


# ------------------------------------------------------------------ Hugging Face Hub
def hub_offline() -> bool:
    """Whether HF_HUB_OFFLINE is set (as :mod:`sag.models` reads it)."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "on", "yes", "true"}


def hub_key(repo: str, filename: str) -> str:
    """``hf:owner/repo:file.gguf`` from the two inputs, or :class:`ConfigError`."""
    repo, filename = repo.strip(), filename.strip()
    if not repo or not filename:
        raise ConfigError("Hub model", "give both the repository (owner/repo) and the file name (.gguf)")
    return f"hf:{repo}:{filename}"


def fetch_hub_model(repo: str, filename: str) -> tuple[str, Path]:
    """Resolve a Hub file through :func:`sag.models.resolve` (local Hub cache first;
    ``HF_HUB_OFFLINE`` honoured) and remember its key for this session."""
    key = hub_key(repo, filename)
    path = resolve(key)
    extra = st.session_state.setdefault(EXTRA_KEYS_KEY, [])
    if key not in extra:
        extra.append(key)
    return key, path
