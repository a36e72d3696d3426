"""LoRA adapter files for the runtime tests, written with numpy and the gguf package (no torch)."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np

from runtime.gguf_info import read_gguf_header

PROJECTIONS = ("attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down")


def write_adapter(path: Path, base: Path, *, rank: int = 4, seed: int = 0, scale: float = 0.05,
                  alpha: float = 8.0, arch: str | None = None, projections: Sequence[str] = PROJECTIONS,
                  layers: Sequence[int] | None = None, kind: str = "adapter", adapter_type: str = "lora",
                  wrong_rows: bool = False, zero_b: bool = False) -> Path:
    """A LoRA adapter for ``base`` with random ``lora_a`` / ``lora_b`` (numpy ``(r, in)`` and
    ``(out, r)``), on ``projections`` of ``layers`` (default: every layer).  ``arch``,
    ``kind`` (``general.type``), ``adapter_type`` and ``wrong_rows`` (one row too many in
    each ``lora_b``) make bad adapters; ``zero_b`` an adapter that changes nothing."""
    import gguf

    header = read_gguf_header(base)
    arch = arch or str(header.architecture)
    n_layers = int(header.metadata[f"{header.architecture}.block_count"])  # type: ignore[arg-type]
    rng = np.random.default_rng(seed)
    writer = gguf.GGUFWriter(path, arch)
    writer.add_type(kind)
    writer.add_string("adapter.type", adapter_type)
    writer.add_float32("adapter.lora.alpha", alpha)
    for layer in range(n_layers) if layers is None else layers:
        for proj in projections:
            name = f"blk.{layer}.{proj}.weight"
            n_in, n_out = header.tensor_shapes[name][:2]
            a = (rng.standard_normal((rank, n_in)) * scale).astype(np.float32)
            b = (rng.standard_normal((n_out + int(wrong_rows), rank)) * scale * (not zero_b)).astype(np.float32)
            writer.add_tensor(f"{name}.lora_a", a)
            writer.add_tensor(f"{name}.lora_b", b)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
