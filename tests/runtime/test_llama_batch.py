"""Batched turns on the packaged SmolLM2-135M: a shared prefix gives the same numbers.

Measured on CPU (2 threads): batched results equal the one-by-one reference
(``share_prefix=False``) and ``LlamaCppBackend.score_options`` exactly (largest
log-probability difference 0.0), with identical rationales, greedy and seeded sampling.
The tests therefore compare with ``==``.
"""
from __future__ import annotations

import math

import pytest

from common.errors import ConfigError
from runtime.backends import BackendError
from runtime.llama_backend import BLOCK, LlamaCppBackend
from runtime.llama_batch import BatchedLlamaTurns, block_spans, common_prefix
from runtime.messages import Message, Role
from runtime.registry import resolve
from runtime.turns import SequentialTurns, TurnRequest, TurnResult

OPTIONS = ("A", "B", "C", "D")
CASE = ("Question: a 47-year-old woman reports sudden sharp chest pain that worsens when she breathes in, "
        "shortness of breath, a swollen left calf and a long flight last week.\nA. Pulmonary embolism\n"
        "B. NSTEMI\nC. Pneumonia\nD. GERD\nEvidence: D-dimer is raised; the ECG shows sinus tachycardia; "
        "troponin is normal; the chest X-ray is clear.\nTranscript:\n")
ROLES = (("Cost-minded physician: weigh the cost of every test you would order, the harm of a missed "
         "diagnosis, the radiation of a CT scan, the waiting time of the patient, the load on the ward "
         "and on the radiology department, and the chance that a cheaper test settles the question."),
         ("Safety officer: consider what happens if the group is wrong, which diagnosis is most dangerous "
         "to miss, which treatment is most dangerous to give by mistake, and whether anticoagulation "
         "could harm a patient with a bleed; state the risk you accept."),
         "Sceptic: doubt the most obvious answer.",
         "Advocate: defend the most likely answer.",
         "Junior doctor: say what you would ask the senior.")


def _messages(transcript: str, role: str) -> tuple[Message, ...]:
    return (Message(Role.SYSTEM, "You are one agent of a clinical panel. Answer with one letter, then why."),
            Message(Role.USER, CASE + transcript),
            Message(Role.USER, f"Your role. {role} Letter and one short reason:"))


def _requests(transcript: str, n: int = 5, max_tokens: int = 10) -> list[TurnRequest]:
    return [TurnRequest(_messages(transcript, ROLES[k % len(ROLES)]), OPTIONS, max_tokens=max_tokens,
                        temperature=0.8 if k == 3 else 0.0, top_p=0.9, seed=100 + k) for k in range(n)]


def _same(a: list[TurnResult], b: list[TurnResult]) -> None:
    assert [r.error for r in a] == [None] * len(a) and [r.error for r in b] == [None] * len(b)
    assert [r.logprobs for r in a] == [r.logprobs for r in b]
    assert [r.text for r in a] == [r.text for r in b]
    assert [r.completion_tokens for r in a] == [r.completion_tokens for r in b]
    assert [r.prompt_tokens for r in a] == [r.prompt_tokens for r in b]


ROUND1 = "Agent 1: A, the calf swelling and the flight point to a clot.\n"
ROUND2 = ROUND1 + ("Agent 2: A, but the D-dimer alone is not specific.\nAgent 3: B is unlikely with a normal "
                   "troponin.\nAgent 4: A; a CT pulmonary angiogram would settle it.\n")


@pytest.fixture(scope="module")
def backend() -> LlamaCppBackend:
    return LlamaCppBackend(resolve("smollm2-135m"), n_ctx=1024, n_threads=1)


