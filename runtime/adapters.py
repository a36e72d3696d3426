"""LoRA adapters on a GGUF base model: their keys, their folders and the check of a file.

A model with an adapter is named ``BASE+lora:ADAPTER``:

- ``smollm2-135m+lora:ddxplus8-grpo``: the shipped adapter ``data/adapters/ddxplus8-grpo.gguf``
  on the packaged SmolLM2 (a name is letters, digits, ``.``, ``_`` and ``-``);
- ``smollm2-135m+lora:file:/path/to/adapter.gguf``: an adapter file, under the rules of
  ``file:`` model keys (:mod:`runtime.registry`): inside the models folder, the
  registry's own model folders, the shipped adapters' folder ``data/adapters/`` or the
  training output folder ``runs/`` (``runs/train/<run>/adapter.gguf``, ``runs/adapters/``).

``BASE`` is any model key of the registry without an adapter.  :func:`check_adapter_file`
reads only the adapter's GGUF header (and the base's) and refuses, with one line, a
missing file, a file that is not GGUF or is truncated, a GGUF that is not a LoRA adapter
(``general.type = "adapter"``, ``adapter.type = "lora"``), an adapter of another
architecture than the base, and tensors that do not fit the base: every ``lora_a`` /
``lora_b`` pair must name a weight of the base, and ``lora_a`` (ggml shape ``[in, r]``)
and ``lora_b`` (``[r, out]``) must fit its shape ``[in, out]``.

A model with an adapter computes other numbers than its base, so its identity
(:func:`combined_sha256`, a backend's ``model_sha256`` and so the call cache's key) is
the digest of both files' digests.
"""
from __future__ import annotations

import hashlib
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from common.db import PROJECT_ROOT
from runtime.backends import BackendError
from runtime.gguf_info import GgufHeader, check_gguf_file, read_gguf_header

__all__ = ["ADAPTER_MARK", "AdapterInfo", "AdapterKey", "split_adapter_key", "check_adapter_file",
           "combined_sha256", "shipped_adapters_dir", "training_adapters_dir", "shipped_adapters",
           "adapter_file", "adapter_dirs"]

ADAPTER_MARK = "+lora:"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_FORMS = "BASE+lora:NAME (a file in data/adapters/) or BASE+lora:file:/path/to/adapter.gguf"


def shipped_adapters_dir() -> Path:
    """The shipped adapters: ``data/adapters/`` in the project."""
    return PROJECT_ROOT / "data" / "adapters"


def training_adapters_dir() -> Path:
    """Where training writes its runs and adapters: ``runs/`` in the project (not versioned)."""
    return PROJECT_ROOT / "runs"


def adapter_dirs() -> list[Path]:
    """The adapter folders a ``+lora:file:`` key may also point into (resolved)."""
    return [shipped_adapters_dir().resolve(), training_adapters_dir().resolve()]


@dataclass(frozen=True)
class AdapterKey:
    """A key split at its adapter: ``base`` (a registry key) and ``adapter`` (a shipped
    adapter's name or ``file:PATH``)."""

    base: str
    adapter: str

    @property
    def is_file(self) -> bool:
        return self.adapter.startswith("file:")


def split_adapter_key(key: str) -> AdapterKey | None:
    """The base and adapter of ``BASE+lora:ADAPTER``; None for a key without an adapter.
    A :class:`BackendError` for an empty part or a second adapter."""
    key = key.strip()
    base, mark, adapter = key.partition(ADAPTER_MARK)
    if not mark:
        return None
    base, adapter = base.strip(), adapter.strip()
    if not base:
        raise BackendError(f"{key!r}: name the base model before '+lora:' ({_FORMS})")
    if not adapter:
        raise BackendError(f"{key!r}: name the adapter after '+lora:' ({_FORMS})")
    if ADAPTER_MARK in adapter:
        raise BackendError(f"{key!r}: one adapter per model key ({_FORMS})")
    if not adapter.startswith("file:") and not _NAME.fullmatch(adapter):
        raise BackendError(f"{key!r}: an adapter name has letters, digits, '.', '_' and '-' only; "
                           f"write a file as +lora:file:/path/to/adapter.gguf")
    return AdapterKey(base, adapter)


def shipped_adapters(folder: Path | None = None) -> list[str]:
    """Names of the shipped adapters (``*.gguf`` in ``data/adapters/``), sorted."""
    folder = shipped_adapters_dir() if folder is None else folder
    if not folder.is_dir():
        return []
    return sorted(p.stem for p in folder.glob("*.gguf") if p.is_file() and _NAME.fullmatch(p.stem))


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def adapter_file(key: str, adapter: str, model_dirs: Sequence[Path]) -> Path:
    """The path of a key's adapter: a shipped name, or a ``file:`` path inside
    ``model_dirs`` or :func:`adapter_dirs` (the path is checked before anything is read;
    the refusal says nothing about whether it exists)."""
    if not adapter.startswith("file:"):
        path = shipped_adapters_dir() / f"{adapter}.gguf"
        if not path.is_file():
            names = ", ".join(shipped_adapters()) or "none yet"
            raise BackendError(f"{key}: unknown adapter {adapter!r}; shipped adapters (data/adapters/): "
                               f"{names}; or write +lora:file:/path/to/adapter.gguf")
        return path
    raw = adapter[len("file:"):].strip()
    if not raw:
        raise BackendError(f"{key!r}: give a path after '+lora:file:'")
    try:
        real = Path(os.path.realpath(Path(raw).expanduser().absolute()))
    except (OSError, ValueError):
        real = None
    allowed = [*model_dirs, *adapter_dirs()]
    if real is None or not any(_inside(real, folder) for folder in allowed):
        raise BackendError(f"{key}: adapter files may only be named inside the models folder, the registry's "
                           "model folders, data/adapters/ or runs/; put the adapter there")
    return real


