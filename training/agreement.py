"""Does llama.cpp run a trained adapter as torch does?  The same prompts scored both ways.

torch: the GGUF base dequantized by transformers with the adapter read back from its GGUF
file (:func:`training.gguf_lora_read.load_lora_gguf`); llama.cpp: the runtime's backend
for ``<base>+lora:...``.  Both score the option tokens after the same token ids (the
runtime's).  The two bases differ a little by themselves (llama.cpp multiplies quantized
weights with 8-bit activations, torch uses the dequantized weights in float32), so the
comparison is the share of prompts with the same most probable option and the mean
absolute difference of the option log-probabilities.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from common.errors import InputError
from common.fields import Instance, Seq, Whole, check, fixed

__all__ = ["Agreement", "compare_backends", "RECORD_NAME", "RECORD_FIELDS", "read_agreement_record",
           "recorded_agreement"]

RECORD_NAME = "agreement.json"
"""The measured agreements of the shipped adapters, beside their exports
(``data/results/training/agreement.json``, written by ``benchmarks/adapter_agreement.py``)."""
RECORD_FIELDS = {"adapter": str, "dataset": str, "items": int, "same_letter": int, "mean_abs_diff": float,
                 "torch_right": int, "llama_cpp_right": int, "threads": int, "command": str, "measured_on": str}


@dataclass(frozen=True)
class Agreement:
    items: int
    same_letter: int
    mean_abs_diff: float
    torch_letters: tuple[int, ...]
    llama_letters: tuple[int, ...]


def compare_backends(backend: Any, adapter: Path, base_gguf: Path, prompts: Sequence[Sequence[Any]],
                     options: Sequence[str]) -> Agreement:
    """Score ``prompts`` (message lists) over ``options`` with the llama.cpp ``backend`` (which
    runs the adapter) and with torch (base + ``adapter``)."""
    import torch

    from training.base_model import load_base
    from training.gguf_lora_read import load_lora_gguf
    from training.letters import option_logprobs

    model = load_lora_gguf(load_base(base_gguf), adapter, base_gguf)
    ids = [backend.option_token(o) for o in options]
    tokens = [backend.prompt_tokens(m) for m in prompts]
    torch_rows = []
    with torch.no_grad():
        for lo in range(0, len(tokens), 8):
            torch_rows.extend(option_logprobs(model, tokens[lo:lo + 8], ids).double().numpy())
    llama_rows = [np.array(backend.score_options(m, list(options)).logprobs) for m in prompts]
    t, ll = np.array(torch_rows), np.array(llama_rows)
    return Agreement(len(prompts), int((t.argmax(1) == ll.argmax(1)).sum()), float(np.abs(t - ll).mean()),
                     tuple(int(x) for x in t.argmax(1)), tuple(int(x) for x in ll.argmax(1)))


_KINDS = {str: Instance(str), int: Whole(), float: Instance(float)}  # a bool is none of them


def read_agreement_record(path: Path) -> list[dict[str, Any]]:
    """The measurements of the record file at ``path``, each checked for its fields and types;
    :class:`InputError` naming the file and the field otherwise."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError("agreement record", f"{path} cannot be read: {exc}") from None
    rows = doc.get("measurements") if isinstance(doc, dict) else None
    check("agreement record", rows, Seq(min_len=1, types=(list,)), msg=fixed(f"{path} holds no list of measurements"),
          error=InputError)
    for i, row in enumerate(rows):
        for field, kind in RECORD_FIELDS.items():
            value = row.get(field) if isinstance(row, dict) else None
            check("agreement record", value, _KINDS[kind], error=InputError, msg=lambda v, i=i, field=field, kind=kind: (
                f"{path}: measurement {i + 1}: {field!r} must be a {kind.__name__}, got {v!r}"))
        if not 0 <= row["same_letter"] <= row["items"]:
            raise InputError("agreement record", f"{path}: measurement {i + 1}: same_letter must be between 0 "
                                                 "and items")
    return rows


def recorded_agreement(path: Path, adapter: str, items: int) -> dict[str, Any] | None:
    """The recorded measurement of ``adapter`` on ``items`` held-out items, if any."""
    found = [r for r in read_agreement_record(path) if r["adapter"] == adapter and r["items"] == items]
    return found[-1] if found else None
