"""Session glue of the Models page: the n_gpu_layers setting, loaded models shared by all
sessions, and the Hub keys fetched in this session.

Session state shared with other pages:

- ``st.session_state[keys.GPU_LAYERS]`` (:data:`studio.views.session_keys.GPU_LAYERS`): the number of layers
  llama.cpp offloads to the GPU, an integer >= -1 (-1 = all layers, 0 = CPU only).
  Set on the Models page; read it with :func:`gpu_layers`, which falls back to
  :func:`~studio.views.model_lab_view.default_gpu_layers` when the page has not been opened.
- ``st.session_state[keys.MODELS_EXTRA_KEYS]`` (:data:`EXTRA_KEYS_KEY`): ``hf:`` keys
  fetched on the Models page in this session, offered next to the registry's models.

Loaded models are shared by all sessions through ``st.cache_resource``, keyed by
(model key, n_gpu_layers).
"""
from __future__ import annotations

import time
from pathlib import Path

import streamlit as st

from common.errors import ConfigError
from studio.literal import literal
from dcem_clinical.measured_accuracy import Measured, measured_text, shipped_accuracy, shipped_view_accuracy
from studio.views.model_lab_view import (EXAMPLE_CASE, EXAMPLE_LABEL, LoadedModel, PromptResult,
                                        check_case_text, default_gpu_layers, example_note, gpu_offload_supported,
                                        load_model_uncached, model_file_name, registry_keys, resolve_hub_model,
                                        run_test_prompt, validate_gpu_layers)
# names its page imports from here (pages import from studio only)
from studio.views.model_lab_view import (
    MAX_CASE_CHARS,
    TEST_LABELS,
    TEST_N_CTX,
    hub_offline,
    input_note,
    model_facts,
    registry_table,
)
from studio.views.session_keys import MODELS_EXTRA_KEYS as EXTRA_KEYS_KEY
from studio.views import session_keys as keys

__all__ = ["EXTRA_KEYS_KEY", "gpu_layers", "gpu_layers_setting", "installed_keys", "load_model",
           "ask_test_prompt", "fetch_hub_model", "example_flag", "measured_note", "input_note"]


def gpu_layers() -> int:
    """The session's n_gpu_layers setting (the default when it was never set)."""
    stored = st.session_state.get(keys.GPU_LAYERS)
    return default_gpu_layers() if stored is None else int(stored)


def gpu_layers_setting() -> int:
    """Number input for n_gpu_layers; a valid value is stored under ``keys.GPU_LAYERS``,
    an invalid one is refused with an error and the previous value kept."""
    current = gpu_layers()
    chosen = st.number_input("n_gpu_layers", value=current, step=1, key="models_gpu_input",
                             help="Layers llama.cpp puts on the GPU: -1 = all layers, 0 = CPU only.")
    try:
        st.session_state[keys.GPU_LAYERS] = validate_gpu_layers(chosen)
    except ConfigError as exc:
        st.session_state[keys.GPU_LAYERS] = current
        st.error(f"Refused: {literal(exc)}. Keeping n_gpu_layers = {current}.")
    if gpu_offload_supported():
        st.caption("This llama.cpp build supports GPU offload; -1 puts every layer on the GPU.")
    else:
        st.caption("This llama.cpp build has no GPU offload support: models run on the CPU "
                   "whatever the value.")
    return int(st.session_state[keys.GPU_LAYERS])


def installed_keys() -> list[str]:
    """Installed registry models, then the Hub keys fetched in this session."""
    keys = registry_keys()
    return keys + [k for k in st.session_state.get(EXTRA_KEYS_KEY, []) if k not in keys]


@st.cache_resource(show_spinner=False, max_entries=3)
def _cached_model(key: str, n_gpu_layers: int) -> LoadedModel:
    return load_model_uncached(key, n_gpu_layers)


def load_model(key: str, n_gpu_layers: int) -> LoadedModel:
    """The model, loaded once per (key, n_gpu_layers) for all sessions."""
    return _cached_model(key.strip(), validate_gpu_layers(n_gpu_layers))


def ask_test_prompt(key: str, n_gpu_layers: int, text: str) -> PromptResult:
    """Load ``key`` (shared across sessions) and run the test prompt on ``text``."""
    text = check_case_text(text)  # before loading anything
    if not key.strip():
        raise ConfigError("model key", "pick a model or type a model key")
    asked = time.monotonic()
    return run_test_prompt(load_model(key, n_gpu_layers), text, asked=asked)


def fetch_hub_model(repo: str, filename: str) -> tuple[str, Path]:
    """Resolve a Hub file (local cache first) and offer its key for the rest of this session."""
    key, path = resolve_hub_model(repo, filename)
    extra = st.session_state.setdefault(EXTRA_KEYS_KEY, [])
    if key not in extra:
        extra.append(key)
    return key, path


def example_flag(text: str, label: str, key: str = "") -> str | None:
    """A flag when the built-in example (a textbook myocardial infarction) gets another answer."""
    if text.strip() != EXAMPLE_CASE.strip() or label == EXAMPLE_LABEL:
        return None
    return example_note(key, label)


@st.cache_data(show_spinner=False)
def _shipped() -> tuple[dict[str, Measured], dict[str, dict[str, Measured]]]:
    return shipped_accuracy(), shipped_view_accuracy()


def measured_note(key: str) -> str:
    """The model's measured accuracy on DDXPlus-8 in the shipped runs, beside chance (or
    the views of the case the shipped runs measured it on)."""
    whole, views = _shipped()
    return measured_text(key, model_file_name(key), whole, views=views)
