"""A peft LoRA trained on SmolLM2 in torch, exported as a GGUF LoRA adapter and run by
llama.cpp through its model key, gives torch's answers on held-out MedQA items (the last
50 outside the evaluation suite's subsets; the default test takes the 10 shortest).

The base itself differs a little between the two (llama.cpp multiplies the Q4_1 weights
with 8-bit activations; torch uses the dequantized weights in float32), so the adapter's
numbers are compared with tolerances: the same letter and close option log-probabilities.
An adapter that llama.cpp ignored, or whose query/key rows were not permuted back to the
file's order, fails them.  Measured with this test's adapter (the adapter itself moves the
log-probabilities by 0.15 on average):

- 10 items: the same letter on 10, mean difference 0.050; without the permutation 8 and 0.153;
- 50 items: the same letter on 46, mean difference 0.056, correlation of the changes torch
  and llama.cpp see 0.864; without the permutation 38, 0.145 and 0.598; the base alone 48
  and 0.052.
"""
from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pytest

from common.errors import ConfigError, InputError
from runtime.adapters import check_adapter_file
from runtime.factory import make_backend
from runtime.llama_backend import LlamaCppBackend
from runtime.registry import resolve
from tests.training.roundtrip import (add_lora, held_out_items, llama_option_logprobs, load_torch_smol,
                                      randomize_lora, shortest, torch_option_logprobs, zero_lora_b)
from training.gguf_lora import export_lora_gguf, permute_rows

log = logging.getLogger(__name__)
SMOL = "smollm2-135m"


class Setup:
    """The torch model with its LoRA, the exported adapters and their llama.cpp backends."""

    def __init__(self, folder: Path) -> None:
        self.folder, self.base_path = folder, resolve(SMOL)
        self.model = add_lora(load_torch_smol(self.base_path), rank=8, alpha=16.0)
        randomize_lora(self.model)
        start = time.perf_counter()
        self.tuned = export_lora_gguf(self.model, self.base_path, folder / "tuned.gguf")
        self.export_s = time.perf_counter() - start
        with zero_lora_b(self.model):
            self.zero = export_lora_gguf(self.model, self.base_path, folder / "zero.gguf")
        self._backends: dict[str, LlamaCppBackend] = {}

    def backend(self, name: str) -> LlamaCppBackend:
        """``base``, ``tuned`` or ``zero``, loaded through its registry key."""
        if name not in self._backends:
            key = SMOL if name == "base" else f"{SMOL}+lora:file:{self.folder / name}.gguf"
            backend = make_backend(key, n_ctx=2048, n_threads=1)
            assert isinstance(backend, LlamaCppBackend)
            self._backends[name] = backend
        return self._backends[name]


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    import torch

    folder = tmp_path_factory.mktemp("adapters")
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # idle threads of a busy machine spin; one thread is faster there
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("DCEM_MODELS_DIR", str(folder))  # file: adapters may live there
            mp.setenv("DCEM_MODEL_CACHE", str(tmp_path_factory.mktemp("cache")))
            yield Setup(folder)
    finally:
        torch.set_num_threads(threads)


def _compare(setup: Setup, items: list[Any]) -> dict[str, Any]:
    tuned, base = setup.backend("tuned"), setup.backend("base")
    torch_tuned = torch_option_logprobs(setup.model, tuned, items)
    llama_tuned, llama_base = llama_option_logprobs(tuned, items), llama_option_logprobs(base, items)
    return {"items": items, "torch": torch_tuned, "llama": llama_tuned, "llama_base": llama_base,
            "same": int((torch_tuned.argmax(1) == llama_tuned.argmax(1)).sum()),
            "mad": float(np.abs(torch_tuned - llama_tuned).mean()),
            "moved": float(np.abs(llama_tuned - llama_base).mean())}


def test_llama_cpp_runs_the_exported_adapter_like_torch(setup: Setup) -> None:
    got = _compare(setup, shortest(held_out_items(50), 10))
    log.info("10 items: same letter %d, mean |torch - llama.cpp| %.4f, moved by the adapter %.4f",
             got["same"], got["mad"], got["moved"])
    assert got["same"] >= 9
    assert got["mad"] < 0.08
    assert got["moved"] > 0.1  # the adapter does change the answers llama.cpp gives
    zero, base = setup.backend("zero"), setup.backend("base")
    items = got["items"][:2]
    assert llama_option_logprobs(zero, items) == pytest.approx(llama_option_logprobs(base, items), abs=1e-5)
    assert zero.model_sha256 != base.model_sha256  # the same numbers, but another model for the cache


