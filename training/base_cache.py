"""A dequantized copy of each GGUF base, so a training command starts in seconds.

transformers reads a GGUF base and dequantizes it in pure Python: about 20 s for
SmolLM2-135M on an idle core of this machine, twice that on a busy one, at every start of a
training command.  The first load keeps the float32 weights (safetensors) and the model's
configuration in ``torch-bases/`` under the model cache, or in ``$DCEM_TORCH_CACHE`` when
set; later loads read that copy in about 3 s, with the same weights bit for bit, and
torch's random state left as the GGUF reader leaves it (a run seeded before its base loads
draws the same LoRA start either way).

An entry is named by the GGUF file's SHA-256 and the versions of transformers and gguf that
dequantized it: another file, or another dequantizer, never reads a stale copy.  An entry
that cannot be read is removed and rebuilt from the GGUF file; a cache that cannot be
written costs only the time.  Entries are written to a temporary folder and renamed, so
two processes loading the same base at once never see half an entry.  A float32 copy is
about four times the size of a 4-bit GGUF file (540 MB for SmolLM2-135M).
"""
from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable

__all__ = ["TORCH_CACHE_ENV", "torch_cache_dir", "entry_name", "read_entry", "write_entry", "load_cached"]

TORCH_CACHE_ENV = "DCEM_TORCH_CACHE"
CONFIG, WEIGHTS = "config.json", "model.safetensors"
_DROPPED = ("quantization_config", "_name_or_path")  # the GGUF loader's marks, not the model's

log = logging.getLogger(__name__)


def torch_cache_dir() -> Path | None:
    """Where the dequantized bases live (None, with a warning, when no such folder can be made)."""
    from runtime.backends import BackendError
    from runtime.model_cache import model_cache_dir

    override = os.environ.get(TORCH_CACHE_ENV, "").strip()
    try:
        folder = Path(override).expanduser() if override else model_cache_dir() / "torch-bases"
        folder.mkdir(parents=True, exist_ok=True)
    except (OSError, BackendError) as exc:
        log.warning("dequantized bases are not cached: %s", exc)
        return None
    return folder


def entry_name(gguf_sha256: str) -> str:
    """The entry of a GGUF file (its SHA-256) as the installed transformers and gguf read it."""
    import gguf
    import transformers

    versions = f"{gguf_sha256}|transformers {transformers.__version__}|gguf {getattr(gguf, '__version__', '?')}"
    return hashlib.sha256(versions.encode("utf-8")).hexdigest()[:20]


def read_entry(folder: Path) -> Any | None:
    """The model kept in ``folder`` (None when there is none); an unreadable entry is removed."""
    import torch
    from safetensors.torch import load_model
    from transformers import AutoConfig, AutoModelForCausalLM

    if not (folder / WEIGHTS).is_file():
        return None
    try:
        config = AutoConfig.from_pretrained(str(folder / CONFIG))
        with torch.random.fork_rng(devices=[]):  # the weights' random start must not move a run's seed
            model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
        load_model(model, str(folder / WEIGHTS))
    except Exception as exc:  # noqa: BLE001 - any unreadable entry is rebuilt, whatever broke it
        log.warning("removing the unreadable dequantized base %s: %s", folder, exc)
        shutil.rmtree(folder, ignore_errors=True)
        return None
    return model


def write_entry(model: Any, folder: Path) -> bool:
    """Keep ``model`` in ``folder`` (True), or leave the cache as it was (False)."""
    from safetensors.torch import save_model

    tmp = None
    try:
        tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
        config = {k: v for k, v in model.config.to_dict().items() if k not in _DROPPED}
        (tmp / CONFIG).write_text(json.dumps(config, indent=1, sort_keys=True), encoding="utf-8")
        save_model(model, str(tmp / WEIGHTS))
        os.rename(tmp, folder)
    except OSError as exc:  # a full disk, or another process wrote the same entry first
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        if not (folder / WEIGHTS).is_file():
            log.warning("cannot keep the dequantized base in %s: %s", folder, exc)
        return False
    return True


def load_cached(gguf_path: Path, load_gguf: Callable[[Path], Any]) -> Any:
    """The float32 model of ``gguf_path``: from the cache, else ``load_gguf(gguf_path)``, kept."""
    from runtime.model_cache import cached_sha256

    cache = torch_cache_dir()
    if cache is None:
        return load_gguf(gguf_path)
    folder = cache / entry_name(cached_sha256(gguf_path))
    model = read_entry(folder)
    if model is not None:
        return model
    model = load_gguf(gguf_path)
    write_entry(model, folder)
    return model
