"""One model on a fleet of OpenAI-compatible servers: concurrency, spreading, retries.

:class:`FleetBackend` is a :class:`~runtime.backends.Backend` over the URLs of a
:class:`~runtime.fleet.FleetConfig` (one :class:`~runtime.http_backend.OpenAICompatBackend`
per URL):

- **Concurrency.**  At most ``concurrency`` requests are in flight at once over the whole
  fleet, however many threads call :meth:`FleetBackend.generate` /
  :meth:`FleetBackend.score_options`; :meth:`FleetBackend.map` runs a function over many
  items on that many threads and returns the results in order (what
  :class:`runtime.fleet_turns.ConcurrentTurns` uses for a group's turns, and the clinical
  panel for an agent's cases of a round).
- **Spreading.**  Each request goes to the URL that is up and has the fewest requests in
  flight, ties broken round-robin, so N servers share the load evenly.  With a
  per-server limit (``per_server`` > 0) a URL never has more requests in flight than
  that: a request waits (holding its concurrency slot) until the URL it would use has
  room, and :meth:`FleetBackend.map` uses no more threads than the fleet has room for.
- **Retries.**  A connection error, a timeout, a reply broken off mid-way or an HTTP 5xx
  (:attr:`~runtime.http_backend.HTTPCallError.retryable`) marks the URL down for
  ``down_for_s`` and the call is tried again, at once on a URL it has not tried yet that
  is up, else after a bounded, jittered pause; after ``max_attempts`` tries it raises
  one :class:`~runtime.backends.BackendError` naming each URL's last error.  An HTTP 4xx
  or a malformed reply is raised at once (it would fail again).  A call retried is still
  one call: the caller sees one reply or one error, so the call log gets one row.

Requests are reads (a chat completion); sending one twice after a reply was lost changes
nothing but the load.  Identity: :attr:`FleetBackend.name` is ``openai-http`` as for one
server, and ``model_sha256`` for a single URL is the same as
:func:`~runtime.http_backend.default_identity`, so cached calls of a one-server key are
still found; several URLs get ``default_identity`` of the sorted, comma-joined URLs.
"""
from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import random
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Iterator, Sequence, TypeVar

from runtime.backends import BackendError
from runtime.fleet import FleetConfig
from runtime.http_backend import HTTPCallError, OpenAICompatBackend, default_identity
from runtime.messages import GenerationOptions, Message, OptionScores, Reply

if TYPE_CHECKING:
    from runtime.turns import TurnRunner

__all__ = ["FleetBackend", "EndpointStats", "fleet_identity"]

_T = TypeVar("_T")
_R = TypeVar("_R")

log = logging.getLogger(__name__)

_RECHECK_S = 0.25  # a request waiting for room looks again this often (servers come back up)


def fleet_identity(config: FleetConfig) -> str:
    """The stand-in ``model_sha256`` of a fleet whose weights' hash is unknown."""
    return default_identity(",".join(sorted(config.urls)), config.model)


@dataclass(frozen=True)
class EndpointStats:
    """What one URL did so far: requests answered, failed, and whether it is up now."""

    url: str
    ok: int
    failed: int
    up: bool


