"""The hybrid debate with scripted agents: rounds, stop, refusal, ablations, prompts."""
from __future__ import annotations

from pathlib import Path

import pytest

from clinical.questions import QuestionItem, load_benchmark
from sag.group.config import AgentRole, preset
from sag.group.failures import ItemFailed
from sag.debate.answer import answer_item
from sag.retrieval import retrievers
from sag.group.transcript import REFUSE

from ..fakes import ScriptedTurns, constant, round_of

ITEM = load_benchmark("medqa")[0]


@pytest.fixture(scope="module")
def corpora(tmp_path_factory: pytest.TempPathFactory) -> dict:
    return retrievers(("medlineplus", "pubmedqa", "ddxplus"), cache_dir=tmp_path_factory.mktemp("idx"))


def play(name: str, runner: ScriptedTurns, corpora: dict, item: QuestionItem = ITEM, **changes: object):
    cfg = preset(name).with_changes(**changes) if changes else preset(name)
    return answer_item(item, cfg, {m: runner for m in cfg.models()}, corpora)


def test_a_settled_group_stops_early(corpora: dict) -> None:
    runner = ScriptedTurns(constant("B"))
    result = play("sag-6", runner, corpora)
    out = result.outcome
    assert out.answer == "B" and out.rule == "the judge's answer"
    assert out.rounds == 2 and out.stop_reason.startswith("no answer changed")
    phases = [(m.round, m.phase) for m in out.messages]
    assert phases[:4] == [(0, "retrieve"), (0, "retrieve"), (0, "propose"), (0, "propose")]
    assert {p for r, p in phases if r == 1} == {"retrieve", "debate", "audit", "judge"}
    # one batch per step: 2 proposals, 4 debaters, 1 auditor, 1 judge per round
    assert runner.batches == [2, 4, 1, 1, 4, 1, 1]
    assert result.model_calls == 14 and result.correct == (ITEM.answer == "B")


def test_changing_answers_run_to_t_max(corpora: dict) -> None:
    def flip(agent: str, prompt: str, request) -> tuple[str, str]:
        return ("A" if round_of(prompt) % 2 else "C"), "Reconsidered."
    out = play("sag-6", ScriptedTurns(flip), corpora).outcome
    assert out.rounds == 3 and out.stop_reason == "round limit t_max = 3"


def test_round_zero_is_independent_and_later_rounds_see_everything(corpora: dict) -> None:
    runner = ScriptedTurns(constant("B"))
    play("sag-6", runner, corpora)
    first = [r.messages[-1].content for r in runner.requests[:2]]
    assert all("Evidence found" not in p and "Round 0:" not in p for p in first)
    debate = [r.messages[-1].content for r in runner.requests[2:6]]
    assert all("Evidence found in round 0" in p and "- R1 (reasoning): answer B" in p for p in debate)
    shared = {p.split("Your turn:")[0] for p in debate}
    assert len(shared) == 1  # the flat step shares its whole transcript
    audit = runner.requests[6].messages[-1].content
    assert "Round 1:" in audit and "- K2 (knowledge)" in audit


def test_refusal_by_safety_and_judge(corpora: dict) -> None:
    def refuse(agent: str, prompt: str, request) -> tuple[str, str]:
        return (REFUSE if agent[0] in "SJ" else "A"), "FLAG: harmful request"
    result = play("sag-6", ScriptedTurns(refuse), corpora)
    assert result.outcome.answer == REFUSE and result.refused and not result.correct
    assert result.refusal_score == pytest.approx(0.7 * 0.7)

    def safety_alone(agent: str, prompt: str, request) -> tuple[str, str]:
        return (REFUSE if agent[0] == "S" else "C"), "ok"
    assert play("sag-6", ScriptedTurns(safety_alone), corpora).outcome.answer == "C"


def test_ablations_change_who_plays(corpora: dict) -> None:
    no_k = play("sag-6-no_knowledge", ScriptedTurns(constant("B")), corpora).outcome
    assert not any(m.phase == "retrieve" for m in no_k.messages)
    no_r = play("sag-6-no_reasoning", ScriptedTurns(constant("B")), corpora).outcome
    proposals = [m for m in no_r.messages if m.phase == "propose"]
    assert {m.role for m in proposals} == {AgentRole.KNOWLEDGE} and len(proposals) == 2
    no_s = play("sag-6-no_safety", ScriptedTurns(constant(REFUSE)), corpora).outcome
    assert not any(m.phase == "audit" for m in no_s.messages) and no_s.answer != REFUSE

    def judge_says_d(agent: str, prompt: str, request) -> tuple[str, str]:
        return ("D" if agent[0] == "J" else "A"), "."
    assert play("sag-6", ScriptedTurns(judge_says_d), corpora).outcome.answer == "D"
    assert play("sag-6-no_judge", ScriptedTurns(judge_says_d), corpora).outcome.answer == "A"


def test_baselines(corpora: dict) -> None:
    runner = ScriptedTurns(constant("C"))
    single = play("single", runner, corpora)
    assert single.outcome.answer == "C" and single.model_calls == 1 and runner.batches == [1]
    assert "you are R1. Answer the question on your own" in runner.requests[0].messages[-1].content

    def by_role(agent: str, prompt: str, request) -> tuple[str, str]:
        return {"R": "A", "K": "B", "S": "B", "J": "A"}[agent[0]], "."
    majority = play("sag-6-majority", ScriptedTurns(by_role), corpora).outcome
    assert majority.rounds == 0 and majority.answer in ("A", "B")
    assert majority.rule == "plurality of independent agents"
    assert sum(1 for m in majority.messages if m.phase == "answer") == 6


@pytest.mark.parametrize("name", ["sag-6", "sag-6-majority", "single", "sag-6-no_judge"])
def test_a_failing_agent_fails_the_item_with_no_answer(corpora: dict, name: str) -> None:
    """A failed call is never an answer: the step with the failed turn stops the item."""
    failing = "R1" if name == "single" else "R2"
    runner = ScriptedTurns(constant("B"), fail=lambda agent: agent == failing)
    with pytest.raises(ItemFailed) as caught:
        play(name, runner, corpora)
    failure = caught.value.failure
    errors = [m for m in failure.messages if m.error]
    assert errors and all(m.agent_id == failing for m in errors)
    assert failure.item_id == ITEM.item_id and failing in failure.reason and "scripted failure" in failure.reason
    assert failure.model_calls == len(runner.requests) and failure.model_calls >= 1
    assert max(m.round for m in failure.messages) == 0  # nothing is played after the failed step


def test_pubmedqa_item_never_retrieves_its_own_abstract(corpora: dict, tmp_path: Path) -> None:
    item = load_benchmark("pubmedqa")[0]
    out = play("sag-10", ScriptedTurns(constant("A")), corpora, item=item).outcome
    retrieved = {pid for m in out.messages for pid, _ in m.retrieved}
    assert retrieved and f"pmq-{item.item_id}" not in retrieved
