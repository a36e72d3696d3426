"""The fleet backend against threaded fake servers on 127.0.0.1: the key syntax,
concurrency, spreading, retries on 5xx and refused connections, none on 4xx, the budget,
and one call-log row per call however many tries it took."""
from __future__ import annotations

import random
import threading
from pathlib import Path

import pytest

from common.db import Database
from common.errors import ConfigError
from runtime.backends import BackendError
from runtime.call_log import CallContext, CallLog, CallRecord
from runtime.factory import make_backend
from runtime.fleet import FleetConfig, parse_openai_key
from runtime.fleet_turns import ConcurrentTurns
from runtime.http_backend import HTTPCallError, default_identity
from runtime.http_fleet import FleetBackend
from runtime.logged_batch import LoggedCall, run_logged, run_logged_in_turn
from runtime.messages import GenerationOptions, Message, Role
from runtime.turns import SequentialTurns, TurnRequest, runner_of
from tests.runtime.fleet_fakes import closed_url, fake_fleet

MSG = [Message(Role.USER, "Which letter?")]
OPTS = GenerationOptions(temperature=0.0, max_tokens=4)


class Sleeps:
    """A stand-in for time.sleep that records the pauses."""

    def __init__(self) -> None:
        self.pauses: list[float] = []
        self.lock = threading.Lock()

    def __call__(self, seconds: float) -> None:
        with self.lock:
            self.pauses.append(seconds)


def fleet(urls: list[str], sleeps: Sleeps | None = None, **kw: object) -> FleetBackend:
    return FleetBackend(FleetConfig(urls=tuple(urls), model="m", **kw),  # type: ignore[arg-type]
                        sleep=sleeps or Sleeps(), rng=random.Random(0))


# --------------------------------------------------------------------- the key
def test_key_with_several_urls_and_a_model() -> None:
    cfg = parse_openai_key("openai:http://h1:8000/v1,https://h2:8001/#qwen", env={})
    assert cfg.urls == ("http://h1:8000", "https://h2:8001") and cfg.model == "qwen"
    assert cfg.concurrency == 4 and cfg.max_attempts == 4
    one = parse_openai_key("openai:http://h:1", env={"DCEM_OPENAI_CONCURRENCY": "9", "DCEM_OPENAI_MAX_ATTEMPTS": "2"})
    assert one.urls == ("http://h:1",) and one.model == "default" and one.concurrency == 9 and one.max_attempts == 2
    assert parse_openai_key("openai: http://a:1 , http://b:1 #m", env={}).urls == ("http://a:1", "http://b:1")


@pytest.mark.parametrize("key, field, words", [
    ("openai:http://h1:8000/v1,http://h2:8000/v1:name", "urls", "after '#'"),
    ("openai:http://h1:8000:name", "urls", "after '#'"),
    ("openai:http://h1:8000,,http://h2:8000#m", "urls", "empty URL"),
    ("openai:http://h1:8000/v1,http://h1:8000#m", "urls", "more than once"),
    ("openai:http://h 1:8000#m", "urls", "space"),
    ("openai:h1:8000#m", "urls", "http://"),
    ("openai:http://:8000#m", "urls", "no host"),
    ("openai:http://h1:99999#m", "urls", "port"),
    ("openai:http://h1:8000#", "model", "after '#'"),
    ("openai:#m", "urls", "at least one"),
])
def test_malformed_keys_say_what_is_wrong(key: str, field: str, words: str) -> None:
    with pytest.raises(ConfigError, match=words) as err:
        parse_openai_key(key, env={})
    assert err.value.field == field


def test_bad_settings_name_their_field() -> None:
    with pytest.raises(ConfigError, match="DCEM_OPENAI_CONCURRENCY"):
        parse_openai_key("openai:http://h:1#m", env={"DCEM_OPENAI_CONCURRENCY": "four"})
    with pytest.raises(ConfigError, match="DCEM_OPENAI_MAX_ATTEMPTS"):
        parse_openai_key("openai:http://h:1#m", env={"DCEM_OPENAI_MAX_ATTEMPTS": "0"})
    for field, value in [("concurrency", 0), ("max_attempts", 21), ("backoff_max_s", 0.1), ("timeout_s", 0)]:
        with pytest.raises(ConfigError, match=field):
            FleetConfig(urls=("http://h:1",), **{field: value})  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="tuple"):
        FleetConfig(urls="http://h:1")  # type: ignore[arg-type]


