"""With SmolLM2 in llama.cpp: the prompts a view group's later stages train on are the
prompts the group meets when it plays (same token ids), and a view group plays end to end."""
from __future__ import annotations

from typing import Any, Sequence

from clinical.questions import load_benchmark
from runtime.llama_backend import LlamaCppBackend
from runtime.registry import resolve
from sag.group.config import AgentRole, GroupConfig
from sag.debate.answer import answer_item
from sag.debate.runners import runner_for
from sag.training.view_debate_data import play_fold

CFG = GroupConfig(name="v", counts=(3, 0, 1, 1), views=("complaint", "history", "pain-character"), alternatives=2,
                  t_max=1, rationale_tokens=6)


class _Recording:
    def __init__(self, inner: Any) -> None:
        self.inner, self.requests = inner, []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def run(self, requests: Sequence[Any]) -> list[Any]:
        self.requests.extend(requests)
        return self.inner.run(requests)


def test_trained_prompts_are_the_prompts_the_group_plays() -> None:
    backend = LlamaCppBackend(resolve("smollm2-135m"), n_ctx=4096, n_threads=1, kv_cache_mb=0)
    item = load_benchmark("ddxplus8")[7]
    runner = _Recording(runner_for(backend, width=3))
    result = answer_item(item, CFG, {"smollm2-135m": runner}, {})
    judged = [r for r in runner.requests if "you are J1" in r.messages[-1].content]
    revised = {r.messages[-1].content.split("you are ")[1][:2]: r for r in runner.requests
               if "Round 0:" in r.messages[-1].content and "you are R" in r.messages[-1].content}
    assert len(judged) == 1 and set(revised) == {"R1", "R2", "R3"}
    assert result.outcome.rounds == 1
    for stage, expected in (("judge", {"J1": judged[0]}), ("debate", revised)):
        played = play_fold(CFG, [item], {"smollm2-135m": runner_for(backend, width=3)}, backend.prompt_tokens, stage)
        for agent, request in expected.items():
            assert played.prompts[agent][0] == tuple(backend.prompt_tokens(list(request.messages))), (stage, agent)
    judge_text = judged[0].messages[-1].content
    assert "read the history and risk factors" in judge_text and item.question.split(".")[1] not in judge_text
    assert {m.role for m in result.outcome.messages} == {AgentRole.REASONING, AgentRole.SAFETY, AgentRole.JUDGE}



class _Counting:
    """A runner that counts its batches and stops the play (as Ctrl-C would) after ``stop_after``."""

    def __init__(self, inner: Any, stop_after: int | None = None) -> None:
        self.inner, self.calls, self.stop_after = inner, 0, stop_after

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def run(self, requests: Sequence[Any]) -> list[Any]:
        if self.calls == self.stop_after:
            raise KeyboardInterrupt
        self.calls += 1
        return self.inner.run(requests)


def test_a_stopped_play_resumes_from_its_partial_file_and_plays_the_same(tmp_path: Any) -> None:
    backend = LlamaCppBackend(resolve("smollm2-135m"), n_ctx=4096, n_threads=1, kv_cache_mb=0)
    items = load_benchmark("ddxplus8")[:2]
    whole = _Counting(runner_for(backend, width=3))
    played = play_fold(CFG, items, {"smollm2-135m": whole}, backend.prompt_tokens, "debate")
    per_item = whole.calls // len(items)
    assert per_item * len(items) == whole.calls and per_item > 0
    cache = tmp_path / "played-debate-debate.json"
    stopping = _Counting(runner_for(backend, width=3), stop_after=per_item)  # stops on the second item
    try:
        play_fold(CFG, items, {"smollm2-135m": stopping}, backend.prompt_tokens, "debate", cache, save_every=1)
        raise AssertionError("the play was not stopped")
    except KeyboardInterrupt:
        pass
    partial = tmp_path / "played-debate-debate.partial.json"
    assert not cache.is_file() and partial.is_file()
    rest = _Counting(runner_for(backend, width=3))
    resumed = play_fold(CFG, items, {"smollm2-135m": rest}, backend.prompt_tokens, "debate", cache, save_every=1)
    assert rest.calls == per_item * (len(items) - 1)  # the first item was not played again
    assert resumed.ids == played.ids and resumed.prompts == played.prompts and resumed.round0 == played.round0
    assert cache.is_file() and not partial.is_file()
    again = _Counting(runner_for(backend, width=3))
    assert play_fold(CFG, items, {"smollm2-135m": again}, backend.prompt_tokens, "debate", cache).ids == played.ids
    assert again.calls == 0
