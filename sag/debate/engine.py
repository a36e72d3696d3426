"""Agent turns through the model runtime and the call log.

:class:`TurnEngine` takes the turns of one debate step (several agents, possibly on
different backbones), answers from the call log every turn asked before (same backend,
model sha256, options, decoding settings and messages), sends the rest to each model's
:class:`~runtime.turns.TurnRunner` as one batch, logs every new call, and turns each
result into a :class:`~sag.group.transcript.GroupMessage`.  So a finished run re-runs with zero
model calls and an interrupted one resumes where it stopped.
"""
from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Collection, Mapping, Sequence

import numpy as np

from runtime.call_log import CallContext, CallLog, CallRecord, cache_key
from runtime.messages import Message
from runtime.turns import TurnRequest, TurnResult, TurnRunner
from sag.group.config import AgentSpec, GroupConfig
from sag.group.transcript import REFUSE, GroupMessage, read_rationale

__all__ = ["AgentTurn", "TurnEngine", "turn_seed", "PURPOSE", "distribution_of", "decode_letter"]

PURPOSE = "sag_turn"


@dataclass(frozen=True)
class AgentTurn:
    """One agent's turn to be played: its prompt and the labels it is scored on.

    options : the item's letters, plus REFUSE for safety and judge agents
    (``refusable``).  ``index`` is the agent's position in the group (for the log).
    """

    agent: AgentSpec
    index: int
    round: int
    phase: str
    messages: tuple[Message, ...]
    letters: tuple[str, ...]
    refusable: bool = False
    note: str | None = None

    @property
    def options(self) -> tuple[str, ...]:
        return self.letters + ((REFUSE,) if self.refusable else ())