def test_the_per_server_limit_is_read_and_checked() -> None:
    assert parse_openai_key("openai:http://h:1#m", env={}).per_server == 0  # no limit by default
    cfg = parse_openai_key("openai:http://a:1,http://b:1#m", env={"DCEM_OPENAI_PER_SERVER": "1",
                                                                 "DCEM_OPENAI_CONCURRENCY": "8"})
    assert cfg.per_server == 1 and cfg.concurrency == 8 and cfg.capacity == 2
    assert FleetConfig(urls=("http://a:1",), concurrency=3, per_server=5).capacity == 3
    for raw in ("-1", "one", "257", "1.5"):
        with pytest.raises(ConfigError, match=r"DCEM_OPENAI_PER_SERVER: must be a whole number in \[0, 256\] "
                                              r"\(requests in flight per server; 0 = no limit\)") as err:
            parse_openai_key("openai:http://h:1#m", env={"DCEM_OPENAI_PER_SERVER": raw})
        assert err.value.field == "DCEM_OPENAI_PER_SERVER"
    for bad in (-1, 257, True, 1.0):
        with pytest.raises(ConfigError, match="per_server"):
            FleetConfig(urls=("http://h:1",), per_server=bad)  # type: ignore[arg-type]


def test_identity_of_one_url_is_unchanged_and_of_many_ignores_order() -> None:
    single = make_backend("openai:http://h:1/v1#m")
    assert isinstance(single, FleetBackend) and single.name == "openai-http"
    assert single.model_sha256 == default_identity("http://h:1", "m")  # old cached calls still match
    ab = make_backend("openai:http://a:1,http://b:1#m").model_sha256
    assert ab == make_backend("openai:http://b:1/v1,http://a:1#m").model_sha256 != single.model_sha256
    assert isinstance(runner_of(single, batched=False), ConcurrentTurns)
    assert runner_of(single, batched=False).name == SequentialTurns(single).name  # same cache keys as before


# --------------------------------------------------------- spreading, concurrency
def test_requests_spread_evenly_and_stay_within_the_concurrency() -> None:
    with fake_fleet("a", "b", delay_s=0.05) as (a, b):
        backend = fleet([a.url, b.url], concurrency=3)
        replies = backend.map(lambda i: backend.generate(MSG, OPTS), list(range(24)))
        assert [r.text for r in replies].count("a") + [r.text for r in replies].count("b") == 24
        assert a.requests + b.requests == 24 and abs(a.requests - b.requests) <= 2
        assert a.max_in_flight + b.max_in_flight <= 3 + 1  # 3 in flight; +1: one server may see a
        assert max(a.max_in_flight, b.max_in_flight) >= 2    # finished request before it closes
        assert [s.ok for s in backend.stats()] == [a.requests, b.requests]