def test_batched_turns_equal_one_by_one_turns_and_score_options(backend: LlamaCppBackend) -> None:
    requests = _requests(ROUND1)
    with BatchedLlamaTurns(backend, n_ctx=1024, n_seq_max=4, n_threads=1) as batched, \
            BatchedLlamaTurns(backend, n_ctx=1024, n_seq_max=4, n_threads=1, share_prefix=False) as alone:
        assert batched.model_sha256 == backend.model_sha256 and batched.name == "llama.cpp/batched"
        shared = batched.run(requests)  # 5 requests, 3 sequences: two chunks
        reference = alone.run(requests)
    _same(shared, reference)
    assert all(r.reused_tokens >= 2 * BLOCK and r.reused_tokens % BLOCK == 0 for r in shared)
    assert all(r.reused_tokens == 0 for r in reference)
    assert min(r.prompt_tokens - r.reused_tokens for r in shared[:2]) > BLOCK  # full blocks in two sequences
    assert all(1 <= r.completion_tokens <= 10 and r.text for r in shared)
    # the rationale's token ids come with it: as many as counted, and they are its text
    for r in shared:
        assert len(r.completion_ids) == r.completion_tokens
        assert backend.llm.detokenize(list(r.completion_ids)).decode("utf-8", errors="ignore") == r.text
    one = SequentialTurns(backend).run(requests[:1])[0]  # the one-by-one runner reports them too
    assert len(one.completion_ids) == one.completion_tokens >= 1
    assert backend.llm.detokenize(list(one.completion_ids)).decode("utf-8", errors="ignore") == one.text
    for request, result in zip(requests[:2], shared):
        assert backend.score_options(list(request.messages), list(request.options)).logprobs == result.logprobs
    assert all(sum(math.exp(v) for v in r.logprobs) <= 1.0 for r in shared)


def test_next_round_reuses_the_kept_prefix(backend: LlamaCppBackend) -> None:
    with BatchedLlamaTurns(backend, n_ctx=1024, n_seq_max=4, n_threads=1) as group, \
            BatchedLlamaTurns(backend, n_ctx=1024, n_seq_max=4, n_threads=1) as fresh:
        first = group.run(_requests(ROUND1, n=3))
        kept = group.kept_tokens
        second = group.run(_requests(ROUND2, n=3))
        assert kept >= 2 * BLOCK and group.last_prefix_kept >= kept - BLOCK
        assert group.last_prefix_evaluated == group.kept_tokens - group.last_prefix_kept < group.kept_tokens
        again = fresh.run(_requests(ROUND2, n=3))
        assert fresh.last_prefix_kept == 0 and fresh.last_prefix_evaluated == fresh.kept_tokens
    assert min(r.reused_tokens for r in second) > max(r.reused_tokens for r in first)
    _same(second, again)


def test_over_long_prompts_fail_alone_and_single_requests_work(backend: LlamaCppBackend) -> None:
    good = _requests(ROUND1, n=2, max_tokens=4)
    long = TurnRequest(_messages(ROUND1 * 40, "Sceptic."), OPTIONS, max_tokens=4)
    with BatchedLlamaTurns(backend, n_ctx=512, n_seq_max=3, n_threads=1) as runner:
        assert runner.n_ctx == 512
        out = runner.run([good[0], long, good[1]])
        assert out[1].error is not None and "exceeds the context of 512" in out[1].error
        assert out[1].logprobs == (-math.log(4),) * 4 and out[1].text == ""
        assert [r.error for r in (out[0], out[2])] == [None, None]
        single = runner.run([good[0]])[0]
        assert single.logprobs == out[0].logprobs and single.text == out[0].text
        assert single.reused_tokens == (single.prompt_tokens - 1) // BLOCK * BLOCK
        assert runner.run([]) == []
    with BatchedLlamaTurns(backend, n_ctx=256, n_seq_max=2, n_threads=1) as small:  # a rationale hits the end
        cut = small.run(_requests(ROUND1, n=1, max_tokens=64))[0]
        assert cut.error is None and cut.completion_tokens == small.n_ctx - cut.prompt_tokens + 1


