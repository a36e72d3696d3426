"""A scripted turn runner for the group's protocol tests (no model is loaded).

A policy reads each request (the agent id is in its instruction, ``you are R1,``) and
returns the option it answers (a letter or REFUSE) and its rationale; the runner turns
that into log-probabilities that put 0.7 on the chosen option.
"""
from __future__ import annotations

import math
import re
from typing import Callable, Sequence

from runtime.turns import TurnRequest, TurnResult

Policy = Callable[[str, str, TurnRequest], tuple[str, str]]  # (agent id, prompt text, request) -> (answer, text)

_AGENT = re.compile(r"you are ([RKSJ]\d+)")


def agent_of(request: TurnRequest) -> str:
    match = _AGENT.search(request.messages[-1].content)
    return match.group(1) if match else "?"


def round_of(prompt: str) -> int:
    """The round being played: one more than the last completed round heading in the prompt."""
    rounds = [int(r) for r in re.findall(r"^Round (\d+):", prompt, re.MULTILINE)]
    return (max(rounds) + 1) if rounds else 0


def logprobs_for(options: Sequence[str], choice: str, weight: float = 0.7) -> tuple[float, ...]:
    rest = (1.0 - weight) / (len(options) - 1)
    return tuple(math.log(weight if o == choice else rest) for o in options)


class ScriptedTurns:
    """A TurnRunner test double; ``requests`` keeps every request it was asked."""

    name = "scripted-turns"

    def __init__(self, policy: Policy, *, model_id: str = "scripted", sha: str = "1" * 64,
                 fail: Callable[[str], bool] | None = None) -> None:
        self.policy, self.model_id, self.model_sha256, self.fail = policy, model_id, sha, fail
        self.requests: list[TurnRequest] = []
        self.batches: list[int] = []

    def run(self, requests: Sequence[TurnRequest]) -> list[TurnResult]:
        self.batches.append(len(requests))
        out = []
        for request in requests:
            self.requests.append(request)
            agent = agent_of(request)
            if self.fail is not None and self.fail(agent):
                out.append(TurnResult(logprobs=tuple(-math.log(len(request.options)) for _ in request.options),
                                      text="", prompt_tokens=0, completion_tokens=0, reused_tokens=0,
                                      duration_s=0.0, error="scripted failure"))
                continue
            answer, text = self.policy(agent, request.messages[-1].content, request)
            out.append(TurnResult(logprobs=logprobs_for(request.options, answer), text=text,
                                  prompt_tokens=len(request.messages[-1].content.split()),
                                  completion_tokens=len(text.split()), reused_tokens=0, duration_s=0.001))
        return out


def constant(answer: str, text: str = "It fits best.") -> Policy:
    """Every agent answers ``answer`` (REFUSE becomes the first letter for agents that
    cannot refuse)."""
    def policy(agent: str, prompt: str, request: TurnRequest) -> tuple[str, str]:
        return (answer if answer in request.options else request.options[0]), text
    return policy
