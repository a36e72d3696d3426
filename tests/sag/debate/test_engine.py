"""Turns through the call log: cached answers, batching per model, failures."""
from __future__ import annotations

from pathlib import Path

import pytest

from clinical.questions import load_benchmark
from runtime.call_log import CallLog
from sag.group.config import preset
from sag.debate.engine import distribution_of, turn_seed
from sag.group.failures import ItemFailed
from sag.debate.answer import answer_item
from sag.store.tables import SagStore

from ..fakes import ScriptedTurns, constant

ITEM = load_benchmark("medqa")[3]


def test_a_repeated_item_is_answered_from_the_log(tmp_path: Path) -> None:
    cfg = preset("sag-6")
    with SagStore(tmp_path / "s.duckdb") as store:
        first_runner = ScriptedTurns(constant("B"))
        first = answer_item(ITEM, cfg, {m: first_runner for m in cfg.models()}, {}, log=CallLog(store), run_id="r")
        again_runner = ScriptedTurns(constant("C"))  # would answer differently if asked
        again = answer_item(ITEM, cfg, {m: again_runner for m in cfg.models()}, {}, log=CallLog(store), run_id="r")
        rows = CallLog(store).count("r")
    assert first.model_calls > 0 and first.cached_calls == 0
    assert again.model_calls == 0 and again.cached_calls == first.model_calls and again_runner.requests == []
    assert again.answer == first.answer == "B" and rows == first.model_calls
    assert [m.distribution for m in again.outcome.messages] == [m.distribution for m in first.outcome.messages]


def test_failed_turns_are_not_cached(tmp_path: Path) -> None:
    cfg = preset("single")
    with SagStore(tmp_path / "s.duckdb") as store:
        failing = ScriptedTurns(constant("B"), fail=lambda agent: True)
        with pytest.raises(ItemFailed) as bad:
            answer_item(ITEM, cfg, {m: failing for m in cfg.models()}, {}, log=CallLog(store))
        good = answer_item(ITEM, cfg, {m: ScriptedTurns(constant("B")) for m in cfg.models()}, {},
                           log=CallLog(store))
    assert bad.value.failure.messages[0].error == "scripted failure" and bad.value.failure.model_calls == 1
    assert good.model_calls == 1 and good.cached_calls == 0 and good.answer == "B"


def test_mixed_group_batches_per_model() -> None:
    cfg = preset("sag-6-mixed")
    small, other = ScriptedTurns(constant("A"), model_id="s"), ScriptedTurns(constant("A"), model_id="g")
    runners = dict(zip(cfg.models(), (other, small)))
    answer_item(ITEM, cfg.with_changes(t_max=1), runners, {})
    assert other.batches == [2, 2, 1]  # R proposals; R in the flat step; the judge
    assert small.batches == [2, 1]  # K in the flat step; the auditor
    with pytest.raises(KeyError, match="no runner"):
        answer_item(ITEM, cfg, {cfg.models()[0]: small}, {})


def test_distribution_and_seeds() -> None:
    letters, refuse = distribution_of([-1.0, -2.0, -3.0], 2)
    assert sum(letters) == pytest.approx(1.0) and letters[0] > letters[1] and 0 < refuse < letters[0]
    assert distribution_of([-1.0, -1.0], 2)[1] is None
    assert turn_seed(0, "R1", 1, "debate") != turn_seed(0, "R2", 1, "debate")
    assert turn_seed(0, "R1", 1, "debate") == turn_seed(0, "R1", 1, "debate")
    assert 0 <= turn_seed(123, "J2", 3, "judge") < 2**31


def test_decode_letter_is_greedy_at_temperature_zero_and_seeded_above() -> None:
    from sag.debate.engine import decode_letter

    dist = (0.1, 0.6, 0.3)
    assert decode_letter(dist, temperature=0.0, top_p=1.0, seed=5) == 1
    draws = [decode_letter(dist, temperature=1.0, top_p=1.0, seed=s) for s in range(2000)]
    assert draws == [decode_letter(dist, temperature=1.0, top_p=1.0, seed=s) for s in range(2000)]
    shares = [draws.count(i) / len(draws) for i in range(3)]
    assert shares == pytest.approx(list(dist), abs=0.04)
    # top-p 0.6 keeps only the most probable letter; 0.9 keeps the two most probable
    assert {decode_letter(dist, temperature=1.0, top_p=0.6, seed=s) for s in range(200)} == {1}
    assert {decode_letter(dist, temperature=1.0, top_p=0.9, seed=s) for s in range(200)} == {1, 2}
    cold = [decode_letter(dist, temperature=0.2, top_p=1.0, seed=s) for s in range(500)]
    assert cold.count(1) / len(cold) > 0.9
