"""Batched agent turns on one llama.cpp model: a shared prompt prefix evaluated once.

:class:`BatchedLlamaTurns` answers a group's :class:`~runtime.turns.TurnRequest` list on
the weights of a loaded :class:`~runtime.llama_backend.LlamaCppBackend`, through a
second llama.cpp context with several sequences (llama-cpp-python's low-level API):

1. Every prompt is tokenised with the model's chat template.  The longest common token
   prefix of the requests, cut down to whole :data:`~runtime.llama_backend.BLOCK`\\ s, is
   held in sequence 0.  What sequence 0 kept from the previous ``run`` (a group's next
   round extends the same transcript) is reused as far as it agrees, in whole blocks.
   Sequences a run leaves free keep earlier prefixes ("parked"): when one of them holds
   more of the new prefix, sequence 0 becomes its copy.  A member with an adapter runs
   alone, so its round-0 and round-1 prompts alternate in one context; parked, each
   kind reuses the system prompt and instructions of the previous case's same kind.
2. Sequence 0 is copied to one sequence per request; each request's remaining tokens
   are evaluated in the same fixed blocks as :mod:`runtime.llama_backend` (aligned to
   multiples of BLOCK from position 0, the last prompt token alone), the requests'
   blocks of equal length together in one ``llama_decode``.
3. The last position's logits give the option log-probabilities and the first
   rationale token; the rationales are then decoded together, one token per active
   sequence per ``llama_decode``, sampled by :func:`runtime.turns.sample_token`.

Identical numbers (measured on SmolLM2-135M, CPU): a request's logits are bit-identical
whether it is evaluated alone from an empty cache, after a copied prefix or batched
with other sequences, and equal to ``LlamaCppBackend.score_options``, given three
rules.  (a) One KV stream per sequence (``kv_unified`` off); a unified buffer saves
memory but changed logits by up to 0.6.  (b) Flash attention off, as in the backend's
own context.  (c) A ``llama_decode`` holds spans of one length only: llama.cpp cuts a
multi-sequence batch into micro-batches with equally many tokens per sequence, so a
64-token block batched with a 31-token one is evaluated as 31 + 33 tokens, which changed
log-probabilities by up to 0.18.  (d) With a LoRA adapter, requests run one at a time after
the shared prefix: batch sizes change its float32 products (by up to 0.08).  Memory: the KV
cache holds ``n_seq_max x n_ctx`` tokens (SmolLM2-135M: 23 KB per token).

``share_prefix=False`` is the reference "agent after agent": the same code path with
each request evaluated alone from an empty cache.
"""
from __future__ import annotations

import logging
import threading
import time
import weakref
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from common.errors import ConfigError
from runtime.backends import BackendError
from runtime.llama_backend import BLOCK, LlamaCppBackend
from runtime.llama_raw_batch import RawBatch, free_context
from runtime.parked_prefixes import ParkedPrefixes, common_prefix
from runtime.turns import TurnRequest, TurnResult, error_result, option_logprobs, sample_token

__all__ = ["BatchedLlamaTurns", "block_spans", "common_prefix"]

log = logging.getLogger(__name__)

# Context settings copied from the backend's own context, so both compute alike.
_SAME_AS_BACKEND = ("flash_attn_type", "type_k", "type_v", "rope_scaling_type", "rope_freq_base",
                    "rope_freq_scale", "yarn_ext_factor", "yarn_attn_factor", "yarn_beta_fast",
                    "yarn_beta_slow", "yarn_orig_ctx", "swa_full", "offload_kqv", "op_offload")


