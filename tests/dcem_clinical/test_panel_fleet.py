"""A clinical panel whose agents' model is served by a server fleet sends each agent's
cases of a round (and its cue calls of a steer) concurrently, and keeps exactly what one
call after another keeps: turns, vectors, errors, cache hits, cues and call-log rows.

The fleet is a real :class:`runtime.http_fleet.FleetBackend` (its slots, server choice and
per-server limit) whose servers are replaced by scripted endpoints that pause and count
the requests in flight; the reference run uses the same script behind a plain backend of
the same name and identity, so both runs have the same cache keys but the reference takes
the panel's one-after-another path.  The last test uses threaded fake HTTP servers.
"""
from __future__ import annotations

import json
import math
import threading
import time
import zlib
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pytest

from clinical.datasets import ClinicalCase
from dcem.core.config import MediatorConfig
from dcem.core.deliberation import deliberate
from dcem.core.panel import Panel, three_level_loss
from dcem.store.database import Store
from dcem_clinical.agent import DiagnosticAgent
from dcem_clinical.call_log import CallContext, LoggedAgent
from dcem_clinical.few_shot import FewShot, FewShotConfig
from dcem_clinical.informed import RecordingAgent
from dcem_clinical.panel import FreeTalkPanel, LlmPanel
from runtime.backends import BackendError
from runtime.fleet import FleetConfig
from runtime.http_fleet import FleetBackend
from runtime.messages import GenerationOptions, Message, OptionScores, Reply
from runtime.testing import ScriptedBackend
from tests.runtime.fleet_fakes import fake_fleet

LABELS = ("Anaphylaxis", "GERD", "URTI")
CASE_IDS = ["c1", "c2", "c3", "c4", "c5", "c6"]
TEXTS = ["runny nose and sore throat", "itchy rash after shrimp, wheeze", "burning chest pain after meals",
         "runny nose and sore throat",  # the same text as c1: one model call, then the log answers
         "BROKEN: the server rejects this case", "garbled: a reply that is not JSON"]
SOLVED = [ClinicalCase("s1", 0, "hives and lip swelling after peanuts"),
          ClinicalCase("s2", 1, "heartburn at night after meals"),
          ClinicalCase("s3", 2, "sneezing, cough and mild fever")]


def _case(messages: Sequence[Message]) -> str:
    return messages[-1].content.split("Case:\n", 1)[-1]


def _scores(messages: Sequence[Message], options: Sequence[str]) -> list[float]:
    text = _case(messages)
    if "BROKEN" in text:
        raise BackendError("the server rejected the prompt")
    if "costlier miss" in text:  # a steered agent moves to the alternative
        return [math.log(0.8), math.log(0.1), math.log(0.1)]
    lean = zlib.crc32(text.split("\n\n")[0].encode()) % 3
    probs = [0.2, 0.2, 0.2]
    probs[lean] += 0.4
    return [math.log(p) for p in probs]


def _replies(messages: Sequence[Message]) -> str:
    text = _case(messages)
    if "List up to three short findings" in text:
        if "shrimp" in text:
            raise BackendError("no cues for this one")
        return "- hives\n- wheeze"
    if "garbled" in text:
        return "not json at all"
    lean = zlib.crc32(text.encode()) % 3
    return json.dumps({"predicted_label": LABELS[lean],
                       "probabilities": {lab: 0.6 if i == lean else 0.2 for i, lab in enumerate(LABELS)}})


class Gauge:
    """Requests in flight at once, and the most seen."""

    def __init__(self) -> None:
        self.now = self.most = self.calls = 0
        self.lock = threading.Lock()

    def __enter__(self) -> None:
        with self.lock:
            self.now += 1
            self.calls += 1
            self.most = max(self.most, self.now)

    def __exit__(self, *exc: object) -> None:
        with self.lock:
            self.now -= 1