def test_many_threads_share_one_in_flight_limit() -> None:
    with fake_fleet("a", delay_s=0.05) as (a,):
        backend = fleet([a.url], concurrency=2)
        threads = [threading.Thread(target=backend.generate, args=(MSG, OPTS)) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert a.requests == 8 and a.max_in_flight == 2


@pytest.mark.parametrize("limit", [1, 2])
def test_the_per_server_limit_holds_however_many_threads_call(limit: int) -> None:
    """At most ``limit`` requests in flight on each server, through map and through many
    threads calling at once (a request waits for a server with room), and both used."""
    with fake_fleet("a", "b", delay_s=0.03) as (a, b):
        backend = fleet([a.url, b.url], concurrency=8, per_server=limit)
        replies = backend.map(lambda i: backend.generate(MSG, OPTS).text, list(range(12)))
        threads = [threading.Thread(target=backend.score_options, args=(MSG, ["A", "B"])) for _ in range(12)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert sorted(set(replies)) == ["a", "b"] and a.requests + b.requests == 24
    assert a.max_in_flight == b.max_in_flight == limit  # never more, and the room was used
    assert [s.ok for s in backend.stats()] == [a.requests, b.requests]


def test_the_per_server_limit_waits_out_a_dead_server_and_keeps_turns_together() -> None:
    """A refused server is passed over; every request waits for room on the live one;
    a turn's two calls still share a server."""
    with fake_fleet("a", "b", delay_s=0.01) as (a, b):
        backend = fleet([closed_url(), a.url, b.url], concurrency=6, per_server=1)
        requests = [TurnRequest(messages=(Message(Role.USER, f"case {i}"),), options=("A", "B")) for i in range(8)]
        results = ConcurrentTurns(backend).run(requests)
    assert all(r.error is None for r in results) and a.max_in_flight == b.max_in_flight == 1
    assert len(a.seen) + len(b.seen) == 16
    for i in range(8):
        assert sorted((a.seen.count(f"case {i}"), b.seen.count(f"case {i}"))) == [0, 2]


def test_map_keeps_the_order_of_its_items() -> None:
    backend = fleet(["http://127.0.0.1:9"], concurrency=4)
    assert backend.map(lambda x: x * x, list(range(10))) == [x * x for x in range(10)]


# ------------------------------------------------------------------- retries
def test_a_5xx_is_retried_with_bounded_jittered_pauses() -> None:
    sleeps = Sleeps()
    with fake_fleet("a") as (a,):
        a.fail = [503, 500]
        reply = fleet([a.url], sleeps, backoff_s=0.2, backoff_max_s=0.3).generate(MSG, OPTS)
    assert reply.text == "a" and a.requests == 3
    assert len(sleeps.pauses) == 2
    assert 0.1 <= sleeps.pauses[0] <= 0.2 and 0.15 <= sleeps.pauses[1] <= 0.3  # half fixed, half drawn


def test_a_4xx_is_not_retried() -> None:
    sleeps = Sleeps()
    with fake_fleet("a", "b") as (a, b):
        a.fail, b.fail = [400], [400]
        with pytest.raises(HTTPCallError, match="HTTP 400") as err:
            fleet([a.url, b.url], sleeps).score_options(MSG, ["A", "B"])
    assert err.value.status == 400 and not err.value.retryable
    assert a.requests + b.requests == 1 and sleeps.pauses == []


def test_a_refused_url_is_passed_over_without_waiting() -> None:
    sleeps = Sleeps()
    with fake_fleet("b") as (b,):
        dead = closed_url()
        backend = fleet([dead, b.url], sleeps)
        texts = [backend.generate(MSG, OPTS).text for _ in range(6)]
    assert texts == ["b"] * 6 and b.requests == 6 and sleeps.pauses == []
    dead_stats, live_stats = backend.stats()
    assert dead_stats.failed == 1 and not dead_stats.up  # tried once, then skipped while down
    assert live_stats.ok == 6 and live_stats.up


def test_a_5xx_moves_to_the_other_server() -> None:
    sleeps = Sleeps()
    with fake_fleet("a", "b") as (a, b):
        a.fail = [502]
        backend = fleet([a.url, b.url], sleeps)
        assert backend.generate(MSG, OPTS).text == "b"
    assert a.requests == 1 and b.requests == 1 and sleeps.pauses == []


def test_the_budget_ends_in_one_clear_error() -> None:
    sleeps = Sleeps()
    with fake_fleet("a") as (a,):
        a.fail = [500] * 10
        dead = closed_url()
        backend = fleet([a.url, dead], sleeps, max_attempts=5, backoff_s=0.1, backoff_max_s=0.4)
        with pytest.raises(BackendError, match="gave up after 5 attempts on 2 of 2 server") as err:
            backend.generate(MSG, OPTS)
    text = str(err.value)
    assert "HTTP 500" in text and "connection refused" in text and a.url[:-3] in text and dead[:-3] in text
    assert len(sleeps.pauses) == 3  # the second try went to the untried URL at once
    assert all(p <= 0.4 for p in sleeps.pauses) and sum(sleeps.pauses) <= 3 * 0.4


# -------------------------------------------------- one call-log row per call
def test_concurrent_turns_return_one_result_per_request_in_order() -> None:
    with fake_fleet("a", "b", delay_s=0.01) as (a, b):
        a.fail = [500, 503, 500]
        backend = fleet([a.url, b.url, closed_url()], concurrency=4, max_attempts=3)
        requests = [TurnRequest(messages=(Message(Role.USER, f"case {i}"),), options=("A", " B"), seed=i)
                    for i in range(12)]
        results = ConcurrentTurns(backend).run(requests)
    assert len(results) == 12 and all(r.error is None and r.text in ("a", "b") for r in results)
    assert all(r.logprobs == (-0.1, -2.5) for r in results)
    failed = 3 - len(a.fail)  # 5xx replies a gave before it was marked down
    assert failed >= 1 and a.requests + b.requests == 24 + failed  # score + generate per turn, + failed tries
    assert sum(s.failed for s in backend.stats()) >= failed


def test_a_turns_two_calls_go_to_one_server() -> None:
    with fake_fleet("a", "b", delay_s=0.01) as (a, b):
        backend = fleet([a.url, b.url], concurrency=2)
        requests = [TurnRequest(messages=(Message(Role.USER, f"case {i}"),), options=("A", "B")) for i in range(10)]
        results = ConcurrentTurns(backend).run(requests)
    assert all(r.error is None for r in results) and len(a.seen) + len(b.seen) == 20
    for i in range(10):
        assert sorted((a.seen.count(f"case {i}"), b.seen.count(f"case {i}"))) == [0, 2]
    assert a.seen and b.seen  # and the turns still use both servers


def _row(key: str, value: object, error: BaseException | None) -> CallRecord:
    return CallRecord(key=key, purpose="test", backend="openai-http", model="m", model_sha256="x", messages=MSG,
                      options={}, raw=None if value is None else str(value), parsed={}, probabilities=[],
                      prompt_tokens=None, completion_tokens=None, duration_s=None,
                      error=None if error is None else str(error))


def test_logged_batch_writes_one_row_per_call_retried_failed_or_repeated(tmp_path: Path) -> None:
    """Concurrent completions of the same key write once; a call retried after 5xx and a
    call that failed for good are each logged once; a second pass makes no call."""
    db = Database(tmp_path / "log.duckdb")
    log = CallLog(db)
    with fake_fleet("a", "b", delay_s=0.02) as (a, b):
        a.fail, b.fail = [500, 500], [503]
        backend = fleet([a.url, b.url], concurrency=4, max_attempts=4)
        bad = fleet([closed_url()], max_attempts=2)

        def job(i: int) -> LoggedCall[str]:
            key = f"k{i % 6}"  # 12 calls, 6 distinct keys, each asked twice at once
            use = bad if i % 6 == 5 else backend
            return LoggedCall(key, lambda: use.generate(MSG, OPTS).text,
                              lambda v, e, key=key: _row(key, v, e), CallContext(run_id="r", case_id=str(i)))

        out = run_logged(log, [job(i) for i in range(12)], backend.map)
        sent = a.requests + b.requests
    rows = db.con.execute("SELECT cache_key, count(*), min(error) FROM llm_calls GROUP BY 1 ORDER BY 1").fetchall()
    assert [(k, n) for k, n, _ in rows] == [(f"k{i}", 1) for i in range(6)]
    assert rows[5][2] is not None and "gave up after 2 attempts" in rows[5][2]
    assert all(e is None for _, _, e in rows[:5])
    assert sent == 5 + 3  # five distinct good calls, three of them after a 5xx
    assert [o.shared for o in out] == [False] * 6 + [True] * 6
    assert all(o.value in ("a", "b") for o in out if o.error is None) and out[5].error is not None
    again = run_logged(log, [job(i) for i in range(12) if i % 6 != 5], backend.map)
    assert all(o.cached is not None for o in again) and log.count() == 6


def test_logged_in_turn_answers_a_repeated_key_as_one_call_after_another(tmp_path: Path) -> None:
    """A key repeated in the batch is answered by the log when its first call was logged
    without error, and asked again when it failed; a None row logs nothing."""
    log = CallLog(Database(tmp_path / "turn.duckdb"))
    asked: list[str] = []
    failures = {"k1": 1, "k2": 9}  # k1 fails once, k2 always

    def call(key: str) -> str:
        asked.append(key)
        if failures.get(key, 0) > 0:
            failures[key] -= 1
            raise BackendError(f"{key} failed")
        return key.upper()

    def job(key: str) -> LoggedCall[str]:
        record = (lambda v, e: None if e is not None else _row(key, v, e)) if key == "k2" else \
            (lambda v, e: _row(key, v, e))
        return LoggedCall(key, lambda: call(key), record)

    with fake_fleet("a") as (a,):
        out = run_logged_in_turn(log, [job(k) for k in ("k0", "k1", "k0", "k1", "k2", "k0")], fleet([a.url]).map)
    assert sorted(asked) == ["k0", "k1", "k1", "k2"]  # k0 once, k1 again after its failure
    assert [o.cached is not None for o in out] == [False, False, True, False, False, True]
    assert out[1].error is not None and out[3].value == "K1" and out[4].error is not None
    assert not any(o.shared for o in out)
    rows = log.db.con.execute("SELECT cache_key, error IS NULL FROM llm_calls ORDER BY 1, 2").fetchall()
    assert rows == [("k0", True), ("k1", False), ("k1", True)]  # no row for k2's failure
