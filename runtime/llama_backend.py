"""A GGUF model run in process through llama-cpp-python.

``generate`` is a chat completion (optionally JSON-schema constrained).  ``score_options``
formats the chat with the model's own template, evaluates the prompt once and reads the
last position's logits (``llama_get_logits_ith(ctx, -1)``, which works without
``logits_all``), returning the log-softmax value of each option's first token.

Prefix reuse without changing results: llama.cpp's numbers depend slightly on how
tokens are grouped into batches (measured: up to 0.08 in a log-probability between one
80-token batch and 79 + 1).  So prompts are always evaluated in the same blocks, then
the last token alone; where blocks start is the backend's ``split`` (:mod:`runtime.blocks`):
``fixed``, every :data:`BLOCK` tokens from position 0 (the default, the blocks of the
batched runner :mod:`runtime.llama_batch`), or ``paragraph``, also after every blank
line.  A later call that shares a prefix (the same case in the next round) keeps the KV
cache up to the last whole block they share and evaluates the rest in the same blocks, so
a cached and a fresh evaluation give identical scores.  With ``paragraph`` a call that
adds a paragraph after a shared one (a new mediator note after the case) keeps the whole
shared text; with ``fixed`` it re-evaluates the partial block before it.  ``generate`` of free text on a chat model
evaluates its prompt the same way and then decodes token by token; JSON-constrained
generation and base models use llama.cpp's completion, which starts from an empty cache
and leaves an empty one (it evaluates the prompt in other pieces).

Saved states (:mod:`runtime.kv_cache`): after each scored prompt the sequence's KV state
is saved (``llama_state_seq_get_data``), up to ``kv_cache_mb`` MB of them, least recently
used dropped first.  A prompt that shares more whole blocks with a saved state than with
what the context holds restores that state (``llama_state_seq_set_data``) and evaluates
only the rest, so an agent's system prompt and category list are evaluated once, and a
case's next round evaluates little more than the mediator's note.  The kept blocks were
evaluated exactly as a cold evaluation would evaluate them, so the scores are identical.
``kv_cache_mb=0`` keeps only what the context holds.

A LoRA adapter (``lora_path``, checked by :func:`runtime.adapters.check_adapter_file`) is
loaded with ``llama_adapter_lora_init`` and set on the context; a second context on the
same weights (the batched runner's) comes from :meth:`LlamaCppBackend.new_context`, which
sets it too.  The KV states, saved or held, belong to this backend alone, so a model with
an adapter and its base never share one.  ``model_id`` then names both files and
``model_sha256`` is :func:`runtime.adapters.combined_sha256` of their digests.
"""
from __future__ import annotations

import ctypes
import json
import logging
import math
import os
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence

import numpy as np

from common.errors import ConfigError
from common.table_export import file_sha256
from common.threads import default_threads
from runtime.backends import BackendError
from runtime.blocks import check_split, floor_start, make_split, spans
from runtime.gguf_info import check_gguf_file
from runtime.kv_cache import KvSnapshots, kv_cache_mb as kv_budget_mb, reusable_length
from runtime.messages import GenerationOptions, Message, OptionScores, Reply

if TYPE_CHECKING:
    from runtime.adapters import AdapterInfo
    from runtime.turns import TurnRunner

__all__ = ["LlamaCppBackend", "file_sha256", "detect_gpu_layers", "plain_prompt", "BLOCK"]

BLOCK = 64  # tokens per evaluation block (see the module docstring)

log = logging.getLogger(__name__)


def plain_prompt(messages: Sequence[Message]) -> str:
    """A transcript for base models without a chat template; ends where the answer starts."""
    parts = []
    for m in messages:
        if m.role.value == "system":
            parts.append(m.content.strip())
        elif m.role.value == "user":
            parts.append(f"Question:\n{m.content.strip()}")
        else:
            parts.append(f"Answer: {m.content.strip()}")
    return "\n\n".join(parts) + "\n\nAnswer:"


def detect_gpu_layers(requested: int | None) -> int:
    """``requested`` when given, else -1 (all layers) if llama.cpp reports GPU offload
    support, else 0."""
    if requested is not None:
        return int(requested)
    try:
        import llama_cpp

        return -1 if bool(llama_cpp.llama_supports_gpu_offload()) else 0
    except (ImportError, AttributeError):
        return 0