@dataclass(frozen=True)
class AdapterInfo:
    """A checked LoRA adapter file.

    name : the file's name without ``.gguf``.
    alpha : ``adapter.lora.alpha`` (0 when absent: llama.cpp then scales by 1, not alpha / r).
    rank : the largest rank of its tensors; tensors : the base weights it changes.
    """

    name: str
    path: Path
    sha256: str
    alpha: float
    architecture: str
    rank: int
    tensors: int


def combined_sha256(base_sha256: str, adapter_sha256: str) -> str:
    """The identity of a base with an adapter: sha256 of ``"BASE_SHA:ADAPTER_SHA"``."""
    return hashlib.sha256(f"{base_sha256}:{adapter_sha256}".encode("ascii")).hexdigest()


def _header(path: Path, prefix: str) -> GgufHeader:
    check_gguf_file(path, prefix)
    try:
        return read_gguf_header(path)
    except BackendError as exc:
        raise BackendError(f"{prefix}{exc}") from None


def _pairs(header: GgufHeader, prefix: str) -> dict[str, tuple[tuple[int, ...], tuple[int, ...]]]:
    """Base weight name -> (lora_a shape, lora_b shape); every tensor must be half of a pair."""
    halves: dict[str, dict[str, tuple[int, ...]]] = {}
    for name, dims in header.tensor_shapes.items():
        base, dot, half = name.rpartition(".")
        if not dot or half not in ("lora_a", "lora_b"):
            raise BackendError(f"{prefix}the tensor {name[:80]!r} is neither a lora_a nor a lora_b tensor")
        halves.setdefault(base, {})[half] = dims
    pairs = {}
    for base, both in halves.items():
        if set(both) != {"lora_a", "lora_b"}:
            missing = "lora_b" if "lora_a" in both else "lora_a"
            raise BackendError(f"{prefix}{base[:80]} has no {missing} tensor")
        pairs[base] = (both["lora_a"], both["lora_b"])
    if not pairs:
        raise BackendError(f"{prefix}the adapter has no LoRA tensors")
    return pairs


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def check_adapter_file(path: str | os.PathLike[str], base_path: str | os.PathLike[str]) -> AdapterInfo:
    """Check that ``path`` is a LoRA adapter that fits the model file ``base_path``,
    reading only the two GGUF headers (see the module docstring); the adapter's sha256
    comes from the digest cache (:func:`runtime.model_cache.cached_sha256`).  Raises
    :class:`BackendError` with one line naming the adapter file."""
    from runtime.model_cache import cached_sha256

    path, base_path = Path(path), Path(base_path)
    prefix = f"LoRA adapter {path.name}: "
    if not path.exists():
        raise BackendError(f"{prefix}no such file: {path}")
    header = _header(path, prefix)
    kind, adapter_type = header.metadata.get("general.type"), header.metadata.get("adapter.type")
    if kind != "adapter":
        what = "a model" if kind in (None, "model") else f"of general.type {str(kind)[:40]!r}"
        raise BackendError(f"{prefix}this GGUF file is {what}, not a LoRA adapter")
    if adapter_type != "lora":
        raise BackendError(f"{prefix}an adapter of type {str(adapter_type)[:40]!r}, not a LoRA adapter")
    base = _header(base_path, f"base model {base_path.name}: ")
    if header.architecture != base.architecture:
        raise BackendError(f"{prefix}made for a {header.architecture!r} model, but the base {base_path.name} "
                           f"is a {base.architecture!r} model")
    rank = 0
    for name, (a, b) in _pairs(header, prefix).items():
        target = base.tensor_shapes.get(name)
        if target is None:
            raise BackendError(f"{prefix}changes {name[:80]}, which the base {base_path.name} does not have")
        if len(a) != 2 or len(b) != 2 or a[1] != b[0] or (a[0], b[1]) != tuple(target[:2]):
            raise BackendError(f"{prefix}the shapes of {name[:80]} (lora_a {list(a)}, lora_b {list(b)}) do not "
                               f"fit the base's {list(target)}")
        rank = max(rank, a[1])
    alpha = _number(header.metadata.get("adapter.lora.alpha", 0.0))
    if alpha is None or not math.isfinite(alpha) or alpha < 0:
        raise BackendError(f"{prefix}adapter.lora.alpha is not a number >= 0")
    return AdapterInfo(name=path.name[:-5] if path.name.lower().endswith(".gguf") else path.name, path=path,
                       sha256=cached_sha256(path), alpha=alpha, architecture=str(header.architecture),
                       rank=rank, tensors=len(header.tensor_shapes) // 2)
