"""Start and stop real ``llama_cpp.server`` processes (SmolLM2-135M, one thread) on 127.0.0.1."""
from __future__ import annotations

import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from runtime.registry import SMOLLM2, resolve

__all__ = ["LlamaServer", "free_port", "start_servers", "stop_servers"]

START_TIMEOUT_S = 120.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class LlamaServer:
    proc: subprocess.Popen[bytes]
    url: str  # http://127.0.0.1:PORT/v1
    log_path: Path

    def requests_served(self) -> int:
        """Chat completions the server logged (uvicorn's access log)."""
        text = self.log_path.read_text(errors="replace")
        return text.count('"POST /v1/chat/completions HTTP/1.1" 200')


def _launch(folder: Path, name: str, *, threads: int, n_ctx: int) -> LlamaServer:
    port = free_port()
    log_path = folder / f"{name}.log"
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(resolve(SMOLLM2)), "--host", "127.0.0.1",
           "--port", str(port), "--n_ctx", str(n_ctx), "--n_threads", str(threads),
           "--n_threads_batch", str(threads)]
    with open(log_path, "wb") as log_file:
        proc = subprocess.Popen(cmd, stdout=log_file, stderr=subprocess.STDOUT)
    return LlamaServer(proc, f"http://127.0.0.1:{port}/v1", log_path)


def _wait(server: LlamaServer, deadline: float) -> None:
    while True:
        if server.proc.poll() is not None:
            raise RuntimeError(f"llama_cpp.server exited with {server.proc.returncode}: "
                               f"{server.log_path.read_text(errors='replace')[-2000:]}")
        try:
            with urllib.request.urlopen(f"{server.url}/models", timeout=2) as resp:
                if resp.status == 200:
                    return
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"llama_cpp.server at {server.url} did not start in {START_TIMEOUT_S:g} s")
        time.sleep(0.25)


def start_servers(folder: Path, n: int, *, threads: int = 1, n_ctx: int = 2048) -> list[LlamaServer]:
    """``n`` (at most 2) servers, started together and ready; stopped again on failure."""
    if not 1 <= n <= 2:
        raise ValueError("start one or two servers")
    servers = [_launch(folder, f"server{i}", threads=threads, n_ctx=n_ctx) for i in range(n)]
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        for server in servers:
            _wait(server, deadline)
    except BaseException:
        stop_servers(servers)
        raise
    return servers


def stop_servers(servers: list[LlamaServer]) -> None:
    """Terminate (then kill) every server still running, by its own process."""
    for server in servers:
        if server.proc.poll() is None:
            server.proc.terminate()
    for server in servers:
        try:
            server.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.proc.kill()
            server.proc.wait(timeout=10)