class LlamaCppBackend:
    """In-process llama.cpp model.

    Parameters: path to a .gguf file, n_ctx, n_threads (generation and prompt evaluation; default: all cores), seed,
    n_gpu_layers (None = detect: all layers on a GPU build, 0 otherwise), kv_cache_mb
    (saved KV states, see the module docstring; None = ``DCEM_KV_CACHE_MB`` or 1024, 0 = off),
    split (evaluation blocks: ``fixed`` or ``paragraph``, see the module docstring),
    lora_path (a LoRA adapter file for this base, applied at scale ``lora_scale``),
    sha256 (the base file's digest when known).
    Raises :class:`BackendError` for a missing or unreadable model or adapter file, a
    :class:`~common.errors.ConfigError` for a bad setting.
    """

    name = "llama.cpp"

    def __init__(self, path: str | os.PathLike[str], *, n_ctx: int = 2048, n_threads: int | None = None,
                 seed: int = 0, n_gpu_layers: int | None = None, sha256: str | None = None,
                 kv_cache_mb: int | None = None, split: str = "fixed",
                 lora_path: str | os.PathLike[str] | None = None, lora_scale: float = 1.0) -> None:
        self.path = check_gguf_file(Path(path))
        self.adapter: AdapterInfo | None = None
        if lora_path is not None:
            from runtime.adapters import check_adapter_file

            self.adapter = check_adapter_file(lora_path, self.path)  # before the weights load
        if isinstance(lora_scale, bool) or not isinstance(lora_scale, (int, float)) or not math.isfinite(lora_scale):
            raise ConfigError("lora_scale", f"must be a finite number, got {lora_scale!r}")
        self.lora_scale = float(lora_scale)
        budget = kv_budget_mb(kv_cache_mb) << 20  # ConfigError for a bad size
        check_split(split)  # ConfigError for a bad name, before the model loads
        try:
            from llama_cpp import Llama
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter
        except ImportError as exc:  # pragma: no cover - depends on the install
            raise BackendError(f"llama-cpp-python is not installed ({exc})") from None
        self.n_gpu_layers = detect_gpu_layers(n_gpu_layers)
        threads = n_threads or default_threads()  # prompt (batch) evaluation too: every core, or $DCEM_THREADS
        try:
            self.llm = Llama(model_path=str(self.path), n_ctx=n_ctx, n_threads=threads, n_threads_batch=threads,
                             seed=seed, n_gpu_layers=self.n_gpu_layers, verbose=False)
        except (ValueError, RuntimeError) as exc:
            raise BackendError(f"cannot load {self.path.name}: {exc}") from None
        self.model_id = self.path.name
        self.model_sha256 = sha256 or file_sha256(self.path)
        self._lora: Any = None
        if self.adapter is not None:
            from runtime.adapters import combined_sha256

            self._lora = self._load_adapter()
            self.apply_adapter(self.llm.ctx)
            self.model_id = f"{self.path.name}+lora:{self.adapter.path.name}"
            self.model_sha256 = combined_sha256(self.model_sha256, self.adapter.sha256)
        template = self.llm.metadata.get("tokenizer.chat_template")
        model = self.llm._model
        # A base model (no chat template) is prompted with a plain transcript instead.
        self.chat = bool(template)
        self._formatter = Jinja2ChatFormatter(
            template=template, eos_token=model.token_get_text(self.llm.token_eos()),
            bos_token=model.token_get_text(self.llm.token_bos())) if template else None
        self.split = make_split(split, BLOCK, lambda t: self.llm.detokenize([t], special=True))
        self.kv = KvSnapshots(budget, self.split)
        self._lock = threading.Lock()  # one llama context: calls must not interleave
        self.last_reused = 0  # prompt tokens taken from the KV cache by the last score_options
        self.reused_tokens = self.scored_tokens = 0  # totals over score_options calls

    # ------------------------------------------------------------------- adapter
    def _load_adapter(self) -> Any:
        """The adapter's tensors, loaded on the model (llama.cpp frees them with it)."""
        import llama_cpp

        assert self.adapter is not None
        handle = llama_cpp.llama_adapter_lora_init(self.llm.model, str(self.adapter.path).encode("utf-8"))
        if not handle:
            raise BackendError(f"llama.cpp cannot load the LoRA adapter {self.adapter.path.name} "
                               f"on {self.path.name}")
        return handle

    def apply_adapter(self, ctx: Any) -> None:
        """Set this backend's LoRA adapter (if any) on a llama.cpp context of its model."""
        import llama_cpp

        if self._lora is None:
            return
        adapters = (llama_cpp.llama_adapter_lora_p_ctypes * 1)(self._lora)
        scales = (ctypes.c_float * 1)(self.lora_scale)
        if llama_cpp.llama_set_adapters_lora(ctx, adapters, 1, scales):
            name = self.adapter.path.name if self.adapter is not None else "adapter"
            raise BackendError(f"llama.cpp cannot set the LoRA adapter {name} on a context of {self.path.name}")

    def new_context(self, params: Any) -> Any:
        """Another llama.cpp context on this model (``llama_context_params``), with this
        backend's LoRA adapter set on it; NULL when llama.cpp cannot create it."""
        import llama_cpp

        ctx = llama_cpp.llama_init_from_model(self.llm.model, params)
        if ctx:
            try:
                self.apply_adapter(ctx)
            except BackendError:
                llama_cpp.llama_free(ctx)
                raise
        return ctx

    # ------------------------------------------------------------------ generate
    def generate(self, messages: Sequence[Message], options: GenerationOptions) -> Reply:
        """A chat completion.  Free text on a chat model is decoded here, on top of the
        scored prompts' KV cache (:meth:`_decode_reusing`); JSON-constrained text and base
        models go through llama.cpp's own completion, from an empty cache."""
        if options.json_schema is None and self.chat:
            return self._decode_reusing(messages, options)
        kwargs: dict[str, Any] = {"temperature": options.temperature, "seed": options.seed,
                                  "max_tokens": options.max_tokens}
        if options.json_schema is not None and self.chat:
            kwargs["response_format"] = {"type": "json_object", "schema": options.json_schema}
        elif options.json_schema is not None:
            from llama_cpp import LlamaGrammar

            kwargs["grammar"] = LlamaGrammar.from_json_schema(json.dumps(options.json_schema), verbose=False)
        start = time.perf_counter()
        with self._lock:
            self.llm.reset()
            try:
                if self.chat:
                    out = self.llm.create_chat_completion(messages=[m.to_dict() for m in messages], **kwargs)
                    text = out["choices"][0]["message"].get("content") or ""
                else:
                    out = self.llm.create_completion(prompt=plain_prompt(messages), stop=["\nQuestion:"],
                                                     **kwargs)
                    text = out["choices"][0].get("text") or ""
            except ValueError as exc:  # e.g. prompt longer than the context
                raise BackendError(str(exc)) from None
            finally:
                self.llm.reset()  # evaluated in llama.cpp's own pieces: never reused by score_options
        usage = out.get("usage", {})
        return Reply(text=text,
                     prompt_tokens=int(usage.get("prompt_tokens", 0)),
                     completion_tokens=int(usage.get("completion_tokens", 0)),
                     duration_s=time.perf_counter() - start)

    def _decode_reusing(self, messages: Sequence[Message], options: GenerationOptions) -> Reply:
        """Evaluate the prompt like a scored one (reusing cached blocks), then decode one
        token at a time: greedy at temperature 0, else sampled with ``options.seed``
        (:func:`runtime.turns.sample_token`, no top-p cut).  Stops at an end-of-generation
        token, after ``max_tokens``, at the end of the context, or as soon as
        ``options.until`` holds for the text so far."""
        import llama_cpp

        from runtime.turns import sample_token

        start = time.perf_counter()
        rng = np.random.default_rng(options.seed)
        with self._lock:
            llm = self.llm
            tokens = self.prompt_tokens(messages)
            starts = self.split.starts(tokens)
            self.last_reused = self._eval_reusing_prefix(tokens, starts)
            vocab = llama_cpp.llama_model_get_vocab(llm.model)
            out: list[int] = []
            try:
                while len(out) < options.max_tokens and llm.n_tokens < llm.n_ctx():
                    logits = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(llm.ctx, -1),
                                                   shape=(llm.n_vocab(),)).astype(np.float64)
                    token = sample_token(logits, temperature=options.temperature, top_p=1.0, rng=rng)
                    if llama_cpp.llama_vocab_is_eog(vocab, token):
                        break
                    out.append(token)
                    if options.until is not None and options.until(
                            llm.detokenize(out).decode("utf-8", errors="ignore")):
                        break  # the caller has its answer (GenerationOptions.until)
                    llm.eval([token])
            finally:
                llm.n_tokens = floor_start(starts, len(tokens) - 1)  # keep only blocks evaluated as a cold prompt
            text = llm.detokenize(out).decode("utf-8", errors="ignore")
        return Reply(text=text, prompt_tokens=len(tokens), completion_tokens=len(out),
                     duration_s=time.perf_counter() - start, token_ids=tuple(int(t) for t in out))

    def set_split(self, split: str, kv_cache_mb: int | None = None) -> None:
        """Evaluate from now on in ``split``'s blocks, with a fresh saved-state budget of
        ``kv_cache_mb`` (None = the setting); every cached state is dropped, since its
        blocks were placed by the old split."""
        budget = kv_budget_mb(kv_cache_mb) << 20
        with self._lock:
            self.split = make_split(split, BLOCK, lambda t: self.llm.detokenize([t], special=True))
            self.kv = KvSnapshots(budget, self.split)
            self.llm.reset()

    def forget(self) -> None:
        """Drop every cached KV state (the context's and the saved ones): the next call is
        evaluated from the start."""
        with self._lock:
            self.llm.reset()
            self.kv.clear()

    # --------------------------------------------------------------------- score
    def prompt_tokens(self, messages: Sequence[Message]) -> list[int]:
        """Token ids of the chat prompt, ending where the assistant's reply starts."""
        if self._formatter is None:
            return self.llm.tokenize(plain_prompt(messages).encode("utf-8"), add_bos=True, special=False)
        prompt = self._formatter(messages=[m.to_dict() for m in messages]).prompt
        return self.llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True)

    def option_token(self, option: str) -> int:
        """First token of an option as the model would write it to start its reply."""
        ids = self.llm.tokenize(option.encode("utf-8"), add_bos=False, special=False)
        if not ids:
            raise BackendError(f"option {option!r} has no tokens")
        return int(ids[0])

    def _eval_reusing_prefix(self, tokens: list[int], starts: np.ndarray | None = None) -> int:
        """Evaluate ``tokens`` in the split's blocks (``starts``, computed when not given),
        reusing whole blocks from the context or a saved state; returns the number of
        reused tokens."""
        llm = self.llm
        if len(tokens) > llm.n_ctx():
            raise BackendError(f"prompt of {len(tokens)} tokens exceeds the context of {llm.n_ctx()}")
        starts = self.split.starts(tokens) if starts is None else starts
        reuse = reusable_length(tokens, llm._input_ids, self.split, starts)
        if self.kv.enabled:
            snap, n = self.kv.best(tokens)
            if snap is not None and n > reuse and self._restore(snap.tokens, snap.data):
                reuse = n
        body = len(tokens) - 1  # the last token is always evaluated alone
        llm.n_tokens = reuse
        for lo, hi in spans(starts, reuse, body):
            llm.eval(tokens[lo:hi])
        llm.eval(tokens[body:])
        if self.kv.enabled:
            self.kv.put(tokens, self._state())
        return reuse

    def _state(self) -> bytes:
        """The KV state of sequence 0 (the only sequence of this context)."""
        import llama_cpp

        size = int(llama_cpp.llama_state_seq_get_size(self.llm.ctx, 0))
        buf = (ctypes.c_uint8 * size)()
        n = int(llama_cpp.llama_state_seq_get_data(self.llm.ctx, buf, size, 0))
        return ctypes.string_at(buf, n)

    def _restore(self, tokens: np.ndarray, data: bytes) -> bool:
        """Load a saved state into sequence 0; False (and an empty context) if llama.cpp
        refuses it."""
        import llama_cpp

        llm = self.llm
        llm.reset()
        llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(llm.ctx), True)
        src = ctypes.cast(ctypes.c_char_p(data), ctypes.POINTER(ctypes.c_uint8))
        if int(llama_cpp.llama_state_seq_set_data(llm.ctx, src, len(data), 0)) != len(data):
            log.warning("a saved KV state could not be restored; evaluating from the start")
            llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(llm.ctx), True)
            return False
        llm.input_ids[:len(tokens)] = tokens
        llm.n_tokens = len(tokens)
        self.kv.restored += 1
        return True

    def score_options(self, messages: Sequence[Message], options: Sequence[str]) -> OptionScores:
        import llama_cpp

        start = time.perf_counter()
        with self._lock:
            tokens = self.prompt_tokens(messages)
            self.last_reused = self._eval_reusing_prefix(tokens)
            self.reused_tokens += self.last_reused
            self.scored_tokens += len(tokens)
            ptr = llama_cpp.llama_get_logits_ith(self.llm.ctx, -1)
            logits = np.ctypeslib.as_array(ptr, shape=(self.llm.n_vocab(),)).astype(np.float64)
            ids = [self.option_token(o) for o in options]
        top = float(logits.max())
        log_z = top + math.log(float(np.exp(logits - top).sum()))
        return OptionScores(tuple(float(logits[i]) - log_z for i in ids), prompt_tokens=len(tokens),
                            duration_s=time.perf_counter() - start)

    # --------------------------------------------------------------- turn runner
    def turn_runner(self, *, batched: bool = True, n_ctx: int | None = None, width: int = 8) -> TurnRunner:
        """Batched turns (:class:`runtime.llama_batch.BatchedLlamaTurns`: ``width``
        agents decoded together, ``n_ctx`` tokens each), or one turn after another when
        ``batched`` is off or the batched runner cannot be imported."""
        from runtime.turns import SequentialTurns

        if not batched:
            return SequentialTurns(self)
        try:
            from runtime.llama_batch import BatchedLlamaTurns
        except ImportError:  # the batched runner is optional
            return SequentialTurns(self)
        return BatchedLlamaTurns(self, n_ctx=n_ctx, n_seq_max=width + 1)