class Endpoint:
    """A scripted server of the fake fleet: pauses, then answers from the script."""

    def __init__(self, script: ScriptedBackend, gauge: Gauge, delay_s: float) -> None:
        self.script, self.gauge, self.delay_s = script, gauge, delay_s

    def generate(self, messages: Sequence[Message], options: GenerationOptions) -> Reply:
        with self.gauge:
            time.sleep(self.delay_s)
            return self.script.generate(messages, options)

    def score_options(self, messages: Sequence[Message], options: Sequence[str]) -> OptionScores:
        with self.gauge:
            time.sleep(self.delay_s)
            return self.script.score_options(messages, options)


def fake_fleet_backend(gauge: Gauge, *, servers: int = 2, concurrency: int = 4, per_server: int = 0,
                       delay_s: float = 0.01) -> FleetBackend:
    backend = FleetBackend(FleetConfig(urls=tuple(f"http://fake-{i}:8000" for i in range(servers)), model="m",
                                       concurrency=concurrency, per_server=per_server))
    script = ScriptedBackend(_replies, scores=_scores)
    backend.endpoints = [Endpoint(script, gauge, delay_s) for _ in range(servers)]  # type: ignore[misc]
    return backend


class PlainBackend:
    """The same script under the fleet's name and identity, not a fleet: the panel's
    one-after-another path with the same cache keys."""

    name = "openai-http"

    def __init__(self, like: FleetBackend, gauge: Gauge) -> None:
        self.model_id, self.model_sha256 = like.model_id, like.model_sha256
        self.endpoint = Endpoint(ScriptedBackend(_replies, scores=_scores), gauge, 0.0)
        self.order: list[str] = []

    def generate(self, messages: Sequence[Message], options: GenerationOptions) -> Reply:
        self.order.append("generate " + _case(messages)[:30])
        return self.endpoint.generate(messages, options)

    def score_options(self, messages: Sequence[Message], options: Sequence[str]) -> OptionScores:
        self.order.append("score " + _case(messages)[:30])
        return self.endpoint.score_options(messages, options)


def _members(backends: Sequence[Any], store: Store) -> list[LoggedAgent]:
    few = FewShot(SOLVED, FewShotConfig(k=2))
    scored = RecordingAgent(DiagnosticAgent(backends[0], LABELS, name="Agent A", few_shot=few), store)
    json_mode = LoggedAgent(DiagnosticAgent(backends[1], LABELS, name="Agent B", mode="json"), store)
    return [scored, json_mode]


def _mediator() -> Panel:
    conf = np.full((2, 3, 3), 0.15) + 0.55 * np.eye(3)
    return Panel(LABELS, conf / conf.sum(-1, keepdims=True), np.full(3, 1 / 3), three_level_loss(3, [0], 5.0))


CFG = MediatorConfig(t_max=4, eps_safe=0.1, eps_low=9.0, s_asym=0.3)


def _play(backends: Sequence[Any], store: Store) -> tuple[LlmPanel, Any]:
    panel = LlmPanel(_members(backends, store), CASE_IDS, TEXTS, run_id="r")
    return panel, deliberate(_mediator(), panel, CFG)


def _turns(panel: LlmPanel) -> list[dict[str, Any]]:
    return [{k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in t.items()} for t in panel.turns]


def _rows(store: Store) -> list[tuple[Any, ...]]:
    """Every logged call without its id, time and duration (a pause of the fake server)."""
    return store.con.execute(
        "SELECT cache_key, run_id, case_id, agent, round, purpose, backend, model, model_sha256, messages_json, "
        "options_json, raw_reply, parsed_json, probabilities, prompt_tokens, completion_tokens, error "
        "FROM llm_calls ORDER BY round, agent, purpose, case_id, cache_key, error NULLS FIRST").fetchall()


