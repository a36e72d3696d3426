"""Group training on SmolLM2-135M (llama.cpp rollouts, torch updates), on a handful of
requests with the knowledge-free six-agent group (short prompts, no retrieval)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")

from clinical.training_split import train_items  # noqa: E402
from runtime.llama_backend import LlamaCppBackend, file_sha256  # noqa: E402
from runtime.registry import resolve  # noqa: E402
from sag.group.config import AgentRole, preset  # noqa: E402
from sag.training.group_train_run import GroupPlay, GroupRun, run_group_training  # noqa: E402
from sag.training.group_training import Tokenizer, adapter_names_for, play_reward, play_rollouts, to_rollout  # noqa: E402
from sag.debate.runners import runner_for  # noqa: E402
from sag.training.single_agent import items_hash  # noqa: E402
from sag.group.transcript import REFUSE  # noqa: E402
from training.config import CriticSettings, GrpoSettings, LoraSettings, RewardWeights, TrainSettings  # noqa: E402
from training.store import TrainingRecorder  # noqa: E402

pytestmark = pytest.mark.usefixtures("reuse_loaded_bases")

GROUP = preset("sag-6-no_knowledge")
PLAY = GroupPlay(rounds=1, temperature=1.0, rationale_tokens=4)


def _items() -> tuple:
    return tuple(train_items("medsafetybench")[:3])


def test_rollouts_record_what_the_agents_saw_and_torch_reads_the_same_policy() -> None:
    from training.base_model import load_base
    from training.rollouts import ActionScorer
    from training.scorer import OptionScorer

    path = resolve("smollm2-135m")
    backend = LlamaCppBackend(path, n_ctx=4096, n_threads=1, kv_cache_mb=0)
    cfg = GROUP.with_changes(t_max=1, temperature=1.0, rationale_tokens=4)
    runners = {"smollm2-135m": runner_for(backend, width=4)}
    item = _items()[0]
    plays, failed = play_rollouts(item, cfg, runners, {}, [11, 12])
    assert failed == 0 and len(plays) == 2
    tokenizer = Tokenizer(backend.prompt_tokens, backend.option_token)
    adapters = adapter_names_for("ctde", cfg)
    rollouts = [to_rollout(p, 0, *play_reward(item, p.answer, RewardWeights()), cfg, tokenizer, adapters, 3)
                for p in plays]
    # round 0: two proposals; round 1: two debaters, the safety audit, the judge
    assert [len(r.actions) for r in rollouts] == [6, 6]
    assert len(rollouts[0].finals) == cfg.size == 4
    assert {a.adapter for a in rollouts[0].actions} == {"reasoning", "safety", "judge"}
    refusable = [a for a in rollouts[0].actions if len(a.option_ids) == 3]
    assert len(refusable) == 2 and all(a.slots == (0, 1, 2) for a in refusable)
    for play, rollout in zip(plays, rollouts):
        reward, right = play_reward(item, play.answer, RewardWeights())
        assert rollout.reward == reward and rollout.correct == right
        assert reward == (2.5 if play.answer in ("B", REFUSE) else -12.5)

    model = load_base(path)
    scorer = ActionScorer(OptionScorer(model))
    messages = [m for play in plays for _, m in play.played if m.answer is not None]
    actions = [a for r in rollouts for a in r.actions]
    _, dense = scorer.taken(actions, n_slots=3)
    for action, message, probs in zip(actions, messages, dense):
        letters = probs[:2] / probs[:2].sum()  # the runtime's letter distribution leaves REFUSE out
        assert np.allclose(letters.numpy(), message.distribution, atol=0.08), (letters, message.distribution)
        if message.refuse_probability is not None:
            assert abs(float(probs[2]) - message.refuse_probability) < 0.08
        taken = action.slots[action.taken]
        assert (REFUSE if taken == 2 else "AB"[taken]) == message.answer


@pytest.mark.parametrize("rationale_actions", [False, True])
def test_the_stored_settings_name_the_same_fields_as_the_run_id(tmp_path: Path, rationale_actions: bool) -> None:
    """A run made before ``rationale_actions`` existed stored its play without it; the
    settings it resumes with must match what it stored, or resuming is refused."""
    items = _items()
    play = GroupPlay(rounds=1, temperature=1.0, rationale_tokens=4, rationale_actions=rationale_actions)
    run = GroupRun("sag-group", GROUP, "smollm2-135m", tmp_path / "base.gguf", "0" * 64, TrainSettings(method="grpo", grpo=GrpoSettings(group_size=2)),
                   play, CriticSettings(), items, "test", items_hash(items), tmp_path / "runs")
    recorded = run.recorded()
    assert ("rationale_actions" in recorded["play"]) is rationale_actions
    assert recorded["play"] == play.identity() and recorded["critic"] is None
    assert "threads" not in recorded and "device" not in recorded


@pytest.mark.parametrize("method", ["ctde"])
def test_a_group_run_records_steps_resumes_and_writes_its_group_file(tmp_path: Path, method: str) -> None:
    from runtime.adapters import check_adapter_file
    from sag.group.config import load_group_file

    path = resolve("smollm2-135m")
    items = _items()
    settings = TrainSettings(method=method, steps=2, batch_size=1, learning_rate=1e-3, checkpoint_every=1, threads=1,
                             lora=LoraSettings(r=4, alpha=8.0, layers=2), grpo=GrpoSettings(group_size=2),
                             rewards=RewardWeights(fairness=0.0))
    run = GroupRun("sag-group", GROUP, "smollm2-135m", path, file_sha256(path), settings, PLAY,
                   CriticSettings(epochs=3, warmup=1), items, "test", items_hash(items), tmp_path / "runs")
    db = tmp_path / "train.duckdb"
    calls = {"n": 0}

    def stop_after_one() -> bool:
        calls["n"] += 1
        return calls["n"] > 1

    first = run_group_training(TrainingRecorder(db), run, retrievers={}, should_stop=stop_after_one)
    assert first.stopped and first.steps_done == 1 and first.group_file is None
    second = run_group_training(TrainingRecorder(db), run, retrievers={})
    assert second.resumed_from == 1 and second.steps_done == 2 and not second.stopped

    from training.store import TrainingStore

    with TrainingStore(db, read_only=True) as store:
        steps = store.steps(run.run_id)
        runs = store.runs()
    assert steps["step"].tolist() == [1, 2]
    assert (steps["items"] == 1).all() and (steps["tokens"] > 0).all()
    row = runs[runs["run_id"] == run.run_id].iloc[0]
    assert row["status"] == "finished" and row["method"] == method
    recorded = json.loads(row["settings_json"])
    assert recorded["play"]["rounds"] == 1 and recorded["critic"]["warmup"] == 1
    assert recorded["group"]["name"] == GROUP.name

    group = load_group_file(second.group_file)
    roles = dict(zip(AgentRole, group.backbones))
    assert roles[AgentRole.KNOWLEDGE] == "smollm2-135m"  # the group has no knowledge agent: no adapter
    files = {role: key.split("+lora:file:", 1)[1] for role, key in roles.items() if "+lora:file:" in key}
    assert set(files) == {AgentRole.REASONING, AgentRole.SAFETY, AgentRole.JUDGE}
    assert len(set(files.values())) == 3  # one adapter per role
    for file in files.values():
        assert check_adapter_file(file, path).tensors > 0


def test_rationale_actions_carry_the_tokens_llama_cpp_sampled() -> None:
    """GRPO's rationale path: each answer turn's rationale becomes a Rationale with the
    token ids llama.cpp generated (they are the message's text), and torch scores them."""
    from training.base_model import load_base
    from training.group_step import unit_logps
    from training.letters import continuation_logprobs
    from training.rollouts import ActionScorer
    from training.scorer import OptionScorer

    path = resolve("smollm2-135m")
    backend = LlamaCppBackend(path, n_ctx=4096, n_threads=1, kv_cache_mb=0)
    cfg = GROUP.with_changes(t_max=1, temperature=0.9, rationale_tokens=3)
    item = _items()[1]
    plays, failed = play_rollouts(item, cfg, {"smollm2-135m": runner_for(backend, width=4)}, {}, [5])
    assert failed == 0
    tokenizer = Tokenizer(backend.prompt_tokens, backend.option_token)
    adapters = adapter_names_for("grpo", cfg)
    rollout = to_rollout(plays[0], 0, 1.0, True, cfg, tokenizer, adapters, 3, rationales=True)
    answered = [(m, ids) for (_, m), ids in zip(plays[0].played, plays[0].generated) if m.answer is not None]
    assert len(rollout.rationales) == len(rollout.actions) == len(answered) == 6
    for rationale, action, (message, ids) in zip(rollout.rationales, rollout.actions, answered):
        assert rationale.continuation == ids and 1 <= len(ids) <= 3 and rationale.temperature == 0.9
        assert rationale.tokens == action.tokens and rationale.adapter == "default"
        assert backend.llm.detokenize(list(ids)).decode("utf-8", errors="ignore") == message.rationale
    plain = to_rollout(plays[0], 0, 1.0, True, cfg, tokenizer, adapters, 3)
    assert plain.rationales == () and plain.actions == rollout.actions
    model = load_base(path)
    units = unit_logps(ActionScorer(OptionScorer(model)), [rollout])
    want = continuation_logprobs(model, [r.tokens for r in rollout.rationales],
                                 [r.continuation for r in rollout.rationales], temperature=0.9)
    assert units.shape == (12,) and bool(torch.isfinite(units).all()) and torch.allclose(units[6:], want, atol=1e-4)