def test_sizes_sequence_ids_and_closing(backend: LlamaCppBackend) -> None:
    with pytest.raises(ConfigError, match="n_seq_max"):
        BatchedLlamaTurns(backend, n_seq_max=1)
    with pytest.raises(ConfigError, match="n_ctx"):
        BatchedLlamaTurns(backend, n_ctx=16)
    runner = BatchedLlamaTurns(backend, n_ctx=256, n_seq_max=2, n_threads=1)
    with pytest.raises(BackendError, match="sequence id 2"):
        runner._seq(2)  # llama.cpp would abort the process on this id
    runner.close()
    with pytest.raises(BackendError, match="closed"):
        runner.run(_requests(ROUND1, n=1))


def test_block_spans_and_common_prefix() -> None:
    assert block_spans(0, 1) == [(0, 1)]
    assert block_spans(0, 70) == [(0, 64), (64, 69), (69, 70)]
    assert block_spans(64, 130) == [(64, 128), (128, 129), (129, 130)]
    assert block_spans(10, 66) == [(10, 64), (64, 65), (65, 66)]
    with pytest.raises(ValueError):
        block_spans(5, 5)
    assert common_prefix([1, 2, 3], [1, 2, 4, 5]) == 2 and common_prefix([], [1]) == 0


def _case(k: int, transcript: str, role: str) -> tuple[Message, ...]:
    """Prompts of two kinds (``role``) about case ``k``: the kinds share only the system
    prompt, the cases share the instructions that come before the case."""
    return (Message(Role.SYSTEM, "You are one agent of a clinical panel. Answer with one letter, then why."),
            Message(Role.USER, f"Your role. {role}\n" + CASE.replace("47", str(30 + k)) + transcript))


def test_parked_prefixes_let_alternating_prompt_kinds_reuse_their_own(backend: LlamaCppBackend) -> None:
    """One request per run (as for a member with an adapter) whose prompts alternate
    between two kinds across cases: with parking, each kind reuses the previous case's
    prompt of its kind, so more is kept and less evaluated; the numbers do not change."""
    kinds = (ROLES[0], ROLES[1])
    plan = [TurnRequest(_case(k, ROUND1 if kind == 0 else ROUND2, kinds[kind]), OPTIONS, max_tokens=6, seed=k)
            for k in range(3) for kind in (0, 1)]
    with BatchedLlamaTurns(backend, n_ctx=1024, n_seq_max=4, n_threads=1) as parked, \
            BatchedLlamaTurns(backend, n_ctx=1024, n_seq_max=4, n_threads=1, park=False) as plain, \
            BatchedLlamaTurns(backend, n_ctx=1024, n_seq_max=4, n_threads=1, share_prefix=False) as alone:
        got, base, kept, kept_plain = [], [], [], []
        for request in plan:
            got += parked.run([request])
            kept.append(parked.last_prefix_kept)
            base += plain.run([request])
            kept_plain.append(plain.last_prefix_kept)
        reference = alone.run(plan)
    _same(got, base)
    _same(got, reference)
    # from the second case on, each prompt finds its own kind's earlier prefix
    assert all(k > p for k, p in zip(kept[2:], kept_plain[2:])), (kept, kept_plain)
    assert kept[:2] == kept_plain[:2]
    assert len(parked._parked) == 2


def test_parking_never_uses_the_sequences_a_run_needs(backend: LlamaCppBackend) -> None:
    """A run of three requests uses sequences 1-3: what was parked there is forgotten,
    and the next single request still gets the numbers of a request alone."""
    one = [TurnRequest(_case(0, ROUND1, ROLES[0]), OPTIONS, max_tokens=4)]
    other = [TurnRequest(_case(1, ROUND2, ROLES[1]), OPTIONS, max_tokens=4)]
    with BatchedLlamaTurns(backend, n_ctx=1024, n_seq_max=4, n_threads=1) as runner, \
            BatchedLlamaTurns(backend, n_ctx=1024, n_seq_max=4, n_threads=1, share_prefix=False) as alone:
        runner.run(one)
        runner.run(other)
        assert runner._parked  # the first prompt was parked in a free sequence
        runner.run(_requests(ROUND1, n=3))
        assert not runner._parked
        _same(runner.run(one), alone.run(one))
