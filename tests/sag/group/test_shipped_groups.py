"""The shipped group files (data/groups/): each loads, and each adapter it names is a
shipped adapter that resolves against its base model."""
from __future__ import annotations

from pathlib import Path

import pytest

from runtime.registry import resolve_adapter
from sag.group.config import load_group_file

ROOT = Path(__file__).resolve().parents[3]
FILES = sorted((ROOT / "data" / "groups").glob("*.json"))


def test_there_are_shipped_group_files_and_the_readme_names_each() -> None:
    readme = (ROOT / "data" / "groups" / "README.md").read_text(encoding="utf-8")
    assert FILES and all(f"`{f.name}`" in readme for f in FILES)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_a_shipped_group_file_loads_and_its_adapters_resolve(path: Path) -> None:
    cfg = load_group_file(str(path))
    assert cfg.name == path.stem
    trained = [m for m in cfg.models() if "+lora:" in m]
    # a group file ships for its trained adapters, or as the untrained starting point of
    # `python -m sag train-views` (a group whose members read views)
    assert trained or cfg.views, "a shipped group file is trained or a view group to train"
    for key in trained:
        adapter = resolve_adapter(key)
        assert adapter is not None and adapter.path.is_file()
