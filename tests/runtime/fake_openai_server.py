"""A scripted fake OpenAI-compatible server for tests of the HTTP backend.

:class:`FakeServer` is a real ``http.server`` on 127.0.0.1 (ephemeral port, one thread)
answering every POST with whatever :attr:`FakeServer.reply` holds: ``(status, body)``.
:func:`in_process` replaces ``urllib.request.urlopen`` for a block so the backend sees the
same replies without a socket (the large fuzz budget), including HTTP error statuses.
"""
from __future__ import annotations

import contextlib
import email.message
import http.server
import io
import threading
import urllib.error
import urllib.request
from typing import Any, Callable, Iterator

__all__ = ["FakeServer", "fake_server", "in_process", "reply_bytes"]


def reply_bytes(body: Any) -> bytes:
    return body if isinstance(body, bytes) else body.encode("utf-8")


class FakeServer:
    """State shared with the handler: the reply (or a function returning the next one)
    and the number of requests."""

    def __init__(self) -> None:
        self.reply: tuple[int, bytes] | Callable[[], tuple[int, bytes]] = (200, b"{}")
        self.requests = 0
        self.url = ""


def _handler(state: FakeServer) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server naming
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            state.requests += 1
            reply = state.reply
            status, body = reply() if callable(reply) else reply
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST  # noqa: N815

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - silence
            pass

    return Handler


@contextlib.contextmanager
def fake_server() -> Iterator[FakeServer]:
    """A running fake server (stopped on exit); set ``.reply`` before each call."""
    state = FakeServer()
    httpd = http.server.HTTPServer(("127.0.0.1", 0), _handler(state))
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


class _Response:
    def __init__(self, status: int, body: bytes) -> None:
        self.status, self._body = status, body

    def read(self) -> bytes:
        return self._body

    def __enter__(self) -> "_Response":
        return self

    def __exit__(self, *exc: object) -> None:
        pass


@contextlib.contextmanager
def in_process(reply: Callable[[], tuple[int, bytes]]) -> Iterator[None]:
    """``urllib.request.urlopen`` answers with ``reply()`` for the block (no socket).

    A status outside 200-299 raises :class:`urllib.error.HTTPError` carrying the body, as
    urllib's default handlers do; anything else is returned as the response.
    """
    real = urllib.request.urlopen

    def urlopen(req: urllib.request.Request, timeout: float | None = None) -> _Response:
        status, body = reply()
        if not 200 <= status < 300:
            raise urllib.error.HTTPError(req.full_url, status, "Error", email.message.Message(), io.BytesIO(body))
        return _Response(status, body)

    urllib.request.urlopen = urlopen  # type: ignore[assignment]
    try:
        yield
    finally:
        urllib.request.urlopen = real  # type: ignore[assignment]
