"""A llama.cpp GGUF LoRA adapter read back into a peft model: the inverse of
:func:`training.gguf_lora.export_lora_gguf`.

It lets a shipped adapter (``data/adapters/``, no checkpoint beside it) be run in torch
again: to compare torch's answers with llama.cpp's, or to continue training from it.  The
rank, the adapted projections and layers and alpha come from the file; the query and key
rows are permuted back to Hugging Face's order for a ``llama`` base.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np

from common.errors import InputError
from runtime.gguf_info import read_gguf_header
from training.config import ALL_LINEAR
from training.gguf_lora import SUPPORTED_ARCHITECTURES, _PERMUTED, _head_counts

__all__ = ["read_lora_gguf", "load_lora_gguf", "load_lora_into", "unpermute_rows"]

_PARTS = {p: ("self_attn" if p in ("q_proj", "k_proj", "v_proj", "o_proj") else "mlp") for p in ALL_LINEAR}


def unpermute_rows(weights: np.ndarray, n_head: int) -> np.ndarray:
    """The inverse of :func:`training.gguf_lora.permute_rows`."""
    rows = weights.shape[0]
    if n_head <= 0 or rows % (2 * n_head):
        raise InputError("lora_b", f"{rows} rows cannot be split into {n_head} heads of rotary pairs")
    return (weights.reshape(n_head, rows // n_head // 2, 2, *weights.shape[1:])
            .swapaxes(1, 2).reshape(weights.shape))


def read_lora_gguf(path: Path, base_gguf: Path) -> tuple[float, dict[str, tuple[np.ndarray, np.ndarray]]]:
    """(alpha, {Hugging Face module name: (lora_A (r, in), lora_B (out, r))}) of the adapter
    at ``path`` for the base ``base_gguf``, rows in Hugging Face's order."""
    import gguf

    header = read_gguf_header(Path(base_gguf))
    arch = header.architecture or ""
    if arch not in SUPPORTED_ARCHITECTURES:
        raise InputError("base_gguf", f"{Path(base_gguf).name} is a {arch!r} model; supported: "
                                      f"{', '.join(SUPPORTED_ARCHITECTURES)}")
    try:
        reader = gguf.GGUFReader(str(path))
    except Exception as exc:  # noqa: BLE001 - any unreadable file gets one line
        raise InputError("adapter", f"{Path(path).name} is not a readable GGUF file ({exc})") from None
    field = reader.fields.get(gguf.Keys.Adapter.LORA_ALPHA)
    if field is None:
        raise InputError("adapter", f"{Path(path).name} has no {gguf.Keys.Adapter.LORA_ALPHA}")
    alpha = float(field.parts[field.data[0]][0])
    n_blocks = int(header.metadata[f"{arch}.block_count"])
    arch_enum = {v: k for k, v in gguf.MODEL_ARCH_NAMES.items()}[arch]
    names = gguf.get_tensor_name_map(arch_enum, n_blocks)
    to_hf = {}
    for block in range(n_blocks):
        for proj, part in _PARTS.items():
            hf = f"model.layers.{block}.{part}.{proj}"
            found = names.get_name(hf)
            if found:
                to_hf[f"{found}.weight"] = hf
    tensors = {t.name: np.array(t.data, dtype=np.float32).reshape([int(d) for d in reversed(t.shape)])
               for t in reader.tensors}
    n_head, n_kv = _head_counts(header, arch)
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for name, a in tensors.items():
        if not name.endswith(".lora_a"):
            continue
        base = name[:-len(".lora_a")]
        b = tensors.get(f"{base}.lora_b")
        if base not in to_hf or b is None:
            raise InputError("adapter", f"{Path(path).name}: tensor {name} has no projection of the base or no lora_b")
        hf = to_hf[base]
        if arch in _PERMUTED and hf.endswith(".q_proj"):
            b = unpermute_rows(b, n_head)
        elif arch in _PERMUTED and hf.endswith(".k_proj"):
            b = unpermute_rows(b, n_kv)
        out[hf] = (a, b)
    if not out:
        raise InputError("adapter", f"{Path(path).name} holds no LoRA tensor")
    return alpha, out


def load_lora_gguf(model: Any, path: Path, base_gguf: Path) -> Any:
    """The frozen base ``model`` (transformers, loaded from ``base_gguf``) with the adapter at
    ``path`` as a peft LoRA of the same rank, projections and layers; evaluation mode."""
    import torch
    from peft import LoraConfig, get_peft_model

    alpha, pairs = read_lora_gguf(path, base_gguf)
    ranks = {a.shape[0] for a, _ in pairs.values()}
    if len(ranks) != 1:
        raise InputError("adapter", f"{Path(path).name} mixes LoRA ranks {sorted(ranks)}; one rank is supported")
    layers = sorted({int(re.search(r"\.layers\.(\d+)\.", hf).group(1)) for hf in pairs})  # type: ignore[union-attr]
    targets = sorted({hf.rsplit(".", 1)[1] for hf in pairs})
    config = LoraConfig(r=ranks.pop(), lora_alpha=alpha, lora_dropout=0.0, target_modules=targets, bias="none",
                        layers_to_transform=layers, layers_pattern="layers", task_type="CAUSAL_LM")
    peft_model = get_peft_model(model, config)
    adapter = peft_model.active_adapter
    modules = dict(peft_model.named_modules())
    with torch.no_grad():
        for hf, (a, b) in pairs.items():
            module = modules.get(f"base_model.model.{hf}")
            if module is None or adapter not in getattr(module, "lora_A", {}):
                raise InputError("adapter", f"{Path(path).name}: no LoRA layer {hf} in the model")
            if tuple(module.lora_A[adapter].weight.shape) != a.shape or tuple(module.lora_B[adapter].weight.shape) != b.shape:
                raise InputError("adapter", f"{Path(path).name}: {hf} has shapes {a.shape}, {b.shape} that do not fit")
            module.lora_A[adapter].weight.copy_(torch.from_numpy(a))
            module.lora_B[adapter].weight.copy_(torch.from_numpy(b))
    return peft_model.eval()


def load_lora_into(model: Any, name: str, path: Path, base_gguf: Path) -> None:
    """Copy the adapter at ``path`` into the existing peft adapter ``name`` of ``model`` (one
    of several on the same base, made with the same rank, projections and layers): to go on
    training an adapter trained before, in a model that holds others beside it."""
    import torch

    alpha, pairs = read_lora_gguf(path, base_gguf)
    modules = dict(model.named_modules())
    with torch.no_grad():
        for hf, (a, b) in pairs.items():
            module = modules.get(f"base_model.model.{hf}")
            if module is None or name not in getattr(module, "lora_A", {}):
                raise InputError("adapter", f"{Path(path).name}: the model has no LoRA layer {hf} for adapter {name}")
            if tuple(module.lora_A[name].weight.shape) != a.shape or tuple(module.lora_B[name].weight.shape) != b.shape:
                raise InputError("adapter", f"{Path(path).name}: {hf} has shapes {a.shape}, {b.shape}; the model's "
                                            f"adapter {name} has other shapes (another rank?)")
            scale = float(module.scaling[name])
            r = a.shape[0]
            if abs(scale - alpha / r) > 1e-6:
                raise InputError("adapter", f"{Path(path).name}: alpha {alpha:g} (scale {alpha / r:g}) differs from the "
                                            f"model's adapter {name} (scale {scale:g})")
            module.lora_A[name].weight.copy_(torch.from_numpy(a))
            module.lora_B[name].weight.copy_(torch.from_numpy(b))