def block_spans(start: int, n: int) -> list[tuple[int, int]]:
    """Half-open spans evaluating tokens ``start .. n-1``: pieces that end on multiples
    of BLOCK (counted from position 0) up to token ``n-2``, then the last token alone."""
    if not 0 <= start < n:
        raise ValueError(f"start {start} must lie in [0, {n})")
    spans, body = [], n - 1
    while start < body:
        end = min((start // BLOCK + 1) * BLOCK, body)
        spans.append((start, end))
        start = end
    spans.append((body, n))
    return spans


@dataclass
class _Turn:
    """One request in flight in a sequence."""

    index: int
    request: TurnRequest
    tokens: list[int]
    option_ids: list[int]
    seq: int = 0
    reused: int = 0
    rng: np.random.Generator = field(default_factory=np.random.default_rng)
    logprobs: tuple[float, ...] = ()
    generated: list[int] = field(default_factory=list)
    done: bool = False


class BatchedLlamaTurns:
    """Batched turns on a loaded llama.cpp model (implements :class:`~runtime.turns.TurnRunner`).

    n_ctx : context per sequence (longest prompt plus rationale), default the backend's;
        llama.cpp may round it up (the value used is the attribute ``n_ctx``).  A
        rationale that reaches the end of the context stops there.
    n_seq_max : sequences of the context: sequence 0 holds the shared prefix, so up to
        ``n_seq_max - 1`` requests run together; more are processed in chunks.
    n_threads : CPU threads, default the backend's.
    share_prefix : False evaluates each request alone from an empty cache (reference).
    park : keep earlier prefixes in the sequences a run leaves free (see ``_park``), so
        that prompts of two kinds that alternate each reuse their own; False keeps only
        sequence 0's.

    ``duration_s`` of a result is the wall time from the start of ``run`` until that
    request's rationale was complete.  Raises :class:`BackendError` when the context
    cannot be created, :class:`ConfigError` for bad sizes.
    """

    name = "llama.cpp/batched"

    def __init__(self, backend: LlamaCppBackend, *, n_ctx: int | None = None, n_seq_max: int = 8,
                 n_threads: int | None = None, share_prefix: bool = True, park: bool = True) -> None:
        import llama_cpp

        if not 2 <= n_seq_max <= int(llama_cpp.llama_max_parallel_sequences()):
            raise ConfigError("n_seq_max", f"must lie in [2, {llama_cpp.llama_max_parallel_sequences()}], "
                                           f"got {n_seq_max}")
        per_seq = int(n_ctx or backend.llm.n_ctx())
        if per_seq < BLOCK:
            raise ConfigError("n_ctx", f"must be >= {BLOCK}, got {per_seq}")
        self.backend, self.llm = backend, backend.llm
        self.model_id, self.model_sha256 = backend.model_id, backend.model_sha256
        self.share_prefix, self.n_seq_max, self.park = share_prefix, n_seq_max, park
        self._ctx = self._new_context(per_seq, n_threads or getattr(self.llm, "n_threads", None) or 1)
        self._mem = llama_cpp.llama_get_memory(self._ctx)
        self.n_ctx = int(llama_cpp.llama_n_ctx_seq(self._ctx))
        self._batch = RawBatch(BLOCK * (n_seq_max - 1))
        self._vocab = llama_cpp.llama_model_get_vocab(self.llm.model)
        self._n_vocab = int(self.llm.n_vocab())
        self._finalizer = weakref.finalize(self, free_context, self._ctx, self._batch.raw, self.llm)
        self._lock = threading.Lock()
        self._kept: list[int] = []  # tokens whose KV sequence 0 holds
        self._parked = ParkedPrefixes(BLOCK)  # earlier prefixes in the sequences runs leave free
        self.last_prefix_kept = 0  # shared-prefix tokens the last run took from the previous one
        self.last_prefix_evaluated = 0  # shared-prefix tokens the last run evaluated
        log.info("batched llama.cpp context: %d sequences of %d tokens", n_seq_max, self.n_ctx)

    def _new_context(self, per_seq: int, n_threads: int) -> Any:
        import llama_cpp

        params = llama_cpp.llama_context_default_params()
        for name in _SAME_AS_BACKEND:
            setattr(params, name, getattr(self.llm.context_params, name))
        params.n_ctx = per_seq * self.n_seq_max
        params.n_batch = params.n_ubatch = BLOCK * (self.n_seq_max - 1)
        params.n_seq_max = self.n_seq_max
        params.n_threads = params.n_threads_batch = int(n_threads)
        params.kv_unified = False  # one KV stream per sequence: identical numbers (module docstring)
        params.no_perf = True
        ctx = self.backend.new_context(params)  # with the backend's LoRA adapter, if any
        if not ctx:
            raise BackendError(f"cannot create a llama.cpp context of {self.n_seq_max} x {per_seq} tokens "
                               f"for {self.model_id}")
        return ctx

    # ------------------------------------------------------------------ lifecycle
    @property
    def kept_tokens(self) -> int:
        """Prompt tokens whose KV sequence 0 keeps for the next ``run``."""
        return len(self._kept)

    def close(self) -> None:
        """Free the llama.cpp context (the model weights belong to the backend)."""
        with self._lock:
            self._finalizer()

    def __enter__(self) -> BatchedLlamaTurns:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------------ run
    def run(self, requests: Sequence[TurnRequest]) -> list[TurnResult]:
        """Answer ``requests``; results in request order.  A request that cannot run
        (prompt longer than the context, tokenisation failure) gets an ``error``."""
        start = time.perf_counter()
        with self._lock:
            if not self._finalizer.alive:
                raise BackendError("the batched runner is closed")
            results: list[TurnResult | None] = [None] * len(requests)
            turns = self._prepare(requests, results)
            prefix = self._prefix(turns)
            groups = self._groups(turns)
            spare = self._spare(groups[0]) if groups else []
            self.last_prefix_kept = self._parked.source(self._kept, prefix, spare)[1]
            self.last_prefix_evaluated = 0
            for group in groups:
                try:
                    if not self.share_prefix:
                        self._reset()
                    for turn in self._play(group, prefix):
                        results[turn.index] = self._result(turn, start)
                except BackendError as exc:
                    log.warning("batched turns failed: %s", exc)
                    self._reset()
                    for turn in group:
                        results[turn.index] = error_result(turn.request, str(exc), prompt_tokens=len(turn.tokens),
                                                           duration_s=time.perf_counter() - start)
        return [r for r in results if r is not None]

    def _prepare(self, requests: Sequence[TurnRequest], results: list[TurnResult | None]) -> list[_Turn]:
        """Tokenise the requests; those that cannot run get their error result now."""
        turns = []
        for i, request in enumerate(requests):
            try:
                tokens = [int(t) for t in self.backend.prompt_tokens(request.messages)]
                ids = [self.backend.option_token(o) for o in request.options]
            except (BackendError, ValueError, RuntimeError) as exc:
                results[i] = error_result(request, f"cannot tokenise the prompt: {exc}")
                continue
            if not tokens or len(tokens) > self.n_ctx:
                results[i] = error_result(request, f"prompt of {len(tokens)} tokens exceeds the context of "
                                                   f"{self.n_ctx} tokens per sequence", prompt_tokens=len(tokens))
                continue
            turns.append(_Turn(i, request, tokens, ids, rng=np.random.default_rng(request.seed)))
        return turns

    def _groups(self, turns: list[_Turn]) -> list[list[_Turn]]:
        size = self.n_seq_max - 1 if self.share_prefix and self.backend.adapter is None else 1
        return [turns[i:i + size] for i in range(0, len(turns), size)]

    def _prefix(self, turns: list[_Turn]) -> list[int]:
        """The shared prefix: the requests' common tokens in whole blocks, never a
        request's last token (empty without ``share_prefix``)."""
        if not self.share_prefix or not turns:
            return []
        first = turns[0].tokens
        n = min(len(t.tokens) - 1 for t in turns)
        for turn in turns[1:]:
            n = min(n, common_prefix(first, turn.tokens))
        return first[:n // BLOCK * BLOCK]

    def _reset(self) -> None:
        import llama_cpp

        llama_cpp.llama_memory_clear(self._mem, True)
        self._kept = []
        self._parked.clear()

    def _result(self, turn: _Turn, start: float) -> TurnResult:
        text = self.llm.detokenize(turn.generated).decode("utf-8", errors="ignore")
        return TurnResult(turn.logprobs, text, prompt_tokens=len(turn.tokens),
                          completion_tokens=len(turn.generated), reused_tokens=turn.reused,
                          duration_s=time.perf_counter() - start, completion_ids=tuple(map(int, turn.generated)))

    # ------------------------------------------------------------- llama.cpp work
    def _play(self, group: list[_Turn], prefix: list[int]) -> list[_Turn]:
        """Prefix, copies, prompts, rationales for one group of at most n_seq_max-1 turns."""
        self._extend_prefix(prefix, self._spare(group))
        self._start_sequences(group)
        self._parked.forget(range(1, len(group) + 1))  # the group's copies overwrote them
        self._eval_prompts(group)
        self._generate(group)
        return group

    def _spare(self, group: list[_Turn]) -> list[int]:
        """The sequences ``group`` leaves free: they keep earlier prefixes (parked)."""
        return list(range(len(group) + 1, self.n_seq_max)) if self.share_prefix and self.park else []

    def _park(self, spare: list[int], source: int, keep: int) -> None:
        """Copy sequence 0 into a free sequence before it is trimmed or replaced (see
        :meth:`~runtime.parked_prefixes.ParkedPrefixes.target`)."""
        import llama_cpp

        target = self._parked.target(self._kept, keep, source, spare)
        if target is None:
            return
        llama_cpp.llama_memory_seq_rm(self._mem, target, -1, -1)
        llama_cpp.llama_memory_seq_cp(self._mem, 0, target, -1, -1)  # whole stream (non-unified KV)
        self._parked.park(target, self._kept)

    def _extend_prefix(self, prefix: list[int], spare: list[int]) -> None:
        """Make sequence 0 hold ``prefix``, reusing the whole blocks it, or a parked
        sequence, already shares."""
        import llama_cpp

        source, keep = self._parked.source(self._kept, prefix, spare)
        if source == 0 and keep == len(prefix):
            return  # sequence 0 already holds it (and possibly more, kept for later)
        self._park(spare, source, keep)
        if source != 0:  # a parked sequence holds more of it: sequence 0 becomes its copy
            llama_cpp.llama_memory_seq_rm(self._mem, 0, -1, -1)
            llama_cpp.llama_memory_seq_cp(self._mem, source, 0, -1, -1)
            self._kept = list(self._parked.held(source))
            self._parked.touch(source)
        if not llama_cpp.llama_memory_seq_rm(self._mem, self._seq(0), keep, -1):
            raise BackendError(f"cannot trim sequence 0 to {keep} tokens")
        self._kept = self._kept[:keep]
        for lo in range(keep, len(prefix), BLOCK):
            self._batch.clear()
            for j in range(lo, min(lo + BLOCK, len(prefix))):
                self._batch.add(prefix[j], j, self._seq(0), False)
            self._decode()
        self._kept = list(prefix)
        self.last_prefix_evaluated += len(prefix) - keep
        log.debug("shared prefix: %d tokens kept (sequence %d), %d evaluated", keep, source, len(prefix) - keep)

    def _start_sequences(self, group: list[_Turn]) -> None:
        """Give each turn its own sequence, a copy of sequence 0 up to its reusable part."""
        import llama_cpp

        for k, turn in enumerate(group, start=1):
            turn.seq = self._seq(k)
            llama_cpp.llama_memory_seq_rm(self._mem, turn.seq, -1, -1)
            turn.reused = min(common_prefix(self._kept, turn.tokens), len(turn.tokens) - 1) // BLOCK * BLOCK
            if turn.reused == 0:
                continue
            llama_cpp.llama_memory_seq_cp(self._mem, 0, turn.seq, -1, -1)  # whole stream (non-unified KV)
            if turn.reused < len(self._kept) and not llama_cpp.llama_memory_seq_rm(self._mem, turn.seq,
                                                                                  turn.reused, -1):
                raise BackendError(f"cannot trim sequence {turn.seq} to {turn.reused} tokens")

    def _eval_prompts(self, group: list[_Turn]) -> None:
        """Evaluate the turns' remaining prompt tokens block by block and read the last
        position's logits.

        Each step takes the next span of every turn; spans of equal length share one
        ``llama_decode``.  (llama.cpp splits a multi-sequence batch into micro-batches of
        equally many tokens per sequence, so spans of unequal length would be cut up and
        evaluated differently from a request alone.)
        """
        plans = [block_spans(t.reused, len(t.tokens)) for t in group]
        for step in range(max(len(p) for p in plans)):
            by_length: dict[int, list[tuple[_Turn, tuple[int, int]]]] = {}
            for turn, plan in zip(group, plans):
                if step < len(plan):
                    by_length.setdefault(plan[step][1] - plan[step][0], []).append((turn, plan[step]))
            for spans in by_length.values():
                self._batch.clear()
                last: list[tuple[_Turn, int]] = []
                for turn, (lo, hi) in spans:
                    for j in range(lo, hi):
                        index = self._batch.add(turn.tokens[j], j, turn.seq, j == len(turn.tokens) - 1)
                        if j == len(turn.tokens) - 1:
                            last.append((turn, index))
                self._decode()
                for turn, index in last:
                    self._first_token(turn, self._logits(index))

    def _first_token(self, turn: _Turn, logits: np.ndarray) -> None:
        turn.logprobs = option_logprobs(logits, turn.option_ids)
        self._accept(turn, logits)

    def _accept(self, turn: _Turn, logits: np.ndarray) -> None:
        """Sample the next rationale token and decide whether the turn is finished."""
        import llama_cpp

        r = turn.request
        token = sample_token(logits, temperature=r.temperature, top_p=r.top_p, rng=turn.rng)
        if llama_cpp.llama_vocab_is_eog(self._vocab, token) or token == self.llm.token_eos():
            turn.done = True
            return
        turn.generated.append(token)
        next_pos = len(turn.tokens) + len(turn.generated) - 1  # where this token would be evaluated
        turn.done = len(turn.generated) >= r.max_tokens or next_pos >= self.n_ctx

    def _generate(self, group: list[_Turn]) -> None:
        """Decode the rationales together: one token per unfinished turn per decode."""
        while active := [t for t in group if not t.done]:
            self._batch.clear()
            at = [self._batch.add(t.generated[-1], len(t.tokens) + len(t.generated) - 1, t.seq, True)
                  for t in active]
            self._decode()
            for turn, index in zip(active, at):
                self._accept(turn, self._logits(index))

    def _seq(self, seq: int) -> int:
        """A checked sequence id (llama.cpp aborts the process on an id >= n_seq_max)."""
        if not 0 <= seq < self.n_seq_max:
            raise BackendError(f"sequence id {seq} outside [0, {self.n_seq_max})")
        return seq

    def _decode(self) -> None:
        import llama_cpp

        code = int(llama_cpp.llama_decode(self._ctx, self._batch.raw))
        if code != 0:
            raise BackendError(f"llama_decode failed with code {code} on a batch of {self._batch.n} tokens")

    def _logits(self, index: int) -> np.ndarray:
        import llama_cpp

        ptr = llama_cpp.llama_get_logits_ith(self._ctx, index)
        if not ptr:
            raise BackendError(f"no logits for batch position {index}")
        return np.ctypeslib.as_array(ptr, shape=(self._n_vocab,)).astype(np.float64)
