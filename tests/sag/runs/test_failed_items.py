"""A failed model call is never an answer: failed items are stored apart, the run stays
unfinished, a rerun retries them, reports count them apart; an edited item is refused."""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Sequence

import pytest

from clinical.questions import QuestionItem, load_benchmark
from common.db import StoreError
from runtime.turns import TurnRequest, TurnResult
from sag.group.config import preset
from sag.debate.answer import CalibrationFailed
from studio.views.sag_launch import launch_message
from sag.runs.report import format_table, summarise
from sag.runs.run import STOP_AFTER_FAILURES, SagRunSpec, run_items, run_sag
from sag.store.tables import SagStore

from ..fakes import ScriptedTurns, constant


class FailOn(ScriptedTurns):
    """Answers like ScriptedTurns, but every turn whose prompt contains one of ``texts`` fails."""

    def __init__(self, texts: Sequence[str], answer: str = "B") -> None:
        super().__init__(constant(answer))
        self.texts = list(texts)

    def run(self, requests: Sequence[TurnRequest]) -> list[TurnResult]:
        out = super().run(requests)
        return [TurnResult(tuple(-math.log(len(r.options)) for _ in r.options), "", error="connection refused")
                if any(t in r.messages[-1].content for t in self.texts) else res for r, res in zip(requests, out)]


def _runners(cfg, runner):  # type: ignore[no-untyped-def]
    return {m: runner for m in cfg.models()}


def _spec(name: str = "sag-6", n: int = 4) -> SagRunSpec:
    return SagRunSpec("medqa", preset(name).with_changes(t_max=1), n_items=n, seed=2)


def test_an_item_whose_call_failed_is_stored_apart_and_retried(tmp_path: Path) -> None:
    spec = _spec()
    items, _ = spec.split(load_benchmark("medqa"))
    broken = items[1]
    with SagStore(tmp_path / "s.duckdb") as store:
        first = run_sag(store, spec, runners=_runners(spec.cfg, FailOn([broken.question])), retrievers={})
        outcomes, failures, runs = store.outcomes(first.run_id), store.failures(first.run_id), store.runs()
        table = summarise(store.outcomes(), store.failures())
        assert first.computed == 3 and [f.item_id for f in first.failed] == [broken.item_id]
        assert broken.item_id not in set(outcomes["item_id"]) and len(outcomes) == 3
        assert list(failures["item_id"]) == [broken.item_id] and failures["attempts"].tolist() == [1]
        assert "connection refused" in failures["reason"].iloc[0] and failures["model_calls"].iloc[0] >= 1
        assert runs["status"].iloc[0] == "failed" and runs["failed"].iloc[0] == 1 and runs["answered"].iloc[0] == 3
        row = table.iloc[0]
        assert row["items"] == 3 and row["failed"] == 1
        assert row["accuracy"] == pytest.approx((outcomes["answer"] == outcomes["truth"]).mean())
        assert "failed" in format_table(table) and "not counted" in format_table(table)
        assert "got no answer" in launch_message(first)
        again = run_sag(store, spec, runners=_runners(spec.cfg, FailOn([broken.question])), retrievers={})
        assert again.computed == 0 and store.failures(first.run_id)["attempts"].tolist() == [2]
        fixed = ScriptedTurns(constant("B"))
        last = run_sag(store, spec, runners=_runners(spec.cfg, fixed), retrievers={})
        assert last.computed == 1 and not last.failed and fixed.requests  # the failed call was not cached
        assert store.failures(first.run_id).empty and store.runs()["status"].iloc[0] == "finished"
        assert len(store.outcomes(first.run_id)) == 4


def test_a_dead_model_stops_the_run_after_a_few_items(tmp_path: Path) -> None:
    spec = _spec("single", n=8)
    dead = ScriptedTurns(constant("A"), fail=lambda agent: True)
    with SagStore(tmp_path / "s.duckdb") as store:
        summary = run_sag(store, spec, runners=_runners(spec.cfg, dead), retrievers={})
        assert store.outcomes().empty and len(store.failures()) == STOP_AFTER_FAILURES
        table = summarise(store.outcomes(), store.failures())
    assert len(summary.failed) == STOP_AFTER_FAILURES and summary.computed == 0
    assert summary.stopped is not None and f"{8 - STOP_AFTER_FAILURES} items not tried" in summary.stopped
    assert len(dead.requests) == STOP_AFTER_FAILURES
    row = table.iloc[0]
    assert row["items"] == 0 and math.isnan(row["accuracy"]) and row["failed"] == STOP_AFTER_FAILURES
    assert "no answered item" in format_table(table)


def test_a_failed_calibration_call_calibrates_nothing(tmp_path: Path) -> None:
    spec = SagRunSpec("medqa", preset("sag-6-dcem").with_changes(t_max=1, n_cal=4), n_items=2, seed=0)
    evaluation, calibration = spec.split(load_benchmark("medqa"))
    runner = FailOn([calibration[2].question])
    with SagStore(tmp_path / "s.duckdb") as store:
        with pytest.raises(CalibrationFailed, match="calibration item 3 of 4") as caught:
            run_sag(store, spec, runners=_runners(spec.cfg, runner), retrievers={})
        run_id = spec.run_id(evaluation)
        assert store.calibration(run_id) is None and store.outcomes().empty
    assert "connection refused" in str(caught.value)


def _items_file(path: Path, question: str = "Which is larger?", answer: str = "B") -> None:
    items = [{"id": "q1", "question": question, "options": ["one", "two"], "answer": answer},
             {"id": "q2", "question": "Pick the first.", "options": ["first", "second"], "answer": "A"}]
    path.write_text("\n".join(json.dumps(x) for x in items), encoding="utf-8")


