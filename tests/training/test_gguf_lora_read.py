"""An exported adapter read back into torch has exactly the trained weights, for every
layer or the top ones, and a damaged file is refused with one line."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from common.errors import InputError  # noqa: E402
from runtime.registry import resolve  # noqa: E402
import training.base_model as base_model  # noqa: E402
from training.base_model import add_lora  # noqa: E402
from training.config import LoraSettings  # noqa: E402
from training.gguf_lora import export_lora_gguf, permute_rows  # noqa: E402
from training.gguf_lora_read import load_lora_gguf, unpermute_rows  # noqa: E402

pytestmark = pytest.mark.usefixtures("reuse_loaded_bases")


def test_unpermute_undoes_the_permutation() -> None:
    w = np.arange(64 * 3, dtype=np.float32).reshape(64, 3)
    assert np.array_equal(unpermute_rows(permute_rows(w, 4), 4), w)
    assert not np.array_equal(permute_rows(w, 4), w)


def test_a_written_adapter_reads_back_to_the_same_weights(tmp_path: Path) -> None:
    layers = 3
    path = resolve("smollm2-135m")
    trained = add_lora(base_model.load_base(path), LoraSettings(r=4, alpha=8.0, layers=layers, targets=("q_proj", "k_proj", "down_proj")))
    gen = torch.Generator().manual_seed(5)
    with torch.no_grad():
        for name, p in trained.named_parameters():
            if "lora_" in name:
                p.copy_(torch.randn(p.shape, generator=gen) * 0.1)
    file = export_lora_gguf(trained, path, tmp_path / "a.gguf")
    again = load_lora_gguf(base_model.load_base(path), file, path)
    want = {n: p for n, p in trained.named_parameters() if "lora_" in n}
    got = {n: p for n, p in again.named_parameters() if "lora_" in n}
    assert set(got) == set(want) and len(want) == 2 * 3 * layers
    for name, value in want.items():
        assert torch.allclose(got[name], value, atol=1e-6), name
    ids = torch.tensor([[1, 200, 300, 400, 500]])
    with torch.no_grad():
        assert torch.allclose(trained(input_ids=ids).logits, again(input_ids=ids).logits, atol=1e-4)


def test_a_file_that_is_not_an_adapter_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF" + b"\x00" * 20)
    path = resolve("smollm2-135m")
    with pytest.raises(InputError, match="^adapter: bad.gguf is not a readable GGUF file"):
        load_lora_gguf(base_model.load_base(path), bad, path)
