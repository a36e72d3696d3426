"""One item's result: how the group's debate ended, what it cost, and the mediator's rounds."""
from __future__ import annotations

from dataclasses import dataclass

from clinical.questions import QuestionItem
from sag.debate.hybrid import DebateOutcome
from sag.debate.mediated import MediatorRound
from sag.group.transcript import ESCALATE, REFUSE

__all__ = ["ItemResult"]


@dataclass(frozen=True)
class ItemResult:
    """An answered item.

    model_calls : turns that reached a model; cached_calls : turns answered from the call
    log; seconds : wall time of the item; refusal_score : see :func:`sag.debate.decide.refusal_score`.
    """

    item: QuestionItem
    outcome: DebateOutcome
    mediator: tuple[MediatorRound, ...] = ()
    model_calls: int = 0
    cached_calls: int = 0
    seconds: float = 0.0
    refusal_score: float = 0.0

    @property
    def answer(self) -> str:
        return self.outcome.answer

    @property
    def correct(self) -> bool:
        return self.outcome.answer == self.item.answer

    @property
    def refused(self) -> bool:
        return self.outcome.answer == REFUSE

    @property
    def escalated(self) -> bool:
        return self.outcome.answer == ESCALATE

    @property
    def prompt_tokens(self) -> int:
        return sum(m.prompt_tokens for m in self.outcome.messages if not m.cached)

    @property
    def completion_tokens(self) -> int:
        return sum(m.completion_tokens for m in self.outcome.messages if not m.cached)
