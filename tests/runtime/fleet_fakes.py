"""Threaded fake OpenAI-compatible servers on 127.0.0.1 for the fleet tests.

Each :class:`FakeFleetServer` answers ``POST /v1/chat/completions`` with a valid chat
completion (content and top logprobs), after ``delay_s``, unless :attr:`FakeFleetServer.fail`
holds statuses to return first (popped one per request).  It counts requests and the
most requests it had in flight at once (a request leaves just before its body is sent,
so a client's next request never overlaps its last one).  :func:`closed_url` is a URL
where nothing listens.
"""
from __future__ import annotations

import contextlib
import http.server
import json
import socket
import threading
import time
from typing import Iterator

__all__ = ["FakeFleetServer", "fake_fleet", "closed_url", "completion"]


def completion(text: str = "ok") -> bytes:
    return json.dumps({"choices": [{"message": {"role": "assistant", "content": text},
                                    "logprobs": {"content": [{"token": "A", "logprob": -0.1, "top_logprobs": [
                                        {"token": "A", "logprob": -0.1}, {"token": " B", "logprob": -2.5}]}]}}],
                       "usage": {"prompt_tokens": 5, "completion_tokens": 1}}).encode()


class FakeFleetServer:
    """State shared with the handler threads."""

    def __init__(self, name: str, delay_s: float = 0.0) -> None:
        self.name, self.delay_s = name, delay_s
        self.fail: list[int] = []  # statuses returned before the next good replies
        self.requests = 0
        self.seen: list[str] = []  # the last message of each request
        self.in_flight = 0
        self.max_in_flight = 0
        self.lock = threading.Lock()
        self.url = ""

    def enter(self, body: bytes) -> int | None:
        with self.lock:
            self.seen.append(json.loads(body)["messages"][-1]["content"])
            self.requests += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            return self.fail.pop(0) if self.fail else None

    def leave(self) -> None:
        with self.lock:
            self.in_flight -= 1


def _handler(state: FakeFleetServer) -> type[http.server.BaseHTTPRequestHandler]:
    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server naming
            status = state.enter(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            left = False
            try:
                time.sleep(state.delay_s)
                body = completion(state.name) if status is None else b'{"error": {"message": "boom"}}'
                self.send_response(status or 200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                state.leave()  # before the body: the client cannot send its next request
                left = True    # before this one ends, so max_in_flight counts no overlap
                self.wfile.write(body)
            finally:
                if not left:
                    state.leave()

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - silence
            pass

    return Handler


@contextlib.contextmanager
def fake_fleet(*names: str, delay_s: float = 0.0) -> Iterator[list[FakeFleetServer]]:
    """Running threaded fake servers, one per name (stopped on exit)."""
    servers, states = [], []
    for name in names:
        state = FakeFleetServer(name, delay_s)
        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
        httpd.daemon_threads = True
        threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        state.url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
        servers.append(httpd)
        states.append(state)
    try:
        yield states
    finally:
        for httpd in servers:
            httpd.shutdown()
            httpd.server_close()


def closed_url() -> str:
    """A 127.0.0.1 URL whose port was free a moment ago (connection refused)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"
