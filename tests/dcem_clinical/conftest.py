"""Shared fixtures of the clinical tests."""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from dcem.store.database import Store


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[Store]:
    """A fresh store at ``tmp_path / "calls.duckdb"`` (its call log is created on first use)."""
    s = Store(tmp_path / "calls.duckdb")
    yield s
    s.close()