@pytest.mark.adapter_large
@pytest.mark.timeout(1800)  # about 8 minutes on a busy 2-core machine
def test_fifty_held_out_items_agree_as_well_as_the_base_does(setup: Setup, record_property: Any) -> None:
    """Run with ``-m adapter_large``.  The base alone gives torch's letter on 48 of these 50
    items with llama.cpp (mean difference 0.052), the letters it misses having a margin
    below 0.13; the adapter must do about as well, and the changes it makes must agree."""
    got = _compare(setup, held_out_items(50))
    with setup.model.disable_adapter():
        torch_base = torch_option_logprobs(setup.model, setup.backend("base"), got["items"])
    base_same = int((torch_base.argmax(1) == got["llama_base"].argmax(1)).sum())
    base_mad = float(np.abs(torch_base - got["llama_base"]).mean())
    corr = float(np.corrcoef((got["torch"] - torch_base).ravel(), (got["llama"] - got["llama_base"]).ravel())[0, 1])
    for name, value in (("same_letter", got["same"]), ("mean_abs_diff", got["mad"]), ("base_same_letter", base_same),
                        ("base_mean_abs_diff", base_mad), ("moved", got["moved"]), ("change_correlation", corr),
                        ("export_s", setup.export_s), ("adapter_bytes", setup.tuned.stat().st_size)):
        record_property(name, value)
    log.info("50 items: same letter %d (base %d), mean |torch - llama.cpp| %.4f (base %.4f), moved %.4f, "
             "correlation of the changes %.3f", got["same"], base_same, got["mad"], base_mad, got["moved"], corr)
    assert got["same"] >= base_same - 2
    assert got["mad"] <= 1.25 * base_mad
    assert corr > 0.75


def test_the_exported_file_is_a_checked_adapter_for_its_base(setup: Setup) -> None:
    info = check_adapter_file(setup.tuned, setup.base_path)
    assert (info.alpha, info.rank, info.tensors, info.architecture) == (16.0, 8, 30 * 7, "llama")
    assert not [p for p in setup.folder.iterdir() if p.name.startswith(".")]  # no temporary file left


def test_alpha_is_written_and_lora_b_rescaled_to_keep_peft_scale(setup: Setup) -> None:
    import gguf

    half = export_lora_gguf(setup.model, setup.base_path, setup.folder / "alpha8.gguf", alpha=8.0)
    readers = [gguf.GGUFReader(p) for p in (setup.tuned, half)]
    alphas = [float(r.fields["adapter.lora.alpha"].parts[-1][0]) for r in readers]
    assert alphas == [16.0, 8.0]
    b16, b8 = ({t.name: np.array(t.data) for t in r.tensors if t.name.endswith(".lora_b")} for r in readers)
    assert set(b16) == set(b8) and len(b16) == 210
    name = "blk.0.ffn_down.weight.lora_b"
    assert np.allclose(b8[name], 2 * b16[name]) and np.abs(b16[name]).max() > 0
    for bad in (0.0, -1.0, float("nan")):
        with pytest.raises(ConfigError, match="alpha"):
            export_lora_gguf(setup.model, setup.base_path, setup.folder / "bad.gguf", alpha=bad)
    with pytest.raises(InputError, match="peft"):
        export_lora_gguf(object(), setup.base_path, setup.folder / "bad.gguf")
    assert not (setup.folder / "bad.gguf").exists()


def test_the_row_permutation_is_what_the_gguf_loader_undoes() -> None:
    from transformers.modeling_gguf_pytorch_utils import LlamaTensorProcessor

    rng = np.random.default_rng(0)
    unpermute = LlamaTensorProcessor(config={})._reverse_permute_weights
    for rows, heads in ((576, 9), (192, 3)):
        w = rng.standard_normal((rows, 8))
        assert not np.array_equal(permute_rows(w, heads), w)
        assert np.array_equal(unpermute(permute_rows(w, heads), heads, heads), w)
    with pytest.raises(InputError, match="heads"):
        permute_rows(rng.standard_normal((10, 8)), 3)


@pytest.mark.parametrize("name, config, error, words", [
    ("dora", {"target_modules": ["q_proj"], "use_dora": True}, ConfigError, "use_dora"),
    ("biased", {"target_modules": ["q_proj"], "lora_bias": True}, ConfigError, "lora_bias"),
    ("embedding", {"target_modules": ["embed_tokens", "q_proj"]}, InputError, "embedding"),
])
def test_adapters_llama_cpp_cannot_run_are_refused(setup: Setup, name: str, config: dict[str, Any],
                                                   error: type[Exception], words: str) -> None:
    from peft import LoraConfig

    setup.model.add_adapter(name, LoraConfig(r=2, lora_alpha=4, **config))
    setup.model.set_adapter(name)
    try:
        with pytest.raises(error, match=words):
            export_lora_gguf(setup.model, setup.base_path, setup.folder / f"{name}.gguf")
    finally:
        setup.model.set_adapter("default")
        setup.model.delete_adapter(name)
    assert not (setup.folder / f"{name}.gguf").exists()
    assert setup.model.active_adapter == "default"
