"""A LoRA adapter in the in-process backend and the batched runner, on the packaged SmolLM2:
its own identity (call cache key), its own numbers, and no KV state shared with the base."""
from __future__ import annotations

from pathlib import Path

import pytest

from runtime.adapters import combined_sha256
from runtime.call_log import cache_key
from runtime.factory import make_backend
from runtime.llama_backend import LlamaCppBackend, file_sha256
from runtime.llama_batch import BatchedLlamaTurns
from runtime.messages import Message, Role
from runtime.registry import resolve
from runtime.turns import TurnRequest
from tests.runtime.adapter_files import write_adapter

SMOL = "smollm2-135m"
OPTIONS = ("A", "B", "C", "D")
CASE = ("A 47-year-old woman reports sudden sharp chest pain that worsens when she breathes in, shortness of "
        "breath, a swollen left calf and a long flight last week. D-dimer is raised; troponin is normal.\n"
        "A. Pulmonary embolism\nB. NSTEMI\nC. Pneumonia\nD. GERD\n")


def _messages(question: str) -> tuple[Message, ...]:
    return (Message(Role.SYSTEM, "You are one agent of a clinical panel. Answer with one letter."),
            Message(Role.USER, CASE + question))


QUESTIONS = ("Which diagnosis is most likely? Letter:", "Which diagnosis is most dangerous to miss? Letter:")


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Model keys: the base, a random adapter and an adapter whose lora_b is zero."""
    folder = tmp_path_factory.mktemp("models")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DCEM_MODELS_DIR", str(folder))
        base = resolve(SMOL)
        write_adapter(folder / "tuned.gguf", base, rank=8, seed=1)
        write_adapter(folder / "zero.gguf", base, rank=8, zero_b=True)
    return {"base": SMOL, "tuned": f"{SMOL}+lora:file:{folder / 'tuned.gguf'}",
            "zero": f"{SMOL}+lora:file:{folder / 'zero.gguf'}"}


@pytest.fixture(scope="module")
def backends(keys: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> dict[str, LlamaCppBackend]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DCEM_MODELS_DIR", str(Path(keys["tuned"].split("file:", 1)[1]).parent))
        mp.setenv("DCEM_MODEL_CACHE", str(tmp_path_factory.mktemp("cache")))
        built = {name: make_backend(key, n_ctx=1024, n_threads=1) for name, key in keys.items()}
    assert all(isinstance(b, LlamaCppBackend) for b in built.values())
    return built  # type: ignore[return-value]


def test_an_adapter_has_its_own_identity_and_cache_key(backends: dict[str, LlamaCppBackend]) -> None:
    base, tuned, zero = backends["base"], backends["tuned"], backends["zero"]
    base_sha = file_sha256(base.path)
    assert base.model_sha256 == base_sha and tuned.path == base.path
    assert tuned.adapter is not None
    assert tuned.model_sha256 == combined_sha256(base_sha, file_sha256(tuned.adapter.path))
    assert len({base.model_sha256, tuned.model_sha256, zero.model_sha256}) == 3
    assert tuned.model_id == f"{base.path.name}+lora:tuned.gguf" and base.model_id == base.path.name
    fields = {"backend": base.name, "mode": "score", "options": OPTIONS}
    messages = _messages(QUESTIONS[0])
    assert cache_key({**fields, "model_sha256": base.model_sha256}, messages) != \
        cache_key({**fields, "model_sha256": tuned.model_sha256}, messages)


def test_a_zero_adapter_gives_the_base_and_a_trained_one_changes_the_scores(
        backends: dict[str, LlamaCppBackend]) -> None:
    for question in QUESTIONS:
        messages = _messages(question)
        base = backends["base"].score_options(messages, OPTIONS).logprobs
        assert backends["zero"].score_options(messages, OPTIONS).logprobs == pytest.approx(base, abs=1e-5)
        tuned = backends["tuned"].score_options(messages, OPTIONS).logprobs
        assert max(abs(a - b) for a, b in zip(tuned, base)) > 0.05


def test_no_kv_state_crosses_between_the_base_and_the_adapter(backends: dict[str, LlamaCppBackend]) -> None:
    """Interleaved calls on the same prompts: each model keeps its own cold numbers, and the
    batched runner's own context carries the adapter too."""
    base, tuned = backends["base"], backends["tuned"]
    for b in (base, tuned):
        b.forget()
    cold = {name: [b.score_options(_messages(q), OPTIONS).logprobs for q in QUESTIONS]
            for name, b in (("base", base), ("tuned", tuned))}
    for q_index, question in enumerate(QUESTIONS):  # warm caches, alternating models
        assert base.score_options(_messages(question), OPTIONS).logprobs == cold["base"][q_index]
        assert tuned.score_options(_messages(question), OPTIONS).logprobs == cold["tuned"][q_index]
        assert tuned.last_reused > 0  # from its own cache
    requests = [TurnRequest(_messages(q), OPTIONS, max_tokens=4) for q in QUESTIONS]
    for name, backend in (("tuned", tuned), ("base", base), ("tuned", tuned)):
        with BatchedLlamaTurns(backend, n_ctx=512, n_seq_max=3) as runner:
            assert runner.model_sha256 == backend.model_sha256
            results = runner.run(requests)
        assert [r.logprobs for r in results] == cold[name]
    with BatchedLlamaTurns(tuned, n_ctx=512, n_seq_max=3, share_prefix=False) as alone:
        assert [r.text for r in results] == [r.text for r in alone.run(requests)]  # the rationales too
    assert cold["tuned"] != cold["base"]


