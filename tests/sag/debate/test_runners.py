"""Turn runners per model key: an ``openai:`` key's turns of one step go to its server
fleet concurrently; any other non-llama.cpp backend runs one turn after another."""
from __future__ import annotations

import json

import pytest

from runtime.fleet_turns import ConcurrentTurns
from runtime.testing import ScriptedBackend
from runtime.turns import SequentialTurns
from sag.debate import runners
from tests.runtime.fleet_fakes import fake_fleet


@pytest.mark.parametrize("batched", [True, False])
def test_an_openai_key_gets_concurrent_turns(batched: bool) -> None:
    key = "openai:http://127.0.0.1:9,http://127.0.0.1:10#m"
    runner = runners.build_runners([key, key], batched=batched)[key]
    assert isinstance(runner, ConcurrentTurns) and runner.fleet.urls == ("http://127.0.0.1:9", "http://127.0.0.1:10")
    assert runner.name == "openai-http/sequential"  # the cache keys of calls logged one by one still match


@pytest.mark.parametrize("batched", [True, False])
def test_other_backends_run_one_turn_after_another(batched: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runners, "make_backend", lambda key, **kw: ScriptedBackend(model_id=key))
    runner = runners.build_runners(["fake"], batched=batched)["fake"]
    assert type(runner) is SequentialTurns


def test_a_group_step_is_sent_to_the_fleet_at_once() -> None:
    """A Small Agent Group on a fake server: the turns of one step are in flight
    together, and the item completes without an error."""
    from clinical.questions import parse_jsonl_items
    from sag.group.config import preset
    from sag.debate.answer import answer_item

    item = parse_jsonl_items(json.dumps({"id": "q", "question": "Burning chest pain after meals?",
                                         "options": ["Reflux disease", "Pneumothorax"], "answer": "A"}))[0]
    with fake_fleet("a", delay_s=0.05) as (a,):
        key = f"openai:{a.url}#m"
        cfg = preset("sag-6-no_knowledge").with_changes(backbones=(key,) * 4, t_max=1, rationale_tokens=6)
        result = answer_item(item, cfg, runners.build_runners(cfg.models()), {})
    turns = [m for m in result.outcome.messages if m.phase != "retrieve"]
    assert len(turns) == 6 and not any(m.error for m in turns) and result.answer in ("A", "B")
    assert a.requests == 2 * len(turns) and result.model_calls == 6
    assert a.max_in_flight >= 2  # one after another would never have two in flight
