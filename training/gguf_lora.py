"""A trained peft LoRA written as a llama.cpp GGUF LoRA adapter.

The trained model is the packaged GGUF base as transformers' GGUF loader dequantizes it,
with peft LoRA layers on some of its linear projections (q, k, v, o, gate, up, down).
:func:`export_lora_gguf` writes the adapter llama.cpp loads next to that same base file
(``Llama(lora_path=...)`` or ``llama_adapter_lora_init``):

- metadata ``general.type = "adapter"``, ``adapter.type = "lora"``,
  ``adapter.lora.alpha`` and the base's ``general.architecture``;
- for each adapted projection two F32 tensors named after the base tensor,
  ``blk.N.attn_q.weight.lora_a`` (numpy shape ``(r, in)``, peft's ``lora_A``) and
  ``.lora_b`` (``(out, r)``, peft's ``lora_B``).  The Hugging Face module names are mapped
  to GGUF names by the ``gguf`` package's own name map, and every name and shape is
  checked against the base file's header.

llama.cpp adds ``(alpha / r) * B A x`` to a projection, where ``r`` is the tensor's rank.
peft adds ``s * B A x`` with its own scale ``s`` (``lora_alpha / r``, or ``/ sqrt(r)``
with rsLoRA, per-module ranks and alphas included); so ``lora_b`` is written as
``B * s * r / alpha``, which leaves it unchanged in the usual case.

Llama conversion permutes the rows of the query and key projections (rotary layout) and
transformers' GGUF loader undoes that when it loads a ``llama`` file, so the trained
model sees Hugging Face's row order; the rows of ``lora_b`` of ``q_proj`` and ``k_proj``
are permuted back to the file's order here (``lora_a`` acts on the input and keeps its
order).  Gemma 3 files are not permuted.  Other architectures are refused.

The file is written to a temporary name beside ``out`` and renamed into place, so a
reader never sees half an adapter.
"""
from __future__ import annotations

import logging
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from common.errors import ConfigError, InputError
from common.fields import Number, check
from runtime.gguf_info import GgufHeader, read_gguf_header

__all__ = ["export_lora_gguf", "SUPPORTED_ARCHITECTURES", "permute_rows", "LoraPair"]

log = logging.getLogger(__name__)

SUPPORTED_ARCHITECTURES = ("llama", "gemma3")
_PERMUTED = {"llama"}  # architectures whose q/k rows the conversion permutes
_PREFIXES = ("base_model.model.",)


@dataclass(frozen=True)
class LoraPair:
    """One adapted projection, ready to write: GGUF base tensor name and the two matrices."""

    name: str
    lora_a: np.ndarray  # (r, in)
    lora_b: np.ndarray  # (out, r)


