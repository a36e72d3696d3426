"""An ``hf:`` key that cannot resolve fails at once with one message: offline
(``HF_HUB_OFFLINE=1``) against an empty local cache without a connection, and online when
the Hub cannot be reached after one connection attempt, without the Hub client's retried
requests (about 23 s of waiting before).  Connections are counted, not timed."""
from __future__ import annotations

import logging
import socket
from pathlib import Path

import pytest

from runtime.backends import BackendError
from runtime.registry import resolve

KEY = "hf:someone/absent-repo:model.gguf"


@pytest.fixture()
def empty_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    hub = tmp_path / "hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    monkeypatch.setenv("DCEM_MODEL_CACHE", str(tmp_path / "models"))
    return hub


@pytest.fixture()
def lookups(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[object]:
    """The host names the test looked up: every connection attempt starts with one.  The
    Hub client's once-per-process state is reset as in a fresh process (in CI the first
    lookup of a process asked huggingface.co for its list of agent harnesses), with no
    cached copy of that list."""
    import huggingface_hub.constants
    from huggingface_hub.utils import _detect_agent

    monkeypatch.setattr(_detect_agent, "_registry", None)
    monkeypatch.setattr(huggingface_hub.constants, "AGENT_HARNESSES_PATH", str(tmp_path / "harnesses.json"))
    tried: list[object] = []
    real = socket.getaddrinfo

    def getaddrinfo(host: object, *args: object, **kwargs: object) -> object:
        tried.append(host)
        return real(host, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return tried


def test_offline_with_an_empty_cache_fails_without_a_connection(empty_cache: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 lookups: list[object]) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(BackendError, match=r"not in the local Hub cache .*HF_HUB_OFFLINE is set"):
        resolve(KEY)
    assert lookups == []


def test_an_unreachable_hub_fails_at_once_without_retries(empty_cache: Path, monkeypatch: pytest.MonkeyPatch,
                                                           caplog: pytest.LogCaptureFixture,
                                                           lookups: list[object]) -> None:
    import huggingface_hub.constants

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(huggingface_hub.constants, "ENDPOINT", "http://127.0.0.1:9")  # nothing listens there
    monkeypatch.setattr(huggingface_hub.constants, "HUGGINGFACE_CO_URL_TEMPLATE",  # built from ENDPOINT at import
                        "http://127.0.0.1:9/{repo_id}/resolve/{revision}/{filename}")
    with caplog.at_level(logging.WARNING), pytest.raises(BackendError) as info:
        resolve(KEY)
    assert lookups == ["127.0.0.1"]  # one attempt to reach the (local, silent) Hub, not a retried one
    message = str(info.value)
    assert message.startswith(f"{KEY}: model.gguf is not in the local Hub cache") and "cannot be reached" in message
    assert "HF_HUB_OFFLINE=1" in message and not any("Retry" in r.getMessage() for r in caplog.records)
    assert not empty_cache.exists() or not any(empty_cache.rglob("*.gguf"))
