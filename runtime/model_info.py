"""What a GGUF model file is: size, digest, architecture, quantization, context length.

Read from the GGUF header (:mod:`runtime.gguf_info`) without loading the weights; if the
header reader cannot parse the file (a newer GGUF version, an unknown value type ...),
llama.cpp is asked instead with
``Llama(..., vocab_only=True)`` (which loads the vocabulary but no weights, and cannot
count parameters).  A file the reader finds truncated or corrupt
(:class:`runtime.gguf_info.GgufCorruptError`) is reported as such, without the fallback.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from runtime.backends import BackendError
from runtime.gguf_info import GgufCorruptError, check_gguf_file, file_type_name, read_gguf_header
from runtime.model_cache import cached_sha256

__all__ = ["ModelInfo", "model_info"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ModelInfo:
    """Facts about one model file.

    quantization : llama.cpp file type name (``"Q4_1"``, ``"Q4_K_M"`` ...).
    parameter_count : total weights, or None when only llama.cpp's vocab-only load worked.
    read_by : ``"gguf-header"`` or ``"llama-vocab-only"``.
    """

    path: Path
    size_bytes: int
    sha256: str
    architecture: str
    quantization: str | None
    context_length: int | None
    parameter_count: int | None
    chat_template: bool
    name: str | None
    licence: str | None
    read_by: str

    @property
    def size_mb(self) -> float:
        return self.size_bytes / 1e6


def _opt_str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


class _Facts(NamedTuple):
    architecture: str | None
    quantization: str | None
    context_length: int | None
    parameter_count: int | None
    chat_template: bool
    name: str | None
    licence: str | None
    read_by: str


def _from_header(path: Path) -> _Facts:
    header = read_gguf_header(path)
    meta = header.metadata
    return _Facts(header.architecture, header.quantization, header.context_length, header.parameter_count,
                  bool(_opt_str(meta.get("tokenizer.chat_template"))), _opt_str(meta.get("general.name")),
                  _opt_str(meta.get("general.license")), "gguf-header")


def _from_llama(path: Path) -> _Facts:
    try:
        from llama_cpp import Llama
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise BackendError(f"cannot read {path.name}: llama-cpp-python is not installed ({exc})") from None
    try:
        llm = Llama(model_path=str(path), vocab_only=True, verbose=False)
    except (ValueError, RuntimeError) as exc:
        raise BackendError(f"cannot read the metadata of {path.name}: {exc}") from None
    meta: dict[str, str] = dict(llm.metadata)
    arch = meta.get("general.architecture")
    ctx = meta.get(f"{arch}.context_length", "")
    ftype = meta.get("general.file_type", "")
    return _Facts(arch, file_type_name(int(ftype)) if ftype.isdigit() else None,
                  int(ctx) if ctx.isdigit() else None, None, bool(meta.get("tokenizer.chat_template")),
                  meta.get("general.name"), meta.get("general.license"), "llama-vocab-only")


def model_info(path: str | os.PathLike[str]) -> ModelInfo:
    """Describe a GGUF file without loading its weights.

    The SHA-256 comes from the digest cache (:func:`runtime.model_cache.cached_sha256`), so
    only the first call for a given file pays for hashing it.  Raises
    :class:`BackendError` for a missing or non-GGUF file.
    """
    path = Path(path)
    check_gguf_file(path)
    try:
        facts = _from_header(path)
    except GgufCorruptError:
        raise
    except BackendError as exc:
        log.warning("GGUF header reader failed (%s); asking llama.cpp", exc)
        facts = _from_llama(path)
    if not facts.architecture:
        raise BackendError(f"{path.name}: the GGUF metadata has no general.architecture")
    return ModelInfo(path=path, size_bytes=path.stat().st_size, sha256=cached_sha256(path),
                     architecture=facts.architecture, quantization=facts.quantization,
                     context_length=facts.context_length, parameter_count=facts.parameter_count,
                     chat_template=facts.chat_template, name=facts.name, licence=facts.licence,
                     read_by=facts.read_by)
