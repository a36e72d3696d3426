"""Resumable SAG runs in the store: items, messages, outcomes, resume, zero-call re-run, bad files."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from clinical.questions import load_benchmark
from clinical.training_split import training_split
from common.errors import ConfigError, InputError
from runtime.call_log import CallLog
from sag.group.config import preset
from sag.runs.report import format_table, summarise, wilson_interval
from sag.runs.run import SagRunSpec, run_sag
from sag.store.tables import MESSAGE_COLUMNS, SagStore

from ..fakes import ScriptedTurns, constant


def _runners(cfg, runner):  # type: ignore[no-untyped-def]
    return {m: runner for m in cfg.models()}


def test_run_stores_resumes_and_reruns_without_calls(tmp_path: Path) -> None:
    spec = SagRunSpec("medqa", preset("sag-6").with_changes(t_max=2), n_items=4, seed=3)
    db = tmp_path / "s.duckdb"
    stop_after = {"n": 2}
    with SagStore(db) as store:
        first = run_sag(store, spec, runners=_runners(spec.cfg, ScriptedTurns(constant("B"))), retrievers={},
                        cancel=lambda: len(store.done_items(first_id(store))) >= stop_after["n"])
        assert first.computed == 2 and not first.resumed
        runner = ScriptedTurns(constant("B"))
        second = run_sag(store, spec, runners=_runners(spec.cfg, runner), retrievers={})
        assert second.resumed and second.computed == 2 and second.run_id == first.run_id
        third_runner = ScriptedTurns(constant("C"))
        third = run_sag(store, spec, runners=_runners(spec.cfg, third_runner), retrievers={})
        assert third.computed == 0 and third.model_calls == 0 and third_runner.requests == []
        outcomes = store.outcomes(first.run_id)
        messages = store.messages(first.run_id, outcomes["item_id"].iloc[0])
        runs = store.runs()
    assert len(outcomes) == 4 and set(outcomes["answer"]) == {"B"}
    truth = {it.item_id: it.answer for it in load_benchmark("medqa")}
    assert (outcomes["correct"] == (outcomes["item_id"].map(truth) == "B")).all()
    assert tuple(messages.columns) == MESSAGE_COLUMNS
    assert set(messages["phase"]) == {"retrieve", "propose", "debate", "audit", "judge"}
    assert runs.loc[runs.run_id == first.run_id, "status"].iloc[0] == "finished"


def first_id(store: SagStore) -> str:
    runs = store.runs()
    return runs["run_id"].iloc[0] if len(runs) else ""


def test_the_same_command_finds_the_same_items_and_run(tmp_path: Path) -> None:
    cfg = preset("single")
    a = SagRunSpec("medqa", cfg, n_items=5, seed=1)
    items = load_benchmark("medqa")
    chosen, cal = a.split(items)
    assert len(chosen) == 5 and cal == () and a.run_id(chosen) == SagRunSpec("medqa", cfg, 5, 1).run_id(chosen)
    assert a.run_id(chosen) != SagRunSpec("medqa", cfg.with_changes(t_max=2), 5, 1).run_id(chosen)
    dcem = SagRunSpec("medqa", preset("sag-6-dcem").with_changes(n_cal=6), n_items=5, seed=1)
    evaluation, calibration = dcem.split(items)
    assert len(evaluation) == 5 and len(calibration) == 6
    assert not {i.item_id for i in evaluation} & {i.item_id for i in calibration}
    kept = len(training_split("medqa").train_ids)  # a run never draws the TRAIN items
    with pytest.raises(ConfigError, match=fr"has {len(items) - kept} items \({kept} more are kept for training\)"):
        SagRunSpec("medqa", cfg, n_items=5000).split(items)
    with pytest.raises(ConfigError, match="items"):
        SagRunSpec("medqa", cfg, n_items=0)


def test_dcem_run_stores_its_calibration_and_mediator_rounds(tmp_path: Path) -> None:
    spec = SagRunSpec("medqa", preset("sag-6-dcem").with_changes(n_cal=8), n_items=3, seed=0)
    with SagStore(tmp_path / "s.duckdb") as store:
        summary = run_sag(store, spec, runners=_runners(spec.cfg, ScriptedTurns(constant("A"))), retrievers={})
        cal = store.calibration(summary.run_id)
        item = store.outcomes(summary.run_id)["item_id"].iloc[0]
        rounds = store.mediator_rounds(summary.run_id, item)
        calls = CallLog(store).count(summary.run_id)
    assert cal is not None and len(cal["items"]) == 8 and cal["reporters"] == ["R1", "R2", "K1", "K2"]
    assert len(rounds) >= 1 and rounds["action"].iloc[-1] in ("STOP_AND_DECIDE", "STOP_AND_ESCALATE")
    assert calls == summary.model_calls
    with pytest.raises(ConfigError, match="same number of options"):
        with SagStore(tmp_path / "p.duckdb") as store:
            run_sag(store, SagRunSpec("mmlu-pro-health", preset("sag-6-dcem"), n_items=40), runners={},
                    retrievers={})


def test_bad_question_files_store_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    good_line = {"id": "q1", "question": "Which?", "options": {"A": "x", "B": "y"}, "answer": "A"}
    bad.write_text(json.dumps(good_line) + "\n" + json.dumps({**good_line, "id": "q2", "answer": "E"}) + "\n")
    db = tmp_path / "s.duckdb"
    with SagStore(db) as store:
        with pytest.raises(InputError, match="line 2: answer"):
            run_sag(store, SagRunSpec(str(bad), preset("single"), n_items=1), runners={}, retrievers={})
        assert store.runs().empty
    with pytest.raises(ConfigError, match="unknown benchmark"):
        with SagStore(db) as store:
            run_sag(store, SagRunSpec("nejm", preset("single"), n_items=1), runners={}, retrievers={})


def test_user_file_run_and_report(tmp_path: Path) -> None:
    path = tmp_path / "mine.jsonl"
    lines = [{"id": f"q{i}", "question": f"Question {i}?", "options": ["yes", "no", "maybe"], "answer": "AB"[i % 2]}
             for i in range(4)]
    path.write_text("\n".join(json.dumps(x) for x in lines))
    with SagStore(tmp_path / "s.duckdb") as store:
        spec = SagRunSpec(str(path), preset("single"), n_items=4)
        run_sag(store, spec, runners=_runners(spec.cfg, ScriptedTurns(constant("A"))), retrievers={})
        table = summarise(store.outcomes())
        empty = summarise(store.outcomes().iloc[0:0])
    row = table.iloc[0]
    assert row["benchmark"] == str(path) and row["items"] == 4 and row["accuracy"] == 0.5
    assert (row["ci_low"], row["ci_high"]) == pytest.approx(wilson_interval(2, 4))
    assert row["calls_per_item"] == 1.0 and row["rounds"] == 0
    text = format_table(table)
    assert "0.500" in text and "single" in text
    assert "No SAG outcomes" in format_table(empty)


def test_wilson_interval() -> None:
    low, high = wilson_interval(13, 20)
    assert low == pytest.approx(0.4329, abs=1e-4) and high == pytest.approx(0.8188, abs=1e-4)
    assert wilson_interval(0, 0) == (0.0, 1.0) and wilson_interval(0, 10)[0] == 0.0


def test_json_group_file_with_a_users_loss(tmp_path: Path) -> None:
    import argparse

    from sag.group.args import group_from_args

    loss = [[0, 1, 1, 1], [1, 0, 1, 1], [4, 4, 0, 4], [1, 1, 1, 0]]  # missing C costs four times more
    path = tmp_path / "group.json"
    path.write_text(json.dumps({"name": "mine", "method": "dcem", "counts": [2, 2, 1, 1], "t_max": 2, "n_cal": 8,
                                "loss": loss}))
    args = argparse.Namespace(group=str(path), model=None, t_max=None, rationale_tokens=None, top_k=None,
                              temperature=None, n_cal=None)
    cfg = group_from_args(args)
    assert cfg.method == "dcem" and cfg.loss is not None and cfg.loss[2][0] == 4.0
    spec = SagRunSpec("medqa", cfg, n_items=2)
    with SagStore(tmp_path / "s.duckdb") as store:
        summary = run_sag(store, spec, runners=_runners(cfg, ScriptedTurns(constant("A"))), retrievers={})
        assert store.calibration(summary.run_id)["items"]
    from sag.debate.answer import calibrate

    cal = calibrate(load_benchmark("medqa")[:8], cfg, _runners(cfg, ScriptedTurns(constant("A"))), {})
    assert cal.panel.loss.tolist() == [[float(v) for v in row] for row in loss]
    bad = tmp_path / "bad.json"
    bad.write_text('{"name": "x", "counts": [2, 2]}')
    with pytest.raises(ConfigError, match="four counts"):
        group_from_args(argparse.Namespace(**{**vars(args), "group": str(bad)}))
    bad.write_text("{not json")
    with pytest.raises(ConfigError, match="not valid JSON"):
        group_from_args(argparse.Namespace(**{**vars(args), "group": str(bad)}))


def test_a_sag_runs_life_is_kept_by_the_ledger(tmp_path: Path) -> None:
    """Start, each item, finish: one ledger run of kind ``sag`` whose spec is the run's
    identity, an item its unit; ``sag_runs.status`` follows it; a store written before the
    ledger (adopted) resumes with zero model calls."""
    from common.ledger import Ledger

    spec = SagRunSpec("medqa", preset("single"), n_items=3, seed=2)
    with SagStore(tmp_path / "s.duckdb") as store:
        summary = run_sag(store, spec, runners=_runners(spec.cfg, ScriptedTurns(constant("B"))), retrievers={})
        run = Ledger(store).run(summary.run_id)
        items = spec.prepare()[0]
        assert (run.kind, run.status, run.done, run.failed) == ("sag", "finished", 3, 0)
        assert run.spec == json.loads(json.dumps(spec.to_dict(items)))
        assert set(Ledger(store).units(summary.run_id)["unit_key"]) == {it.item_id for it in items}
        stored = store.con.execute("SELECT status, finished_at FROM sag_runs WHERE run_id = ?",
                                   [summary.run_id]).fetchone()
        assert stored == ("finished", run.finished_at)
        # as a store written before the ledger: its ledger rows gone, the kind's tables kept
        store.con.execute("DELETE FROM ledger_units")
        store.con.execute("DELETE FROM ledger_runs")
        store.con.execute("UPDATE sag_runs SET status = 'running', finished_at = NULL")
        runner = ScriptedTurns(constant("C"))
        again = run_sag(store, spec, runners=_runners(spec.cfg, runner), retrievers={})
        assert again.resumed and again.computed == 0 and again.skipped == 3 and runner.requests == []
        assert Ledger(store).run(summary.run_id).status == "finished"
        assert store.runs().set_index("run_id").loc[summary.run_id, "status"] == "finished"
