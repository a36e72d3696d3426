"""Measurement helpers of benchmarks/llm_benchmark.py: memory, timing, case choice, the raw
llama.cpp pass and a backend wrapper that adds up what its calls cost."""
from __future__ import annotations

import resource
import statistics
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import llama_cpp
import numpy as np

from clinical.datasets import ClinicalCase
from runtime.llama_backend import LlamaCppBackend
from runtime.messages import GenerationOptions, Message


def maxrss_mb() -> float:
    """Peak resident set size of this process so far (ru_maxrss is in KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def rss_mb() -> float:
    """Current resident set size (VmRSS), or NaN where /proc is missing."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return float("nan")


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def med(values: Sequence[float]) -> float:
    return float(statistics.median(values)) if values else float("nan")


def pick_cases(cases: Sequence[ClinicalCase], n: int, seed: int) -> list[ClinicalCase]:
    """n distinct cases, round-robin over the classes (deterministic)."""
    rng = np.random.default_rng(seed)
    by_class: dict[int, list[ClinicalCase]] = {}
    for i in rng.permutation(len(cases)):
        by_class.setdefault(cases[i].label, []).append(cases[i])
    out: list[ClinicalCase] = []
    while len(out) < n and any(by_class.values()):
        for label in sorted(by_class):
            if by_class[label] and len(out) < n:
                out.append(by_class[label].pop())
    return out


def raw_eval(backend: LlamaCppBackend, tokens: list[int]) -> np.ndarray:
    """llama.cpp's own path: one eval call (n_batch batching) and the last logits."""
    llm = backend.llm
    llm.reset()
    llm.eval(tokens)
    ptr = llama_cpp.llama_get_logits_ith(llm.ctx, -1)
    return np.ctypeslib.as_array(ptr, shape=(llm.n_vocab(),)).astype(np.float64)


def cold_score(backend: LlamaCppBackend, msgs: list[Message], opts: list[str]) -> tuple[float, ...]:
    backend.forget()
    scores = backend.score_options(msgs, opts)
    assert backend.last_reused == 0
    return scores.logprobs


class CountingBackend:
    """Delegates to a backend and adds up what its calls cost (end-to-end run only)."""

    def __init__(self, inner: LlamaCppBackend) -> None:
        self.inner = inner
        self.name, self.model_id, self.model_sha256 = inner.name, inner.model_id, inner.model_sha256
        self.stats = {"score_calls": 0, "score_s": 0.0, "prompt_tokens": 0, "reused_tokens": 0,
                      "generate_calls": 0, "generate_s": 0.0, "generate_prompt_tokens": 0,
                      "score_reused_tokens": 0}

    def score_options(self, messages: Sequence[Message], options: Sequence[str]):  # noqa: ANN201
        dt, out = timed(lambda: self.inner.score_options(messages, options))
        s = self.stats
        s["score_calls"] += 1
        s["score_s"] += dt
        s["prompt_tokens"] += out.prompt_tokens
        s["reused_tokens"] += self.inner.last_reused
        s["score_reused_tokens"] += self.inner.last_reused
        return out

    def generate(self, messages: Sequence[Message], options: GenerationOptions):  # noqa: ANN201
        dt, out = timed(lambda: self.inner.generate(messages, options))
        self.stats["generate_calls"] += 1
        self.stats["generate_s"] += dt
        self.stats["generate_prompt_tokens"] += out.prompt_tokens
        if out.prompt_tokens and self.inner.chat and options.json_schema is None:  # decoded on the KV cache
            self.stats["reused_tokens"] += self.inner.last_reused
        return out