def test_a_fleet_panel_keeps_exactly_what_one_call_after_another_keeps(tmp_path: Path) -> None:
    gauge, plain_gauge = Gauge(), Gauge()
    fleet = fake_fleet_backend(gauge)
    with Store(tmp_path / "fleet.duckdb") as fleet_store, Store(tmp_path / "plain.duckdb") as plain_store:
        panel, run = _play([fleet, fleet], fleet_store)
        plain = PlainBackend(fleet, plain_gauge)
        ref, ref_run = _play([plain, plain], plain_store)
        assert gauge.most >= 2 and plain_gauge.most == 1  # sent together, and one after another
        assert gauge.calls == plain_gauge.calls
        np.testing.assert_array_equal(run.probabilities, ref_run.probabilities)
        np.testing.assert_array_equal(run.trajectory.action, ref_run.trajectory.action)
        assert _turns(panel) == _turns(ref)
        assert (panel.calls, panel.errors, panel.cache_hits) == (ref.calls, ref.errors, ref.cache_hits)
        assert panel.cues == ref.cues and _rows(fleet_store) == _rows(plain_store)
        # what the script exercised: a failed call, a bad JSON reply, a cache hit inside a
        # round, few-shot examples in the parsed row, steers with and without cues
        errors = [t["error"] for t in panel.turns if t["error"]]
        assert any(e.startswith("call failed: BackendError: the server rejected") for e in errors)
        assert any("scored fallback" in e for e in errors)
        assert panel.cache_hits >= 4 and [t["cached"] for t in panel.turns[:6]] == [False] * 3 + [True, False, False]
        parsed = [json.loads(r[12]) for r in _rows(fleet_store) if r[3] == 0 and r[5] == "classify" and not r[16]]
        assert parsed and all(len(p["examples"]) == 2 for p in parsed)
        steered = int((run.trajectory.action == 1).sum())
        assert steered >= 2 and len(panel.cues) == steered and [] in panel.cues.values()
        assert ["hives", "wheeze"] in panel.cues.values()
        # the same experiment again: the log answers every call but those that failed or
        # were unusable (they are asked again, as one after another would)
        again, _ = _play([fleet, fleet], fleet_store)
        assert all(t["cached"] != bool(t["error"]) for t in again.turns)
        assert [t["probabilities"].tolist() for t in again.turns] == [t["probabilities"].tolist() for t in panel.turns]


def test_members_without_a_fleet_keep_their_calls_and_order(tmp_path: Path) -> None:
    """Agent A on the fleet, agent B on a plain backend: B is asked exactly what and in
    the order it is asked when no member has a fleet (what a KV cache depends on)."""
    gauge = Gauge()
    fleet = fake_fleet_backend(gauge)
    with Store(tmp_path / "mixed.duckdb") as mixed_store, Store(tmp_path / "plain.duckdb") as plain_store:
        b_mixed = PlainBackend(fleet, Gauge())
        mixed, mixed_run = _play([fleet, b_mixed], mixed_store)
        plain_a, b_plain = PlainBackend(fleet, Gauge()), PlainBackend(fleet, Gauge())
        ref, ref_run = _play([plain_a, b_plain], plain_store)
        assert b_mixed.order == b_plain.order and len(b_plain.order) > len(TEXTS)
        assert _turns(mixed) == _turns(ref) and mixed.cues == ref.cues
        np.testing.assert_array_equal(mixed_run.probabilities, ref_run.probabilities)
        assert _rows(mixed_store) == _rows(plain_store)


def test_free_discussion_on_a_fleet_equals_one_after_another(tmp_path: Path) -> None:
    gauge = Gauge()
    fleet = fake_fleet_backend(gauge, servers=3, concurrency=3, per_server=1)
    with Store(tmp_path / "fleet.duckdb") as fleet_store, Store(tmp_path / "plain.duckdb") as plain_store:
        free = FreeTalkPanel(_members([fleet, fleet], fleet_store), CASE_IDS, TEXTS, run_id="r")
        plain = PlainBackend(fleet, Gauge())
        ref = FreeTalkPanel(_members([plain, plain], plain_store), CASE_IDS, TEXTS, run_id="r")
        np.testing.assert_array_equal(free.rounds(3), ref.rounds(3))
        assert _turns(free) == _turns(ref) and _rows(fleet_store) == _rows(plain_store)
    assert 2 <= gauge.most <= 3


