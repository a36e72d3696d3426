"""A group's turns sent concurrently to a fleet of OpenAI-compatible servers.

:class:`ConcurrentTurns` is :class:`~runtime.turns.SequentialTurns` (each turn: the option
scores, then the rationale; a failed call becomes that turn's ``error``) with the turns
of one ``run`` spread over up to ``concurrency`` threads by
:meth:`runtime.http_fleet.FleetBackend.map`; a turn's two calls go to the same server
(:meth:`~runtime.http_fleet.FleetBackend.pinned`), which may reuse the prompt it has just
evaluated.  Results come back in request order and
each request is sent as one turn, so a caller that logs the results after ``run``
returns (``sag.debate.engine.TurnEngine``) writes exactly one row per turn from its own thread.

Its :attr:`name` is the sequential runner's (``openai-http/sequential``): the name is
part of the call log's cache keys and the calls are the same ones, only sent at the same
time, so calls logged by either runner answer the other's.

:meth:`FleetBackend.turn_runner <runtime.http_fleet.FleetBackend.turn_runner>` gives
this runner, batched or not.
"""
from __future__ import annotations

from typing import Sequence

from runtime.http_fleet import FleetBackend
from runtime.turns import SequentialTurns, TurnRequest, TurnResult

__all__ = ["ConcurrentTurns"]


class ConcurrentTurns(SequentialTurns):
    """Turns on a :class:`FleetBackend`, up to its ``concurrency`` at once."""

    def __init__(self, backend: FleetBackend) -> None:
        super().__init__(backend)
        self.fleet = backend

    def run(self, requests: Sequence[TurnRequest]) -> list[TurnResult]:
        """Score and generate every request, concurrently; results in request order."""
        return self.fleet.map(self._pinned_turn, list(requests))

    def _pinned_turn(self, request: TurnRequest) -> TurnResult:
        """One turn, both of its calls on one server while it answers."""
        with self.fleet.pinned():
            return self._one(request)

