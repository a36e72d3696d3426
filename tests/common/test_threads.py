"""The default thread count: every core, or ``$DCEM_THREADS``, refused when it is no count."""
from __future__ import annotations

import os

import pytest

from common.errors import ConfigError
from common.threads import THREADS_ENV, default_threads


def test_every_core_when_unset(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(THREADS_ENV, raising=False)
    assert default_threads() == (os.cpu_count() or 1)
    monkeypatch.setenv(THREADS_ENV, "  ")
    assert default_threads() == (os.cpu_count() or 1)


@pytest.mark.parametrize("raw, expected", [("1", 1), (" 3 ", 3), ("1024", 1024)])
def test_the_variable_sets_the_default(monkeypatch: pytest.MonkeyPatch, raw: str, expected: int) -> None:
    monkeypatch.setenv(THREADS_ENV, raw)
    assert default_threads() == expected


@pytest.mark.parametrize("raw", ["0", "-2", "1025", "2.5", "all", "1e3"])
def test_anything_else_is_refused_by_name(monkeypatch: pytest.MonkeyPatch, raw: str) -> None:
    monkeypatch.setenv(THREADS_ENV, raw)
    with pytest.raises(ConfigError, match=f"^DCEM_THREADS: must be a whole number from 1 to 1024, got '{raw}'$"):
        default_threads()


def test_torch_takes_it_too(monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch")
    from training.base_model import set_threads

    before = torch.get_num_threads()
    monkeypatch.setenv(THREADS_ENV, "1")
    try:
        assert set_threads(None) == 1 and torch.get_num_threads() == 1
        assert set_threads(2) == 2 and torch.get_num_threads() == 2  # an explicit count wins
    finally:
        torch.set_num_threads(before)