def test_cues_many_answers_logs_and_fails_as_cues_one_by_one(tmp_path: Path) -> None:
    fleet = fake_fleet_backend(Gauge())
    asks = [("itchy rash", "URTI", "Anaphylaxis"), ("wheeze after shrimp", "URTI", "Anaphylaxis"),
            ("itchy rash", "URTI", "Anaphylaxis"), ("itchy rash", "GERD", "Anaphylaxis")]
    with Store(tmp_path / "fleet.duckdb") as fleet_store, Store(tmp_path / "plain.duckdb") as plain_store:
        agent = LoggedAgent(DiagnosticAgent(fleet, LABELS), fleet_store)
        many = agent.cues_many([(*a, CallContext("r", f"c{i}", 0, 2)) for i, a in enumerate(asks)])
        plain = LoggedAgent(DiagnosticAgent(PlainBackend(fleet, Gauge()), LABELS), plain_store)
        one_by_one = []
        for i, a in enumerate(asks):
            try:
                one_by_one.append(plain.cues(*a, context=CallContext("r", f"c{i}", 0, 2)))
            except BackendError as exc:
                one_by_one.append(exc)
        assert [(m.value, m.cached) for m in many if m.error is None] == \
            [r for r in one_by_one if not isinstance(r, Exception)]
        assert [m.cached for m in many] == [False, False, True, False]
        assert isinstance(many[1].error, BackendError) and isinstance(one_by_one[1], BackendError)
        assert _rows(fleet_store) == _rows(plain_store) and len(_rows(fleet_store)) == 2  # no row for a failure
        assert agent.last_key == many[-1].key and len({m.key for m in many}) == 3


@pytest.mark.parametrize("per_server", [0, 1])
def test_a_panel_over_fake_http_servers_sends_a_round_concurrently(tmp_path: Path, per_server: int) -> None:
    with fake_fleet("a", "b", delay_s=0.05) as (a, b):
        backend = FleetBackend(FleetConfig(urls=(a.url, b.url), model="m", concurrency=4, per_server=per_server))
        with Store(tmp_path / "http.duckdb") as store:
            agent = LoggedAgent(DiagnosticAgent(backend, LABELS), store)
            panel = LlmPanel([agent], [f"c{i}" for i in range(8)], [f"case number {i}" for i in range(8)], run_id="r")
            out = panel.report(1)
            rows = store.con.execute("SELECT case_id FROM llm_calls ORDER BY case_id").fetchall()
    assert a.requests + b.requests == 8 and a.requests and b.requests
    assert [r[0] for r in rows] == [f"c{i}" for i in range(8)] and panel.errors == 0
    assert [t["case"] for t in panel.turns] == list(range(8)) and (out.argmax(-1) == 0).all()
    if per_server:
        assert a.max_in_flight == b.max_in_flight == 1
    else:
        assert a.max_in_flight + b.max_in_flight >= 3


STOP_CFG = MediatorConfig(t_max=4, eps_safe=2.0, eps_low=9.0, s_asym=0.3, m_safe=0.0)


def test_a_fleet_panel_that_stops_decided_cases_asks_only_the_live_ones(tmp_path: Path) -> None:
    gauge, plain_gauge = Gauge(), Gauge()
    fleet = fake_fleet_backend(gauge)
    with Store(tmp_path / "fleet.duckdb") as fleet_store, Store(tmp_path / "plain.duckdb") as plain_store:
        panel = LlmPanel(_members([fleet, fleet], fleet_store), CASE_IDS, TEXTS, run_id="r")
        run = deliberate(_mediator(), panel, STOP_CFG, stop_when_decided=True)
        plain = PlainBackend(fleet, plain_gauge)
        ref = LlmPanel(_members([plain, plain], plain_store), CASE_IDS, TEXTS, run_id="r")
        ref_run = deliberate(_mediator(), ref, STOP_CFG, stop_when_decided=True)
        ends = run.outcome_round
        assert (ends < STOP_CFG.t_max).any() and (ends > 1).any()  # some cases stop early, some go on
        np.testing.assert_array_equal(run.probabilities, ref_run.probabilities)
        assert _turns(panel) == _turns(ref) and _rows(fleet_store) == _rows(plain_store)
        for case in range(len(CASE_IDS)):  # each agent answered a case up to its outcome round only
            rounds = sorted({t["round"] for t in panel.turns if t["case"] == case})
            assert rounds == list(range(1, int(ends[case]) + 1))
