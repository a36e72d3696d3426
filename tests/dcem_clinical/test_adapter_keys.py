"""A model key with a LoRA adapter in the run export's model list and on the Models page's
facts: the base file, the adapter named, and the run's sha256 (both files) recognised."""
from __future__ import annotations

from pathlib import Path

import pytest

from dcem_clinical.model_files import model_file_entries
from studio.views.model_lab_view import model_facts
from runtime.adapters import combined_sha256
from runtime.llama_backend import file_sha256
from runtime.registry import resolve
from tests.runtime.adapter_files import write_adapter


@pytest.fixture()
def adapter_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Path]:
    monkeypatch.setenv("DCEM_MODELS_DIR", str(tmp_path))
    monkeypatch.setenv("DCEM_MODEL_CACHE", str(tmp_path / "cache"))
    path = write_adapter(tmp_path / "tuned.gguf", resolve("smollm2-135m"), rank=4, alpha=8.0, layers=[0, 1])
    return f"smollm2-135m+lora:file:{path}", path


def test_the_export_lists_the_base_file_and_names_the_adapter(adapter_key: tuple[str, Path]) -> None:
    key, path = adapter_key
    base = resolve("smollm2-135m")
    both = combined_sha256(file_sha256(base), file_sha256(path))
    matching, changed = (model_file_entries({key: sha})[0] for sha in (both, file_sha256(base)))
    assert matching["file"] == base.name and matching["sha256"] == file_sha256(base)
    assert "tuned.gguf" in matching["note"] and "differs" not in matching["note"]
    assert "differs from the one the run recorded" in changed["note"]  # the base's digest is not the run's


def test_the_models_page_facts_describe_the_adapter(adapter_key: tuple[str, Path]) -> None:
    key, path = adapter_key
    facts = model_facts(key)
    assert facts["file"] == resolve("smollm2-135m").name and facts["LoRA adapter"] == "tuned.gguf"
    assert facts["adapter sha256"] == file_sha256(path)
    assert facts["adapter rank and alpha"] == "r = 4, alpha = 8" and facts["adapted weights"] == "14"