def turn_seed(seed: int, agent_id: str, round_: int, phase: str) -> int:
    """A decoding seed of its own for every (group seed, agent, round, phase)."""
    digest = hashlib.sha256(f"{seed}|{agent_id}|{round_}|{phase}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def distribution_of(logprobs: Sequence[float], n_letters: int) -> tuple[tuple[float, ...], float | None]:
    """Probabilities over the letters (the first ``n_letters`` scores) and, when a REFUSE
    score follows, P(REFUSE) among letters and REFUSE."""
    def softmax(values: Sequence[float]) -> list[float]:
        top = max(values)
        exps = [math.exp(v - top) for v in values]
        total = sum(exps)
        return [e / total for e in exps]

    letters = softmax(list(logprobs[:n_letters]))
    refuse = softmax(list(logprobs))[-1] if len(logprobs) > n_letters else None
    return tuple(letters), refuse


def decode_letter(distribution: Sequence[float], *, temperature: float, top_p: float, seed: int) -> int:
    """The index of the letter an agent answers with.

    Greedy (``temperature == 0``): the most probable letter.  Otherwise the letter is
    drawn, as a decoder draws its next token: probabilities raised to ``1/temperature``
    and renormalised, restricted to the smallest most-probable set whose mass reaches
    ``top_p``, then one draw with a generator seeded by the turn's ``seed`` (so a replay
    from the call log draws the same letter).
    """
    probs = np.asarray(distribution, dtype=float)
    if temperature <= 0.0 or probs.size == 1:
        return int(np.argmax(probs))
    logits = np.log(np.clip(probs, 1e-300, None)) / temperature
    tempered = np.exp(logits - logits.max())
    tempered /= tempered.sum()
    order = np.argsort(-tempered, kind="stable")
    keep = int(np.searchsorted(np.cumsum(tempered[order]), top_p - 1e-12) + 1)
    kept = order[:max(1, min(keep, order.size))]
    mass = tempered[kept] / tempered[kept].sum()
    rng = np.random.default_rng([seed, 0x5A6])
    return int(kept[rng.choice(kept.size, p=mass)])


class TurnEngine:
    """Plays turns on per-model runners, through the call log when one is given."""

    def __init__(self, runners: Mapping[str, TurnRunner], cfg: GroupConfig, *, log: CallLog | None = None,
                 run_id: str | None = None, item_id: str | None = None) -> None:
        missing = [m for m in cfg.models() if m not in runners]
        if missing:
            raise KeyError(f"no runner for model(s) {', '.join(missing)}")
        self.runners, self.cfg, self.log = dict(runners), cfg, log
        self.run_id, self.item_id = run_id, item_id
        self.calls = 0  # model calls made (not answered from the log)
        self.cached = 0

    def _request(self, turn: AgentTurn) -> TurnRequest:
        cfg = self.cfg
        return TurnRequest(messages=turn.messages, options=turn.options, max_tokens=cfg.rationale_tokens,
                           temperature=cfg.temperature, top_p=cfg.top_p,
                           seed=turn_seed(cfg.seed, turn.agent.agent_id, turn.round, turn.phase))

    def _key(self, runner: TurnRunner, request: TurnRequest) -> str:
        fields = {"backend": runner.name, "model_sha256": runner.model_sha256, "mode": "turn",
                  "options": list(request.options), "max_tokens": request.max_tokens,
                  "temperature": request.temperature, "top_p": request.top_p, "seed": request.seed,
                  "purpose": PURPOSE}
        return cache_key(fields, request.messages)

    def play(self, turns: Sequence[AgentTurn], known_passages: Collection[str]) -> list[GroupMessage]:
        """Play ``turns`` (one batch per model); messages in the order of ``turns``."""
        out: list[GroupMessage | None] = [None] * len(turns)
        by_model: dict[str, list[int]] = {}
        for i, turn in enumerate(turns):
            by_model.setdefault(turn.agent.model, []).append(i)
        for model, positions in by_model.items():
            runner = self.runners[model]
            for i, (result, key, cached) in zip(positions, self._run(runner, [turns[i] for i in positions])):
                out[i] = self._message(turns[i], result, key, cached, known_passages)
        return [m for m in out if m is not None]

    def _run(self, runner: TurnRunner, turns: Sequence[AgentTurn]) -> list[tuple[TurnResult, str, bool]]:
        requests = [self._request(t) for t in turns]
        keys = [self._key(runner, r) for r in requests]
        results: list[TurnResult | None] = [self._lookup(k) for k in keys]
        todo = [i for i, r in enumerate(results) if r is None]
        self.cached += len(turns) - len(todo)
        if todo:
            fresh = runner.run([requests[i] for i in todo])
            self.calls += len(todo)
            for i, result in zip(todo, fresh):
                results[i] = result
                self._record(runner, turns[i], requests[i], keys[i], result)
        return [(r, k, i not in todo) for i, (r, k) in enumerate(zip(results, keys)) if r is not None]

    def _lookup(self, key: str) -> TurnResult | None:
        hit = self.log.lookup(key) if self.log is not None else None
        if hit is None or "logprobs" not in hit.parsed:
            return None
        return TurnResult(logprobs=tuple(float(v) for v in hit.parsed["logprobs"]), text=hit.raw or "",
                          prompt_tokens=hit.prompt_tokens, completion_tokens=hit.completion_tokens,
                          reused_tokens=int(hit.parsed.get("reused_tokens", 0)), duration_s=hit.duration_s)

    def _record(self, runner: TurnRunner, turn: AgentTurn, request: TurnRequest, key: str,
                result: TurnResult) -> None:
        if self.log is None:
            return
        letters, refuse = distribution_of(result.logprobs, len(turn.letters))
        probabilities = list(letters) + ([refuse] if refuse is not None else [])
        self.log.record(CallRecord(
            key=key, purpose=PURPOSE, backend=runner.name, model=runner.model_id, model_sha256=runner.model_sha256,
            messages=request.messages,
            options={"options": list(request.options), "max_tokens": request.max_tokens,
                     "temperature": request.temperature, "top_p": request.top_p, "seed": request.seed},
            raw=result.text, parsed={"logprobs": list(result.logprobs), "reused_tokens": result.reused_tokens,
                                     "agent": turn.agent.agent_id, "phase": turn.phase},
            probabilities=probabilities, prompt_tokens=result.prompt_tokens,
            completion_tokens=result.completion_tokens, duration_s=result.duration_s, error=result.error),
            CallContext(run_id=self.run_id, case_id=self.item_id, agent=turn.index, round=turn.round))

    def _message(self, turn: AgentTurn, result: TurnResult, key: str, cached: bool,
                 known: Collection[str]) -> GroupMessage:
        common = dict(round=turn.round, phase=turn.phase, agent_id=turn.agent.agent_id, role=turn.agent.role,
                      model=turn.agent.model, note=turn.note, call_key=key, cached=cached,
                      prompt_tokens=result.prompt_tokens, completion_tokens=result.completion_tokens,
                      reused_tokens=result.reused_tokens, duration_s=result.duration_s)
        if result.error is not None:
            return GroupMessage(**common, error=result.error)  # type: ignore[arg-type]
        letters, refuse = distribution_of(result.logprobs, len(turn.letters))
        if refuse is not None and refuse >= self.cfg.refuse_threshold:
            answer = REFUSE
        else:
            seed = turn_seed(self.cfg.seed, turn.agent.agent_id, turn.round, turn.phase)
            answer = turn.letters[decode_letter(letters, temperature=self.cfg.temperature, top_p=self.cfg.top_p,
                                                seed=seed)]
        return GroupMessage(**common, answer=answer, distribution=letters,  # type: ignore[arg-type]
                            refuse_probability=refuse, rationale=result.text,
                            reading=read_rationale(result.text, turn.agent.role, known))
