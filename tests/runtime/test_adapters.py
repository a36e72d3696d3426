"""LoRA adapter keys and files: the key spelling, where adapter files may live, and the
header checks that refuse files that are not adapters for the base (no weights loaded)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import runtime.adapters
import runtime.registry
from runtime.adapters import check_adapter_file, combined_sha256, split_adapter_key
from runtime.backends import BackendError
from runtime.llama_backend import file_sha256
from runtime.registry import available_models, model_spec, resolve, resolve_adapter, resolve_model
from tests.runtime.adapter_files import write_adapter

SMOL = "smollm2-135m"


@pytest.fixture(autouse=True)
def folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A models folder for ``file:`` adapters, a shipped-adapters folder and a model cache,
    all temporary."""
    models = tmp_path / "models"
    models.mkdir()
    monkeypatch.setenv("DCEM_MODELS_DIR", str(models))
    monkeypatch.setenv("DCEM_MODEL_CACHE", str(tmp_path / "cache"))
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    monkeypatch.setattr(runtime.adapters, "shipped_adapters_dir", lambda: shipped)
    monkeypatch.setattr(runtime.registry, "shipped_adapters_dir", lambda: shipped)
    return tmp_path


@pytest.fixture(scope="module")
def smol() -> Path:
    return resolve(SMOL)


def _refused(key: str) -> str:
    with pytest.raises(BackendError) as err:
        resolve(key)
    message = str(err.value)
    assert "\n" not in message and message.strip() == message
    return message


def test_key_spelling() -> None:
    assert split_adapter_key(SMOL) is None
    parts = split_adapter_key(" smollm2-135m+lora:ddxplus8-grpo ")
    assert parts is not None and (parts.base, parts.adapter, parts.is_file) == (SMOL, "ddxplus8-grpo", False)
    parts = split_adapter_key("smollm2-135m+lora:file:/x/a.gguf")
    assert parts is not None and parts.is_file and parts.adapter == "file:/x/a.gguf"
    for bad, words in [("+lora:x", "base model"), ("smollm2-135m+lora:", "name the adapter"),
                       ("smollm2-135m+lora:a+lora:b", "one adapter"), ("smollm2-135m+lora:../x", "letters")]:
        with pytest.raises(BackendError, match=words):
            split_adapter_key(bad)


def test_a_file_adapter_resolves_to_its_base_and_is_described(folders: Path, smol: Path) -> None:
    path = write_adapter(folders / "models" / "tuned.gguf", smol, rank=4, alpha=8.0)
    key = f"{SMOL}+lora:file:{path}"
    base, info = resolve_model(key)
    assert base == smol == resolve(key)
    assert info is not None and info == resolve_adapter(key)
    assert (info.name, info.path, info.alpha, info.rank, info.architecture) == ("tuned", path, 8.0, 4, "llama")
    assert info.tensors == 30 * 7 and info.sha256 == file_sha256(path)
    assert resolve_adapter(SMOL) is None
    spec = model_spec(key)
    assert spec.key == key and spec.source == "packaged+lora" and "tuned.gguf" in spec.name and spec.installed
    assert combined_sha256("a" * 64, "b" * 64) != combined_sha256("a" * 64, "c" * 64)


def test_shipped_adapters_are_listed_and_resolved_by_name(folders: Path, smol: Path) -> None:
    assert not any("+lora:" in s.key for s in available_models())  # none shipped
    write_adapter(folders / "shipped" / "ddxplus8-grpo.gguf", smol)
    keys = [s.key for s in available_models()]
    assert f"{SMOL}+lora:ddxplus8-grpo" in keys and "gemma3-270m+lora:ddxplus8-grpo" not in keys
    info = resolve_adapter(f"{SMOL}+lora:ddxplus8-grpo")
    assert info is not None and info.path == folders / "shipped" / "ddxplus8-grpo.gguf"
    message = _refused(f"{SMOL}+lora:nope")
    assert "unknown adapter 'nope'" in message and "ddxplus8-grpo" in message


def test_an_adapter_outside_the_allowed_folders_is_refused_without_reading_it(folders: Path, smol: Path) -> None:
    outside = write_adapter(folders / "elsewhere.gguf", smol)
    for path in (outside, folders / "missing.gguf"):  # the same words whether or not it exists
        message = _refused(f"{SMOL}+lora:file:{path}")
        assert "adapter files may only be named inside" in message
    link = folders / "models" / "link.gguf"
    link.symlink_to(outside)  # resolved before the check
    assert "may only be named inside" in _refused(f"{SMOL}+lora:file:{link}")


def test_bad_adapter_files_are_refused_with_one_line(folders: Path, smol: Path) -> None:
    models = folders / "models"
    good = write_adapter(models / "good.gguf", smol)
    (models / "notes.gguf").write_text("not a model at all\n")
    truncated = models / "truncated.gguf"
    truncated.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    plain = models / "plain.gguf"
    shutil.copy(smol, plain)
    write_adapter(models / "gemma.gguf", smol, arch="gemma3")
    write_adapter(models / "shape.gguf", smol, wrong_rows=True, layers=[0])
    write_adapter(models / "other-kind.gguf", smol, adapter_type="control_vector", layers=[0])
    cases = {"missing.gguf": "no such file", "notes.gguf": "not a GGUF", "truncated.gguf": "truncated",
             "plain.gguf": "is a model, not a LoRA adapter", "gemma.gguf": "made for a 'gemma3' model",
             "shape.gguf": "do not fit the base", "other-kind.gguf": "not a LoRA adapter"}
    for name, words in cases.items():
        message = _refused(f"{SMOL}+lora:file:{models / name}")
        assert words in message and name in message, (name, message)


def test_an_adapter_for_a_bigger_model_of_the_same_architecture_is_refused(folders: Path, smol: Path) -> None:
    """A tensor the base does not have (layer 30 of a 30-layer model)."""
    import gguf
    import numpy as np

    path = folders / "models" / "deeper.gguf"
    writer = gguf.GGUFWriter(path, "llama")
    writer.add_type("adapter")
    writer.add_string("adapter.type", "lora")
    writer.add_tensor("blk.30.attn_q.weight.lora_a", np.zeros((4, 576), dtype=np.float32))
    writer.add_tensor("blk.30.attn_q.weight.lora_b", np.zeros((576, 4), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    assert "blk.30.attn_q.weight, which the base" in _refused(f"{SMOL}+lora:file:{path}")
    with pytest.raises(BackendError, match="no such file"):
        check_adapter_file(folders / "models" / "gone.gguf", smol)


def test_training_outputs_may_hold_adapters(folders: Path, smol: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``runs/`` of the project (``runs/train/<run>/adapter.gguf``), named relative to the
    current folder as ``file:`` model keys are."""
    from common.db import PROJECT_ROOT

    assert runtime.adapters.training_adapters_dir() == PROJECT_ROOT / "runs"
    runs = folders / "project-runs"
    monkeypatch.setattr(runtime.adapters, "training_adapters_dir", lambda: runs)
    (runs / "train" / "r1").mkdir(parents=True)
    path = write_adapter(runs / "train" / "r1" / "adapter.gguf", smol, layers=[0])
    (folders / "work").mkdir()
    (folders / "work" / "runs").symlink_to(runs)
    monkeypatch.chdir(folders / "work")
    info = resolve_adapter(f"{SMOL}+lora:file:runs/train/r1/adapter.gguf")
    assert info is not None and info.path == path and info.tensors == 7