def test_an_edited_item_is_refused_not_answered_from_the_old_one(tmp_path: Path) -> None:
    path, db = tmp_path / "mine.jsonl", tmp_path / "s.duckdb"
    _items_file(path)
    spec = SagRunSpec(str(path), preset("single"), n_items=2)
    with SagStore(db) as store:
        first = run_sag(store, spec, runners=_runners(spec.cfg, ScriptedTurns(constant("A"))), retrievers={})
        before = store.outcomes().drop(columns=["created_at"])
    _items_file(path, question="Which is smaller?", answer="A")
    untouched = ScriptedTurns(constant("A"))
    with SagStore(db) as store:
        with pytest.raises(StoreError, match=r"item 'q1' has changed since run .* \(question, answer differ\)"):
            run_sag(store, spec, runners=_runners(spec.cfg, untouched), retrievers={})
        after = store.outcomes().drop(columns=["created_at"])
        items = store.items(first.run_id)
    assert untouched.requests == [] and after.equals(before)
    assert items.loc[items.item_id == "q1", "question"].iloc[0] == "Which is larger?"


def test_an_edited_item_is_refused_before_any_model_is_built(tmp_path: Path) -> None:
    cfg = preset("single")
    item = QuestionItem("x1", "Old question?", (("A", "yes"), ("B", "no")), "A", "custom")
    edited = QuestionItem("x1", "Old question?", (("A", "yes"), ("B", "no, never")), "A", "custom")
    built: list[str] = []

    def factory(c):  # type: ignore[no-untyped-def]
        built.append(c.name)
        return _runners(c, ScriptedTurns(constant("A")))

    with SagStore(tmp_path / "s.duckdb") as store:
        run_items(store, "r1", benchmark="custom", cfg=cfg, seed=0, evaluation=[item], runners=factory,
                  retrievers={})
        store.con.execute("DELETE FROM sag_outcomes")  # an unanswered item: the run would load its model
        built.clear()
        with pytest.raises(StoreError, match=r"\(options differ\)"):
            run_items(store, "r1", benchmark="custom", cfg=cfg, seed=0, evaluation=[edited], runners=factory,
                      retrievers={})
    assert built == []


@pytest.mark.slow
def test_ask_with_a_prompt_longer_than_the_context_gives_no_answer(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """The real SmolLM2: a 100 KB question does not fit its context; the call is refused
    before anything is decoded and the group has no answer (it was "Group answer: A")."""
    from sag.cli import main

    question = "A patient reports " + "a long history of symptoms, " * 3500 + "what next?\nA. rest\nB. review"
    code = main(["ask", question, "--group", "single", "--model", "smollm2-135m", "--threads", "1",
                 "--db", str(tmp_path / "s.duckdb")])
    out, err = capsys.readouterr()
    assert code == 1 and "Group answer" not in out and "No group answer" in out
    assert "exceeds the context of 4096 tokens" in out and err.count("error: no group answer") == 1
    assert "Traceback" not in err


def test_run_against_a_server_that_is_down_stores_no_answer(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """The issue's reproducer: nothing listens on the port; the run used to finish with
    every item answered "A" (accuracy 0.500)."""
    from sag.cli import main

    db = tmp_path / "s.duckdb"
    code = main(["run", "--benchmark", "medqa", "--items", "8", "--group", "single", "-q",
                 "--model", "openai:http://127.0.0.1:9#m", "--db", str(db)])
    _, err = capsys.readouterr()
    assert code == 1 and err.count("error: ") == 1 and err.count("failed: item ") == STOP_AFTER_FAILURES
    assert "connection refused" in err and "Traceback" not in err
    with SagStore(db) as store:
        assert store.outcomes().empty and store.runs()["status"].tolist() == ["failed"]
    assert main(["report", "--db", str(db)]) == 0
    report = capsys.readouterr().out
    assert "no answered item" in report and "0.500" not in report


def test_merging_copies_keeps_failed_items_apart_and_answered_ones_answered(tmp_path: Path) -> None:
    """A failed item answered in another copy of the store is answered after merging
    (either way round); a failure row that breaks its table's rules is refused."""
    import shutil

    from common.merge_checks import MergeRefused
    from common.store_merge import merge_store
    from sag.store.merge_checks import sag_store_checks

    spec = _spec("single", n=3)
    items, _ = spec.split(load_benchmark("medqa"))
    failing, answered = tmp_path / "failing.duckdb", tmp_path / "answered.duckdb"
    with SagStore(failing) as store:
        run_id = run_sag(store, spec, runners=_runners(spec.cfg, FailOn([items[0].question])), retrievers={}).run_id
    shutil.copy(failing, answered)
    with SagStore(answered) as store:
        run_sag(store, spec, runners=_runners(spec.cfg, ScriptedTurns(constant("B"))), retrievers={})
    for target, source in ((failing, answered), (answered, failing)):
        merged = tmp_path / f"merged-{target.stem}.duckdb"
        shutil.copy(target, merged)
        with SagStore(merged) as store:
            merge_store(store, source, sag_store_checks())
            assert store.failures().empty and len(store.outcomes(run_id)) == 3
            assert store.runs()["failed"].tolist() == [0] and store.runs()["status"].tolist() == ["finished"]
    broken, target = tmp_path / "broken.duckdb", tmp_path / "target.duckdb"
    shutil.copy(failing, broken)
    with SagStore(broken) as store:
        store.con.execute("UPDATE sag_failures SET attempts = 0")
    SagStore(target).close()
    with SagStore(target) as store:
        with pytest.raises(MergeRefused, match="sag_failures.*attempts"):
            merge_store(store, broken, sag_store_checks())
        assert store.runs().empty
