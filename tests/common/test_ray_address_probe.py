"""A Ray address where something accepts TCP but is not Ray (a web server, a silent
listener) is refused with one line before Ray is imported (issue 51, item 10's leftover:
Ray itself retried such an address for minutes).  A gRPC server, as Ray's GCS is, answers
HTTP/2's preface with a SETTINGS frame and passes; checked here against a scripted one
(and by hand against `ray start --head`)."""
from __future__ import annotations

import socket
import threading
from typing import Callable, Iterator

import pytest

from common.errors import ConfigError
from common.ray_work import _answers


def _serve(reply: Callable[[socket.socket], None]) -> Iterator[str]:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    done = threading.Event()

    def loop() -> None:
        conn, _ = listener.accept()
        try:
            conn.recv(64)
            reply(conn)
            done.wait(10)
        finally:
            conn.close()

    threading.Thread(target=loop, daemon=True).start()
    yield f"127.0.0.1:{listener.getsockname()[1]}"
    done.set()
    listener.close()


def _settings(conn: socket.socket) -> None:
    conn.sendall(bytes([0, 0, 0, 4, 0, 0, 0, 0, 0]))  # an empty HTTP/2 SETTINGS frame


def _http1(conn: socket.socket) -> None:
    conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")


def _silent(conn: socket.socket) -> None:
    pass


def test_a_peer_that_answers_http2_settings_passes() -> None:
    for address in _serve(_settings):
        _answers(address, 5.0)


@pytest.mark.parametrize("reply", [_http1, _silent], ids=["web server", "silent listener"])
def test_a_peer_that_is_not_ray_is_refused_in_one_line(reply: Callable[[socket.socket], None]) -> None:
    for address in _serve(reply):
        with pytest.raises(ConfigError) as caught:
            _answers(address, 1.0)
        text = str(caught.value)
        assert text.count("\n") == 0 and f"something answers at {address}, but not as a Ray cluster does" in text
