"""The fleet backend on two real llama_cpp.server processes (SmolLM2-135M, one thread each):
requests spread over both, the same results as one server at temperature 0, and a server
killed mid-run: the run finishes on the other with one call-log row per turn."""
from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest

from common.db import Database
from runtime.call_log import CallLog
from runtime.fleet import FleetConfig
from runtime.fleet_turns import ConcurrentTurns
from runtime.http_fleet import FleetBackend
from tests.runtime.llama_servers import LlamaServer, start_servers, stop_servers

pytestmark = pytest.mark.slow

QUESTIONS = [("Burning chest pain after meals, worse lying down?", ["Reflux disease", "Pneumothorax"]),
             ("Sudden one-sided weakness and slurred speech?", ["Stroke", "Migraine"]),
             ("Fever, stiff neck and a rash that does not blanch?", ["Meningitis", "Tension headache"])]


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[LlamaServer]]:
    started = start_servers(tmp_path_factory.mktemp("fleet_servers"), 2)
    try:
        yield started
    finally:
        stop_servers(started)


def _run(urls: list[str], db_path: Path, *, concurrency: int = 4,
         during: "threading.Thread | None" = None) -> tuple[list[tuple[object, ...]], FleetBackend, Database]:
    """Play the questions with a 4-agent group on the fleet, logging every call; the
    turns' (item, phase, agent, answer, distribution, rationale, error) in order."""
    from clinical.questions import parse_jsonl_items
    from sag.group.config import preset
    from sag.debate.answer import answer_item

    backend = FleetBackend(FleetConfig(urls=tuple(urls), model="smollm2", concurrency=concurrency,
                                       backoff_s=0.05, backoff_max_s=0.2, timeout_s=120))
    key = f"openai:{urls[0]}#smollm2"
    cfg = preset("sag-6-no_knowledge").with_changes(backbones=(key,) * 4, t_max=1, rationale_tokens=6)
    db = Database(db_path)
    log = CallLog(db)
    rows: list[tuple[object, ...]] = []
    if during is not None:
        during.start()
    for n, (question, options) in enumerate(QUESTIONS):
        item = parse_jsonl_items(json.dumps({"id": f"q{n}", "question": question, "options": options,
                                             "answer": "A"}))[0]
        result = answer_item(item, cfg, {key: ConcurrentTurns(backend)}, {}, log=log, run_id="fleet")
        rows += [(item.item_id, m.round, m.phase, m.agent_id, m.answer, m.distribution, m.rationale, m.error)
                 for m in result.outcome.messages if m.phase != "retrieve"]
    return rows, backend, db


def _same(a: list[tuple[object, ...]], b: list[tuple[object, ...]]) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x[:5] == y[:5] and x[6:] == y[6:]  # item, round, phase, agent, answer, rationale, error
        assert x[5] == pytest.approx(y[5], abs=1e-4)  # the letter distribution


def _log_is_one_row_per_turn(db: Database, turns: int) -> None:
    rows = db.con.execute("SELECT count(*), count(DISTINCT cache_key), count(error) FROM llm_calls").fetchone()
    assert rows == (turns, turns, 0)


def test_two_servers_share_the_work_and_agree_with_one(servers: list[LlamaServer], tmp_path: Path) -> None:
    before = [s.requests_served() for s in servers]
    single, _, db1 = _run([servers[0].url], tmp_path / "one.duckdb", concurrency=1)
    served_single = [s.requests_served() - b for s, b in zip(servers, before)]
    both, two, db2 = _run([s.url for s in servers], tmp_path / "two.duckdb")
    served_both = [s.requests_served() - b - d for s, b, d in zip(servers, before, served_single)]
    assert len(single) == 6 * len(QUESTIONS) and not any(r[-1] for r in single)
    _same(both, single)  # temperature 0: the same answers, distributions and rationales
    requests = 2 * len(single)  # option scores + rationale per turn
    assert served_single == [requests, 0]
    assert [s.ok for s in two.stats()] == served_both  # counted by the client and by each server
    assert sum(served_both) == requests and min(served_both) >= requests // 4
    _log_is_one_row_per_turn(db1, len(single))
    _log_is_one_row_per_turn(db2, len(both))


def test_a_server_killed_mid_run_loses_and_doubles_no_row(servers: list[LlamaServer], tmp_path: Path) -> None:
    """Runs last: it kills the second server."""
    reference, _, _ = _run([servers[0].url], tmp_path / "ref.duckdb", concurrency=1)
    start = servers[1].requests_served()
    victim = servers[1]

    def kill_after_a_few() -> None:
        deadline = time.monotonic() + 120
        while victim.requests_served() - start < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        victim.proc.kill()

    killer = threading.Thread(target=kill_after_a_few, daemon=True)
    rows, fleet, db = _run([s.url for s in servers], tmp_path / "killed.duckdb", during=killer)
    killer.join(timeout=130)
    assert victim.proc.poll() is not None  # it really died mid-run
    stats = fleet.stats()
    # the victim answered before it died; a reply it counted as served may still be lost
    # with its connection at the kill, so the client's count can be below the server's 3
    assert stats[1].ok >= 1 and stats[1].failed >= 1 and stats[0].ok > stats[1].ok
    assert not any(r[-1] for r in rows)  # every turn answered, by the survivor after the kill
    _same(rows, reference)
    _log_is_one_row_per_turn(db, len(reference))
