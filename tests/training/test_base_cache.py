"""The dequantized-base cache: a base read from it is the one transformers dequantized, bit for
bit; it is read instead of the GGUF file; a broken entry is rebuilt; a cache that cannot be
written costs only the time.  A tiny random Llama stands in for the slow GGUF reader, except
in the one test that checks the real SmolLM2 base."""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from training.base_cache import TORCH_CACHE_ENV, WEIGHTS, entry_name, load_cached, torch_cache_dir  # noqa: E402


def _tiny() -> Any:
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, tie_word_embeddings=True)
    return LlamaForCausalLM(config).eval()


class Loader:
    """A stand-in for transformers' GGUF reader that counts its calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, path: Path) -> Any:
        self.calls += 1
        return _tiny()


def _same(a: Any, b: Any) -> bool:
    sa, sb = a.state_dict(), b.state_dict()
    return list(sa) == list(sb) and all(torch.equal(sa[k], sb[k]) for k in sa)


@pytest.fixture()
def gguf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(TORCH_CACHE_ENV, str(tmp_path / "bases"))
    monkeypatch.setenv("DCEM_MODEL_CACHE", str(tmp_path / "models"))
    path = tmp_path / "base.gguf"
    path.write_bytes(b"GGUF stand-in")
    return path


def test_the_second_load_reads_the_cache_and_gives_the_same_model(gguf: Path) -> None:
    loader = Loader()
    first = load_cached(gguf, loader)
    state = torch.random.get_rng_state()
    second = load_cached(gguf, loader)
    assert loader.calls == 1
    assert torch.equal(torch.random.get_rng_state(), state)  # a seeded run's LoRA start does not move
    assert _same(first, second)
    assert second.lm_head.weight.data_ptr() == second.model.embed_tokens.weight.data_ptr()  # still tied
    ids = torch.tensor([[1, 5, 9, 3]])
    with torch.no_grad():
        assert torch.equal(first(ids).logits, second.eval()(ids).logits)


def test_another_file_is_another_entry(gguf: Path) -> None:
    loader = Loader()
    load_cached(gguf, loader)
    other = gguf.with_name("other.gguf")
    other.write_bytes(b"another GGUF stand-in")
    load_cached(other, loader)
    assert loader.calls == 2
    cache = torch_cache_dir()
    assert cache is not None and len([p for p in cache.iterdir() if (p / WEIGHTS).is_file()]) == 2
    assert entry_name("0" * 64) != entry_name("1" * 64)


def test_a_broken_entry_is_removed_and_rebuilt(gguf: Path, caplog: pytest.LogCaptureFixture) -> None:
    loader = Loader()
    first = load_cached(gguf, loader)
    cache = torch_cache_dir()
    assert cache is not None
    (weights,) = cache.glob(f"*/{WEIGHTS}")
    weights.write_bytes(weights.read_bytes()[:100])  # a copy cut short
    with caplog.at_level(logging.WARNING):
        again = load_cached(gguf, loader)
    assert loader.calls == 2 and "removing the unreadable dequantized base" in caplog.text
    assert _same(first, again)
    assert _same(first, load_cached(gguf, loader)) and loader.calls == 2  # rebuilt, read again


def test_a_cache_that_cannot_be_made_only_costs_time(gguf: Path, monkeypatch: pytest.MonkeyPatch,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    blocker = gguf.with_name("a-file")
    blocker.write_text("not a folder")
    monkeypatch.setenv(TORCH_CACHE_ENV, str(blocker / "bases"))
    loader = Loader()
    with caplog.at_level(logging.WARNING):
        load_cached(gguf, loader)
        load_cached(gguf, loader)
    assert loader.calls == 2 and "dequantized bases are not cached" in caplog.text


def test_the_cached_smollm2_base_is_the_dequantized_gguf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from runtime.registry import resolve
    from training.base_model import _from_gguf, load_base

    monkeypatch.setenv(TORCH_CACHE_ENV, str(tmp_path / "bases"))
    path = resolve("smollm2-135m")
    direct = _from_gguf(path).eval()
    calls = {"n": 0}

    def counted(p: Path) -> Any:
        calls["n"] += 1
        return direct

    assert load_cached(path, counted) is direct and calls["n"] == 1
    cached = load_base(path)  # read from the entry just written
    assert calls["n"] == 1 and _same(direct, cached)
    assert not cached.training and not any(p.requires_grad for p in cached.parameters())
    ids = torch.tensor([[1, 504, 3458, 282, 216, 1345, 30]])
    with torch.no_grad():
        assert torch.equal(direct(ids).logits, cached(ids).logits)
