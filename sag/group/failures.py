"""Failed model calls: a turn whose call failed fails its item; it never becomes an answer.

A model call can fail (the server is down, the prompt is longer than the model's
context, the reply is broken).  A group whose agent did not answer is not the group that
was configured, so no answer is made up for it: the first step of a debate with a failed
turn stops the item with :class:`ItemFailed`.  A run stores the failed item apart from the
answered ones (with its reason) and is not finished until a later run of the same command
answers it; reports count failed items apart and never as answers.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

from sag.group.transcript import GroupMessage

__all__ = ["ItemFailed", "FailedItem", "failure_reason", "EXIT_FAILED"]

EXIT_FAILED = 1  # the commands' exit status when items got no answer (bad input is status 2)


def failure_reason(failed: Sequence[GroupMessage]) -> str:
    """One line: the first failed turn (agent, role, round, phase, the runtime's error)
    and how many more failed in the same step."""
    first = failed[0]
    reason = (f"the call of {first.agent_id} ({first.role.value}, {first.model}) in round {first.round} "
              f"({first.phase}) failed: {first.error}")
    more = len(failed) - 1
    return reason + (f"; {more} more turn{'s' if more > 1 else ''} of that step failed" if more else "")


@dataclass(frozen=True)
class FailedItem:
    """An item that got no answer: why, what it cost, and the turns played before it stopped."""

    item_id: str
    reason: str
    messages: tuple[GroupMessage, ...] = ()
    model_calls: int = 0
    cached_calls: int = 0
    seconds: float = 0.0

    @property
    def key(self) -> str:
        """The failed unit's key (:class:`common.work.WorkSummary`)."""
        return self.item_id

    @property
    def message(self) -> str:
        return self.reason


class ItemFailed(Exception):
    """A model call of the item failed, so the item has no answer (see the module docstring)."""

    def __init__(self, failure: FailedItem) -> None:
        self.failure = failure
        super().__init__(f"item {failure.item_id!r}: {failure.reason}")

    @property
    def unit_detail(self) -> FailedItem:
        """What the runner records for the failed unit (:func:`common.work.failure_of`)."""
        return self.failure

    @classmethod
    def from_turns(cls, item_id: str, failed: Sequence[GroupMessage],
                   messages: Sequence[GroupMessage]) -> "ItemFailed":
        return cls(FailedItem(item_id, failure_reason(failed), tuple(messages)))

    def with_cost(self, model_calls: int, cached_calls: int, seconds: float) -> "ItemFailed":
        """The same failure with the item's cost filled in."""
        return ItemFailed(replace(self.failure, model_calls=model_calls, cached_calls=cached_calls, seconds=seconds))