class FleetBackend:
    """A chat model on one or more OpenAI-compatible servers (see the module docstring).

    ``sleep`` and ``rng`` are the pause and the jitter's random source (tests pass fast
    or seeded ones); ``model_sha256`` is the weights' hash when known.
    """

    name = "openai-http"

    def __init__(self, config: FleetConfig, *, model_sha256: str | None = None,
                 sleep: Callable[[float], None] = time.sleep, rng: random.Random | None = None) -> None:
        self.config = config
        self.model_id = config.model
        self.model_sha256 = model_sha256 or fleet_identity(config)
        self.endpoints = [OpenAICompatBackend(u, config.model, api_key=config.api_key, timeout=config.timeout_s,
                                              model_sha256=self.model_sha256, json_mode=config.json_mode)
                          for u in config.urls]
        self._sleep, self._rng = sleep, rng or random.Random()
        self._lock = threading.Lock()
        self._room = threading.Condition(self._lock)  # notified whenever a request finishes
        self._slots = threading.BoundedSemaphore(config.concurrency)
        n = len(self.endpoints)
        self._in_flight, self._down_until = [0] * n, [0.0] * n
        self._ok, self._failed = [0] * n, [0] * n
        self._turn = 0  # round-robin tie-break
        self._local = threading.local()  # the pinned server of this thread's current block

    @property
    def urls(self) -> tuple[str, ...]:
        return self.config.urls

    @property
    def concurrency(self) -> int:
        return self.config.concurrency

    @property
    def per_server(self) -> int:
        """Requests in flight at once on one URL (0 = no limit beyond the concurrency)."""
        return self.config.per_server

    def stats(self) -> list[EndpointStats]:
        """Requests answered and failed per URL, and whether each is up now."""
        now = time.monotonic()
        with self._lock:
            return [EndpointStats(u, self._ok[i], self._failed[i], self._down_until[i] <= now)
                    for i, u in enumerate(self.config.urls)]

    # ------------------------------------------------------------------ choosing
    def _pick(self, tried: set[int]) -> tuple[int, bool]:
        """The URL for the next try, marked in flight, and whether it is up and new to
        this call.  Up and untried first, then up, then the one back up the soonest;
        with a per-server limit, waits until one of the first such group has room."""
        with self._room:
            while True:
                chosen = self._choose(tried)
                if chosen is not None:
                    return chosen
                self._room.wait(_RECHECK_S)

    def _choose(self, tried: set[int]) -> tuple[int, bool] | None:
        """:meth:`_pick`'s choice (the lock held), or None when every URL of the
        preferred group is at the per-server limit."""
        now, n, limit = time.monotonic(), len(self.endpoints), self.config.per_server
        order = [(self._turn + k) % n for k in range(n)]
        up = [i for i in order if self._down_until[i] <= now]
        fresh = [i for i in up if i not in tried]
        home = getattr(self._local, "home", None)
        if home in fresh:  # a pinned block's calls stay on one server while it answers
            fresh = [home]
        pool = fresh or up or [min(order, key=lambda i: self._down_until[i])]
        room = [i for i in pool if not limit or self._in_flight[i] < limit]
        if not room:
            return None
        choice = min(room, key=lambda i: self._in_flight[i])  # stable: round-robin on ties
        self._turn = (choice + 1) % n
        self._in_flight[choice] += 1
        return choice, bool(fresh)

    def _done(self, index: int, *, ok: bool, down: bool = False) -> None:
        """Request finished on URL ``index``: answered (``ok``), or the URL is ``down``."""
        with self._room:
            self._in_flight[index] -= 1
            self._ok[index] += int(ok)
            self._failed[index] += int(not ok)
            self._down_until[index] = time.monotonic() + self.config.down_for_s if down else 0.0
            self._room.notify_all()

    def _fresh_up(self, tried: set[int]) -> bool:
        """Whether a URL this call has not tried is up."""
        now = time.monotonic()
        with self._lock:
            return any(self._down_until[i] <= now for i in range(len(self.endpoints)) if i not in tried)

    def _pause(self, retry: int) -> float:
        """Seconds before retry ``retry`` (1-based): half fixed, half drawn."""
        cap = min(self.config.backoff_max_s, self.config.backoff_s * 2 ** (retry - 1))
        return cap / 2 + self._rng.uniform(0.0, cap / 2)

    # ------------------------------------------------------------------- calling
    def call(self, fn: Callable[[OpenAICompatBackend], _T]) -> _T:
        """``fn(endpoint)`` on a chosen URL, retried as the module docstring says."""
        tried: set[int] = set()
        errors: dict[str, str] = {}
        for attempt in range(1, self.config.max_attempts + 1):
            if attempt > 1 and not self._fresh_up(tried):
                self._sleep(self._pause(attempt - 1))  # no slot is held while waiting
            with self._slots:
                index, _ = self._pick(tried)
                tried.add(index)
                try:
                    result = fn(self.endpoints[index])
                except HTTPCallError as exc:
                    self._done(index, ok=False, down=exc.retryable)
                    if not exc.retryable:
                        raise
                    errors[self.config.urls[index]] = str(exc)
                    log.info("attempt %d of %d failed on %s: %s", attempt, self.config.max_attempts,
                             self.config.urls[index], exc)
                    continue
                except BaseException:
                    self._done(index, ok=False)  # the server answered; its reply was unusable
                    raise
                self._done(index, ok=True)
                if getattr(self._local, "home", -1) is None:
                    self._local.home = index
                return result
        raise self._gave_up(errors)

    def _gave_up(self, errors: dict[str, str]) -> BackendError:
        n = self.config.max_attempts
        last = "; ".join(f"{url}: {msg}" for url, msg in errors.items())
        return BackendError(f"openai:{self.model_id}: gave up after {n} attempt{'s' * (n > 1)} on "
                            f"{len(errors)} of {len(self.endpoints)} server(s) (max_attempts {n}); "
                            f"last error per server: {last}")

    @contextlib.contextmanager
    def pinned(self) -> Iterator[None]:
        """Within the block, this thread's calls go to the server that answered its first
        one while that server is up, waiting for room there under a per-server limit (a
        turn's option scores and rationale share a prompt, which a llama.cpp server keeps
        evaluated between two consecutive requests)."""
        self._local.home = None
        try:
            yield
        finally:
            del self._local.home

    def map(self, fn: Callable[[_T], _R], items: Sequence[_T]) -> list[_R]:
        """``[fn(x) for x in items]`` on up to ``concurrency`` threads (fewer when the
        per-server limit leaves less room: :attr:`FleetConfig.capacity
        <runtime.fleet.FleetConfig.capacity>`), in order.  An exception of ``fn`` is
        raised after every item has finished."""
        capacity = self.config.capacity
        if len(items) <= 1 or capacity == 1:
            return [fn(x) for x in items]
        workers = min(capacity, len(items))
        with concurrent.futures.ThreadPoolExecutor(max_workers=workers,
                                                   thread_name_prefix="openai-fleet") as pool:
            futures = [pool.submit(fn, x) for x in items]
            concurrent.futures.wait(futures)
        return [f.result() for f in futures]

    # ------------------------------------------------------------ the Backend API
    def generate(self, messages: Sequence[Message], options: GenerationOptions) -> Reply:
        return self.call(lambda ep: ep.generate(messages, options))

    def score_options(self, messages: Sequence[Message], options: Sequence[str]) -> OptionScores:
        return self.call(lambda ep: ep.score_options(messages, options))

    def list_models(self) -> list[str]:
        """Model ids listed by ``GET /v1/models`` on a server that is up."""
        return self.call(lambda ep: ep.list_models())

    def turn_runner(self, *, batched: bool = True, n_ctx: int | None = None, width: int = 8) -> TurnRunner:
        """Turns sent concurrently (:class:`runtime.fleet_turns.ConcurrentTurns`), batched
        or not: the servers batch on their side."""
        from runtime.fleet_turns import ConcurrentTurns

        return ConcurrentTurns(self)
