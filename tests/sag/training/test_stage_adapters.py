"""A view-group stage finds each member's adapter: a file path, or a shipped adapter's name."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from common.errors import ConfigError
from runtime.adapters import shipped_adapters_dir
from sag.group.config import load_group_file
from sag.training.view_stages import adapter_of

ROOT = Path(__file__).resolve().parents[3]
GROUP = ROOT / "data" / "groups" / "ddx-views.json"


def _with(models: dict[str, str]):  # type: ignore[no-untyped-def]
    return replace(load_group_file(GROUP), agent_models=tuple(sorted(models.items())))


def test_a_file_key_and_a_shipped_name_give_the_adapter_file(tmp_path: Path) -> None:
    own = tmp_path / "a.gguf"
    cfg = _with({"R1": f"smollm2-135m+lora:file:{own}", "R2": "smollm2-135m+lora:ddx-views-r2"})
    assert adapter_of(cfg, "R1") == own
    assert adapter_of(cfg, "R2") == shipped_adapters_dir() / "ddx-views-r2.gguf"
    assert adapter_of(cfg, "R2").is_file()


def test_an_unknown_shipped_name_or_a_plain_base_is_refused_with_the_agent_named() -> None:
    cfg = _with({"R1": "smollm2-135m+lora:no-such-adapter", "R2": "smollm2-135m"})
    with pytest.raises(ConfigError, match="R1's adapter 'no-such-adapter' is not in data/adapters/"):
        adapter_of(cfg, "R1")
    with pytest.raises(ConfigError, match="agent R2 has no adapter file"):
        adapter_of(cfg, "R2")