def test_the_batched_runner_gives_an_adapter_the_numbers_of_one_request_alone(
        backends: dict[str, LlamaCppBackend]) -> None:
    """Requests of different lengths batched together: the adapter's numbers do not
    depend on the other sequences of a batch (each is decoded on its own)."""
    tuned = backends["tuned"]
    questions = QUESTIONS + ("Which test would you order first? Letter:", "Which is least likely? Letter:")
    expected = [tuned.score_options(_messages(q), OPTIONS).logprobs for q in questions]
    requests = [TurnRequest(_messages(q), OPTIONS, max_tokens=4) for q in questions]
    with BatchedLlamaTurns(tuned, n_ctx=512, n_seq_max=5) as runner:
        assert [r.logprobs for r in runner.run(requests)] == expected


def test_each_key_of_a_group_gets_its_own_model(keys: dict[str, str], backends: dict[str, LlamaCppBackend],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The group runners load one model per key, so an adapter's agents and the base's agents
    never share weights or a KV cache."""
    from sag.debate.runners import build_runners

    monkeypatch.setenv("DCEM_MODELS_DIR", str(Path(keys["tuned"].split("file:", 1)[1]).parent))
    runners = build_runners([keys["base"], keys["tuned"], keys["base"]], n_ctx=512, n_threads=1, width=2)
    assert list(runners) == [keys["base"], keys["tuned"]]
    base_runner, tuned_runner = runners[keys["base"]], runners[keys["tuned"]]
    assert isinstance(base_runner, BatchedLlamaTurns) and isinstance(tuned_runner, BatchedLlamaTurns)
    assert base_runner.backend is not tuned_runner.backend
    assert (base_runner.model_sha256, tuned_runner.model_sha256) == \
        (backends["base"].model_sha256, backends["tuned"].model_sha256)
    requests = [TurnRequest(_messages(QUESTIONS[0]), OPTIONS, max_tokens=1)]
    expected = {name: backends[name].score_options(_messages(QUESTIONS[0]), OPTIONS).logprobs
                for name in ("base", "tuned")}
    assert tuned_runner.run(requests)[0].logprobs == expected["tuned"]
    assert base_runner.run(requests)[0].logprobs == expected["base"]
    for runner in runners.values():
        runner.close()  # type: ignore[attr-defined]
