"""The model test bench behind the Models page: GPU offload settings, model metadata, a
scored test prompt on a loaded model and Hugging Face Hub keys.

Every failure a user can cause is raised as a :class:`~common.errors.ProjectError`
(``BackendError`` for model problems) with a one-line message.  A model loads through
:mod:`runtime.factory`; keeping loaded models across dashboard sessions is the session
glue's job (``studio.model_lab``, with ``st.cache_resource``).  No Streamlit here.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import pandas as pd

from clinical.ddxplus import LABELS as DDXPLUS_LABELS
from clinical.ddxplus_style import ddxplus_phrasing
from common.errors import ConfigError
from dcem_clinical.agent import DiagnosticAgent
from dcem_clinical.prompts import letters
from runtime.adapters import split_adapter_key
from runtime.backends import BackendError
from runtime.factory import load_gguf
from runtime.llama_backend import LlamaCppBackend, detect_gpu_layers
from runtime.model_cache import cached_sha256
from runtime.registry import available_models, model_info, resolve, resolve_model
from training.adapter_guide import DDXPLUS_CASE, VIEW_TURN, AdapterGuide, guide_for_adapter
from sag.views.featured import FEATURED

__all__ = ["GPU_LAYERS_KEY", "MAX_CASE_CHARS", "TEST_N_CTX", "EXAMPLE_CASE", "EXAMPLE_LABEL", "TEST_LABELS",
           "model_file_name",
           "gpu_offload_supported", "default_gpu_layers", "validate_gpu_layers", "registry_table",
           "registry_keys", "model_facts", "check_case_text", "LoadedModel", "load_model_uncached",
           "PromptResult", "run_test_prompt", "hub_offline", "hub_key", "resolve_hub_model", "adapter_guide_of",
           "input_note", "example_note"]

GPU_LAYERS_KEY = "n_gpu_layers"
MAX_CASE_CHARS = 4000
TEST_N_CTX = 2048
TEST_LABELS: tuple[str, ...] = DDXPLUS_LABELS
EXAMPLE_CASE = ("A 58-year-old man. Presenting complaint: he has chest pain. Pain: described as heavy; "
                "located at the chest and the left arm; intensity 7; speed of onset 8 (10 = sudden). "
                "Other symptoms: he is short of breath; he is sweating. History and risk factors: he "
                "smokes; he has high blood pressure.")
EXAMPLE_LABEL = "NSTEMI_STEMI"  # the example is a textbook myocardial infarction


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


# ------------------------------------------------------------------ registry and facts
def registry_table() -> pd.DataFrame:
    """The model registry as a table (nothing is resolved or loaded)."""
    return pd.DataFrame([{"key": s.key, "name": s.name, "source": s.source, "licence": s.licence,
                          "installed": s.installed, "note": s.note} for s in available_models()])


def registry_keys() -> list[str]:
    """Keys of the installed registry models."""
    return [s.key for s in available_models() if s.installed]


def model_file_name(key: str) -> str:
    """The file a key runs (``base.gguf+lora:adapter.gguf`` with an adapter), as the shipped
    runs record it; the key itself when it cannot be resolved."""
    try:
        path, adapter = resolve_model(key)
    except (BackendError, ConfigError, OSError):
        return key
    return path.name if adapter is None else f"{path.name}+lora:{adapter.path.name}"


def model_facts(key: str) -> dict[str, str]:
    """Metadata of a model's file (resolving it, without loading the weights); for a key
    with a LoRA adapter, its base's file and the adapter's."""
    path, adapter = resolve_model(key)
    info = model_info(path)
    params = "unknown" if info.parameter_count is None else f"{info.parameter_count:,}"
    ctx = "unknown" if info.context_length is None else f"{info.context_length:,}"
    return {"file": info.path.name, "size": f"{info.size_mb:.1f} MB ({info.size_bytes:,} bytes)",
            "sha256": info.sha256, "architecture": info.architecture,
            "quantization": info.quantization or "unknown", "context length": ctx, "parameters": params,
            "chat template": "yes" if info.chat_template else "no (prompted as plain text)",
            "name in the file": info.name or "-", "licence in the file": info.licence or "-",
            "read by": info.read_by,
            **({} if adapter is None else {
                "LoRA adapter": adapter.path.name, "adapter sha256": adapter.sha256,
                "adapter rank and alpha": f"r = {adapter.rank}, alpha = {adapter.alpha:g}",
                "adapted weights": f"{adapter.tensors:,}"})}


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


def load_model_uncached(key: str, n_gpu_layers: int, *, n_ctx: int = TEST_N_CTX) -> LoadedModel:
    """Resolve and load ``key`` (the UI caches the result across sessions)."""
    start = time.perf_counter()
    path, adapter = resolve_model(key.strip())
    backend = load_gguf(path, n_ctx=n_ctx, n_gpu_layers=validate_gpu_layers(n_gpu_layers),
                        sha256=cached_sha256(path), lora_path=None if adapter is None else adapter.path)
    return LoadedModel(key.strip(), backend, time.perf_counter() - start, time.monotonic())


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


def run_test_prompt(loaded: LoadedModel, text: str, *, asked: float,
                    labels: Sequence[str] = TEST_LABELS) -> PromptResult:
    """Ask a scored-mode agent on ``loaded`` for probabilities over ``labels``.

    asked : ``time.monotonic()`` when the user asked; the result says whether the model
    was already loaded before that.
    """
    text = check_case_text(text)
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


# ------------------------------------------------------- what a shipped adapter expects
def adapter_guide_of(key: str) -> AdapterGuide | None:
    """The guide row of the shipped adapter a model key runs (``BASE+lora:NAME``); None for a
    key without one, a ``file:`` adapter or a key that does not parse."""
    try:
        parts = split_adapter_key(key)
    except BackendError:
        return None
    if parts is None or parts.adapter.startswith("file:"):
        return None
    return guide_for_adapter(parts.adapter)


def input_note(key: str, text: str) -> str | None:
    """Beside a test prompt's answer: a sentence when the shipped adapter of ``key`` expects
    another kind of input than ``text`` (a DDXPlus-8 diagnostician given prose, a question
    answerer asked for a diagnosis); None when the input fits or the key has no guide."""
    guide = adapter_guide_of(key)
    if guide is None:
        return None
    if guide.input_kind == DDXPLUS_CASE:
        phrasing = ddxplus_phrasing(text)
        if phrasing.reads_as_ddxplus:
            return None
        return (f"This text is not the input {key} learned. It was trained on DDXPlus-8 cases rendered from "
                f"DDXPlus's evidence lists, not on prose; {phrasing.matched} of the text's {phrasing.findings} "
                "findings are phrases of those cases, so its answer here says little about the case. Paste a "
                "DDXPlus-8 case (the walkthrough shows them) to see what it learned.")
    if guide.input_kind == VIEW_TURN:
        return (f"{key} answers one member's turn in the view group: it learned from one view of a DDXPlus-8 case "
                "rendered as that turn, never from a whole case or prose, so its answer to this test prompt says "
                f"little about what it learned. `python -m sag ask CASE --group {FEATURED.group}` plays it as it "
                "was trained.")
    return (f"{key} was trained for another task. {guide.purpose} The test prompt asks it for one of eight "
            "DDXPlus diagnoses, so its answer here says little about what it learned.")


def example_note(key: str, label: str) -> str:
    """The flag for another answer than the built-in example's (a textbook myocardial
    infarction in plain words)."""
    head = (f"Wrong on the built-in example: it describes a textbook myocardial infarction ({EXAMPLE_LABEL}) in plain "
            f"words, and the model's most probable label is {label}.")
    guide = adapter_guide_of(key)
    if guide is not None and guide.input_kind == DDXPLUS_CASE:
        return f"{head} The example is prose, which this adapter never saw in training (see the note below)."
    return f"{head} Read its answers as those of a model that does not know the task."


# ------------------------------------------------------------------ Hugging Face Hub
def hub_offline() -> bool:
    """Whether HF_HUB_OFFLINE is set (as :mod:`runtime.registry` reads it)."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "on", "yes", "true"}


def hub_key(repo: str, filename: str) -> str:
    """``hf:owner/repo:file.gguf`` from the two inputs, or :class:`ConfigError`."""
    repo, filename = repo.strip(), filename.strip()
    if not repo or not filename:
        raise ConfigError("Hub model", "give both the repository (owner/repo) and the file name (.gguf)")
    return f"hf:{repo}:{filename}"


def resolve_hub_model(repo: str, filename: str) -> tuple[str, Path]:
    """Resolve a Hub file through :func:`runtime.registry.resolve` (local Hub cache first;
    ``HF_HUB_OFFLINE`` honoured); returns its key and path."""
    key = hub_key(repo, filename)
    return key, resolve(key)