def permute_rows(weights: np.ndarray, n_head: int) -> np.ndarray:
    """llama conversion's row permutation of a query or key projection (``n_head``: the
    query heads for ``q_proj``, the key/value heads for ``k_proj``): within each head,
    the two interleaved halves of the rotary pairs are laid out one after the other."""
    rows = weights.shape[0]
    if n_head <= 0 or rows % (2 * n_head):
        raise InputError("lora_b", f"{rows} rows cannot be split into {n_head} heads of rotary pairs")
    return (weights.reshape(n_head, 2, rows // n_head // 2, *weights.shape[1:])
            .swapaxes(1, 2).reshape(weights.shape))


def _hf_name(module_name: str) -> str:
    for prefix in _PREFIXES:
        if module_name.startswith(prefix):
            return module_name[len(prefix):]
    return module_name


def _lora_modules(model: Any, adapter: str) -> Iterator[tuple[str, Any]]:
    from peft.tuners.lora import LoraLayer

    for name, module in model.named_modules():
        if not isinstance(module, LoraLayer):
            continue
        if adapter in getattr(module, "lora_embedding_A", {}):
            raise InputError("model", f"{_hf_name(name)}: LoRA on an embedding cannot be exported; adapt the "
                                      "linear projections only")
        if adapter in getattr(module, "lora_A", {}):
            yield name, module


def _head_counts(header: GgufHeader, arch: str) -> tuple[int, int]:
    n_head = header.metadata.get(f"{arch}.attention.head_count")
    n_kv = header.metadata.get(f"{arch}.attention.head_count_kv", n_head)
    if not isinstance(n_head, int) or not isinstance(n_kv, int):
        raise InputError("base_gguf", f"the base file has no whole {arch}.attention.head_count(_kv)")
    return n_head, n_kv


def _pairs(model: Any, header: GgufHeader, alpha: float) -> list[LoraPair]:
    """Every LoRA projection of the active adapter, named, scaled and permuted for the file."""
    import gguf
    import torch

    arch = header.architecture or ""
    n_blocks = header.metadata.get(f"{arch}.block_count")
    if not isinstance(n_blocks, int):
        raise InputError("base_gguf", f"the base file has no {arch}.block_count")
    arch_enum = {v: k for k, v in gguf.MODEL_ARCH_NAMES.items()}[arch]
    names = gguf.get_tensor_name_map(arch_enum, n_blocks)
    n_head, n_kv = _head_counts(header, arch)
    adapter = model.active_adapter
    for option in ("use_dora", "lora_bias"):
        if getattr(model.peft_config[adapter], option, False):
            raise ConfigError(option, "llama.cpp LoRA adapters have no such part; train without it")
    pairs: list[LoraPair] = []
    with torch.no_grad():
        for module_name, module in _lora_modules(model, adapter):
            hf = _hf_name(module_name)
            base = names.get_name(hf)
            if base is None or f"{base}.weight" not in header.tensor_shapes:
                raise InputError("model", f"the LoRA module {hf} has no tensor in the base GGUF file")
            a = module.lora_A[adapter].weight.detach().to(torch.float32).cpu().numpy()
            b = module.lora_B[adapter].weight.detach().to(torch.float32).cpu().numpy()
            rank = a.shape[0]
            expected = header.tensor_shapes[f"{base}.weight"][:2]
            if (a.shape[1], b.shape[0]) != tuple(expected) or b.shape[1] != rank:
                raise InputError("model", f"the LoRA of {hf} maps {a.shape[1]} -> {b.shape[0]} features but "
                                          f"{base}.weight of the base file has shape {list(expected)}")
            b = b * (float(module.scaling[adapter]) * rank / alpha)
            if arch in _PERMUTED and hf.endswith(".q_proj"):
                b = permute_rows(b, n_head)
            elif arch in _PERMUTED and hf.endswith(".k_proj"):
                b = permute_rows(b, n_kv)
            pairs.append(LoraPair(f"{base}.weight", np.ascontiguousarray(a, dtype=np.float32),
                                  np.ascontiguousarray(b, dtype=np.float32)))
    if not pairs:
        raise InputError("model", "the model has no LoRA layers to export (is it a peft LoRA model?)")
    return sorted(pairs, key=lambda p: _order(p.name))


def _order(name: str) -> tuple[int, str]:
    match = re.match(r"blk\.(\d+)\.", name)
    return (int(match.group(1)) if match else -1, name)


def _alpha(model: Any, alpha: float | None) -> float:
    if alpha is None:
        alpha = float(model.peft_config[model.active_adapter].lora_alpha)
    return float(check("alpha", alpha, Number(0, closed="neither", finite=True,
                                              msg="must be a positive number, got {value!r}")))


def export_lora_gguf(model: Any, base_gguf: Path, out: Path, *, alpha: float | None = None) -> Path:
    """Write the active LoRA adapter of the peft ``model`` (trained on ``base_gguf`` as
    transformers' GGUF loader reads it) as a llama.cpp GGUF LoRA adapter at ``out``.

    ``alpha`` is the ``adapter.lora.alpha`` written (default: peft's ``lora_alpha``);
    ``lora_b`` is rescaled so llama.cpp applies exactly peft's scale.  Returns ``out``.
    Raises :class:`~common.errors.InputError` for a base of another architecture than
    llama or gemma3, a LoRA module with no matching tensor or shape in the base, a LoRA on
    an embedding, or a model without LoRA layers; :class:`~common.errors.ConfigError` for a
    bad ``alpha``, a DoRA adapter or a LoRA with biases.
    """
    import gguf

    base_gguf, out = Path(base_gguf), Path(out)
    header = read_gguf_header(base_gguf)
    arch = header.architecture
    if arch not in SUPPORTED_ARCHITECTURES:
        raise InputError("base_gguf", f"{base_gguf.name} is a {arch!r} model; LoRA export supports "
                                      f"{', '.join(SUPPORTED_ARCHITECTURES)}")
    if not hasattr(model, "peft_config"):
        raise InputError("model", "give a peft PeftModel with a LoRA adapter")
    value = _alpha(model, alpha)
    pairs = _pairs(model, header, value)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.partial")
    try:
        writer = gguf.GGUFWriter(tmp, arch)
        writer.add_type(gguf.GGUFType.ADAPTER)
        writer.add_string(gguf.Keys.Adapter.TYPE, "lora")
        writer.add_float32(gguf.Keys.Adapter.LORA_ALPHA, value)
        for pair in pairs:
            writer.add_tensor(f"{pair.name}.lora_a", pair.lora_a)
            writer.add_tensor(f"{pair.name}.lora_b", pair.lora_b)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)
    log.info("wrote a LoRA adapter of %d projections to %s", len(pairs), out)
    return out
