"""Escalation review: append-only reviews, validation, the queue, export, concurrency."""
from __future__ import annotations

import json
import re
import shutil
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dcem.store.reviews
from dcem.core.config import MediatorConfig
from common.errors import InputError
from dcem.store.database import Store, StoreError
from dcem.store.reviews import (
    CALIBRATION_COLUMNS,
    LAST_ANSWER_COLUMNS,
    QUEUE_COLUMNS,
    current_reviews,
    escalation_queue,
    escalation_reason,
    export_reviews,
    last_answers,
    record_review,
    review_history,
    reviewed_as_calibration_rows,
)

from .small_run import RUN_ID, small_run_file, small_run_store  # noqa: F401
from tests.spawn_support import run_workers


def _escalated(store: Store) -> pd.DataFrame:
    out = store.outcomes(RUN_ID, "dcem")
    return out[out.action == "STOP_AND_ESCALATE"]


def _labels(store: Store, case_id: str) -> list[str]:
    return list(store.con.execute(
        "SELECT cl.labels FROM cases c JOIN cells cl USING (run_id, scenario, seed) "
        "WHERE c.run_id = ? AND c.case_id = ?", [RUN_ID, case_id]).fetchone()[0])


def _review(store: Store, case_id: str, label: str, **kw: str) -> str:
    args = {"run_id": RUN_ID, "case_id": case_id, "method": "dcem", "final_label": label,
            "comment": "checked", "reviewer": "dr a", **kw}
    return record_review(store, **args)


def test_reviews_are_append_only_and_latest_is_current(small_run_store: Store) -> None:
    case = _escalated(small_run_store)["case_id"].iloc[0]
    labels = _labels(small_run_store, case)
    first = _review(small_run_store, case, labels[0], comment="first look")
    second = _review(small_run_store, case, labels[1], reviewer="dr b")
    history = review_history(small_run_store, RUN_ID, case)
    assert history["review_id"].tolist() == [first, second]
    assert history["final_label"].tolist() == [labels[0], labels[1]]
    assert history["comment"].tolist() == ["first look", "checked"]
    current = current_reviews(small_run_store, RUN_ID)
    assert current["review_id"].tolist() == [second] and current["reviewer"].tolist() == ["dr b"]
    assert len(review_history(small_run_store, RUN_ID)) == 2


def test_the_review_code_never_updates_or_deletes() -> None:
    assert not re.search(r"\b(UPDATE|DELETE)\b", Path(dcem.store.reviews.__file__).read_text())
    for path in Path(dcem.store.reviews.__file__).parent.glob("*.py"):  # nor does any other module
        assert not re.search(r"(UPDATE|DELETE\s+FROM|TRUNCATE)\s+reviews\b", path.read_text(), re.I), path


@pytest.mark.parametrize("override, field, words", [
    ({"run_id": "nope"}, "run_id", "no run 'nope'"),
    ({"case_id": "S1-s0-999"}, "case_id", "has no case"),
    ({"method": "pool_x"}, "method", "no 'pool_x' outcome"),
    ({"final_label": "k99"}, "final_label", "not one of the case's labels"),
    ({"comment": "x" * 5001}, "comment", "at most 5,000"),
    ({"reviewer": "   "}, "reviewer", "reviewer's name"),
    ({"reviewer": None}, "reviewer", "must be text"),
])
def test_invalid_reviews_are_refused(small_run_store: Store, override: dict, field: str, words: str) -> None:
    case = _escalated(small_run_store)["case_id"].iloc[0]
    args = {"run_id": RUN_ID, "case_id": case, "method": "dcem", "final_label": _labels(small_run_store, case)[0],
            "comment": "", "reviewer": "dr a", **override}
    with pytest.raises(InputError, match=words) as info:
        record_review(small_run_store, **args)
    assert info.value.field == field
    assert small_run_store.con.execute("SELECT count(*) FROM reviews").fetchone()[0] == 0
    args.update({"comment": "x" * 5000, "reviewer": "dr a"} if field in ("comment", "reviewer") else {})
    if field in ("comment", "reviewer"):
        assert record_review(small_run_store, **args)  # the limit itself is fine


def test_escalation_reason_follows_the_policy_contract() -> None:
    cfg = MediatorConfig(eps_safe=0.6, eps_low=1.2, delta=0.05, window=2, t_max=12)
    assert escalation_reason(1.84, 0.01, False, 5, cfg) == (
        "Energy did not fall enough: 0.01 per round over the last 2 rounds, needed at least 0.05 (delta). "
        "The energy 1.84 stayed above eps_low 1.20, so the deliberation stalled at round 5.")
    assert escalation_reason(1.84, -0.1, False, 4, cfg).startswith(
        "Energy did not fall enough: -0.10 per round over the last 2 rounds (it rose), needed at least 0.05 (delta).")
    assert "0.00 per round over the last 2 rounds (it did not move)" in escalation_reason(1.84, 0.0, False, 4, cfg)
    close = escalation_reason(1.84, 0.049, False, 4, cfg)  # not "0.05 ... needed at least 0.05"
    assert "fall enough: 0.049 per round" in close and "needed at least 0.050 (delta)" in close
    assert "enough: -0.001 per round over the last 2 rounds (it rose)" in escalation_reason(1.84, -0.001, False, 4, cfg)
    one = MediatorConfig(eps_safe=0.6, eps_low=1.2, delta=0.05, window=1, t_max=12)
    assert "per round over the last round," in escalation_reason(1.84, 0.01, False, 4, one)
    assert escalation_reason(1.5, 0.2, True, 12, cfg) == (
        "Out of rounds: round 12 of 12 was the last and the energy 1.50 was still above eps_low 1.20, "
        "so no decision could be made safely.")
    assert escalation_reason(1.5, None, False, 12, cfg).startswith("Out of rounds: round 12 of 12")


def test_queue_lists_escalations_worst_first_with_reasons(small_run_store: Store) -> None:
    queue = escalation_queue(small_run_store, RUN_ID)
    escalated = _escalated(small_run_store)
    assert list(queue.columns) == QUEUE_COLUMNS
    assert sorted(queue["case_id"]) == sorted(escalated["case_id"]) and len(queue) >= 5
    keys = list(zip(-queue["energy"], queue["margin"], queue["descent"].fillna(np.inf)))
    assert keys == sorted(keys)
    assert not queue["reviewed"].any()
    cells = {(s, k): MediatorConfig.from_mapping(json.loads(c)) for s, k, c in small_run_store.con.execute(
        "SELECT scenario, seed, config_json FROM cells WHERE run_id = ?", [RUN_ID]).fetchall()}
    kinds = set()
    for row in queue.itertuples():
        trace = small_run_store.traces(RUN_ID, row.case_id, "dcem")
        last = trace[trace["round"] == row.rounds].iloc[0]
        assert row.energy == last["energy"] and row.margin == last["margin"]
        assert row.steers == int((trace["action"].iloc[:row.rounds] == "DIFFERENTIAL_STEER").sum())
        assert last["action"] == "STOP_AND_ESCALATE" and row.truth_label == _labels(small_run_store, row.case_id)[row.truth]
        cfg = cells[(row.scenario, row.seed)]
        assert f"{cfg.eps_low:.2f}"[:4] in row.why and f"{row.energy:.2f}"[:4] in row.why
        if row.budget:
            kinds.add("budget")
            assert row.why.startswith("Out of rounds: round") and f"of {cfg.t_max} was the last" in row.why
        else:
            kinds.add("stall")
            assert row.descent < cfg.delta and row.energy > cfg.eps_low
            assert row.why.startswith("Energy did not fall enough: ") and "needed at least" in row.why
            assert f"{cfg.delta:.2f}"[:4] in row.why
    assert "stall" in kinds  # (the budget sentence is checked in test_escalation_reason_...)
    worst = queue.iloc[0]
    _review(small_run_store, worst.case_id, _labels(small_run_store, worst.case_id)[2])
    again = escalation_queue(small_run_store, RUN_ID)
    assert again.loc[again.case_id == worst.case_id, "reviewed"].item()
    assert again["reviewed"].sum() == 1
    assert again.loc[again.case_id == worst.case_id, "review_label"].item() == _labels(small_run_store, worst.case_id)[2]
    assert escalation_queue(small_run_store, RUN_ID, "dcem_noesc").empty
    with pytest.raises(InputError):
        escalation_queue(small_run_store, RUN_ID, "single")
    with pytest.raises(StoreError):
        escalation_queue(small_run_store, "nope")


def test_export_and_calibration_rows(small_run_store: Store) -> None:
    cases = _escalated(small_run_store)["case_id"].tolist()[:3]
    for case in cases:
        _review(small_run_store, case, _labels(small_run_store, case)[0])
    relabel = _labels(small_run_store, cases[0])[1]
    _review(small_run_store, cases[0], relabel, comment="second opinion")
    export = export_reviews(small_run_store, RUN_ID)
    assert len(export) == 4 and export["is_current"].sum() == 3
    assert export.loc[export.comment == "second opinion", "is_current"].item()
    assert set(export["mediator_action"]) == {"STOP_AND_ESCALATE"}
    assert {"scenario", "seed", "truth_label", "mediator_label", "final_label", "reviewer"} <= set(export.columns)
    rows = reviewed_as_calibration_rows(small_run_store, RUN_ID)
    assert list(rows.columns) == CALIBRATION_COLUMNS
    assert len(rows) == 2 * len(cases)
    assert rows["agent"].tolist() == ["agent 1", "agent 2"] * len(cases)
    for case, group in rows.groupby("case_id"):
        labels = _labels(small_run_store, case)
        round1 = small_run_store.traces(RUN_ID, case, "dcem").iloc[0]["reports"]
        assert group["reported_label"].tolist() == [labels[int(r)] for r in round1]
        assert set(group["true_label"]) == {relabel if case == cases[0] else labels[0]}
    assert reviewed_as_calibration_rows(small_run_store, RUN_ID, method="dcem_noesc").empty


@pytest.mark.parametrize("shared", [False, True])
def test_concurrent_reviews_from_two_threads_are_all_kept(small_run_file: Path, tmp_path: Path,
                                                          shared: bool) -> None:
    """Two sessions of one process write 50 reviews each: two Store objects on the same
    file (or one shared Store), one thread each; every review is kept."""
    path = tmp_path / "shared.duckdb"
    shutil.copy(small_run_file, path)
    stores = [Store(path)] if shared else [Store(path), Store(path)]
    try:
        case = _escalated(stores[0])["case_id"].iloc[0]
        label = _labels(stores[0], case)[0]
        errors: list[BaseException] = []
        start = threading.Barrier(2)

        def writer(store: Store, who: str) -> None:
            start.wait()
            try:
                for i in range(50):
                    _review(store, case, label, reviewer=who, comment=f"{who} {i}")
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=writer, args=(stores[i % len(stores)], f"r{i}")) for i in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        history = review_history(stores[0], RUN_ID, case)
        assert len(history) == 100 and history["review_id"].nunique() == 100
        for who in ("r0", "r1"):
            mine = history[history.reviewer == who]["comment"].tolist()
            assert mine == [f"{who} {i}" for i in range(50)]  # each writer's rows in order
        assert len(current_reviews(stores[0], RUN_ID)) == 1
    finally:
        for s in stores:
            s.close()


def test_last_answers_of_an_escalated_llm_case(clinical_db: Path, small_run_store: Store) -> None:
    with Store(clinical_db) as store:
        run = store.latest_run("clinical")
        case = escalation_queue(store, run)["case_id"].iloc[0]
        rounds = int(store.outcomes(run, "dcem").set_index("case_id").loc[case, "rounds"])
        labels = list(store.con.execute(
            "SELECT cl.labels FROM cases c JOIN cells cl USING (run_id, scenario, seed) "
            "WHERE c.run_id = ? AND c.case_id = ?", [run, case]).fetchone()[0])
        answers = last_answers(store, run, case)
        with pytest.raises(StoreError, match="no case"):
            last_answers(store, run, "nope")
    assert list(answers.columns) == LAST_ANSWER_COLUMNS
    assert list(answers["agent"]) == [0, 1] and (answers["round"] == rounds).all()
    assert list(answers["model"]) == ["oracle-a", "oracle-b"]
    for row in answers.itertuples(index=False):
        assert row.probability == pytest.approx(row.probabilities[labels.index(row.label)])
        assert row.runner_up != row.label and row.runner_up_probability <= row.probability
    synthetic = last_answers(small_run_store, RUN_ID, _escalated(small_run_store)["case_id"].iloc[0])
    assert synthetic.empty and list(synthetic.columns) == LAST_ANSWER_COLUMNS


def test_defect16_two_reviewer_processes_land_all_their_reviews(small_run_file: Path, tmp_path: Path,
                                                                  spawn: Any) -> None:
    """Two processes each record 40 reviews of one case, opening and closing the store per
    review; DuckDB lets one of them hold the file at a time, the other waits and retries.
    Every review lands exactly once, in each reviewer's order."""
    from tests.dcem import review_workers

    path = tmp_path / "two.duckdb"
    shutil.copy(small_run_file, path)
    with Store(path) as store:
        case = _escalated(store)["case_id"].iloc[0]
        label = _labels(store, case)[0]
    n = 40
    results = run_workers(spawn, review_workers.reviewer,
                          [(str(path), RUN_ID, case, label, who, n) for who in ("ana", "ben")], timeout=60)
    assert [r[2] for r in results] == [None, None], results
    assert sum(r[1] for r in results) > 0  # they did collide: some opens found the file held
    with Store(path) as store:
        history = review_history(store, RUN_ID, case)
    assert len(history) == 2 * n and history["review_id"].nunique() == 2 * n
    assert history["comment"].nunique() == 2 * n  # none doubled
    for who in ("ana", "ben"):
        mine = history[history.reviewer == who]["comment"].tolist()
        assert mine == [f"{who} {i}" for i in range(n)]  # all landed, in order


def test_defect16_a_store_held_too_long_gives_a_clear_error_after_the_bounded_wait(
        small_run_file: Path, tmp_path: Path, spawn: Any) -> None:
    import re

    from common.db import StoreBusyError
    from dcem.store.reviews import record_review_in
    from tests.dcem import review_workers

    path = tmp_path / "held.duckdb"
    shutil.copy(small_run_file, path)
    with Store(path) as store:
        case = _escalated(store)["case_id"].iloc[0]
        label = _labels(store, case)[0]
    ctx = spawn
    ready, release = ctx.Event(), ctx.Event()
    proc = ctx.Process(target=review_workers.holder, args=(str(path), ready, release))
    proc.start()
    try:
        assert ready.wait(timeout=60)
        with pytest.raises(StoreBusyError, match=r"in use by another program.*still in use after \d+ attempts "
                                                 r"over \d+\.\d s") as info:
            record_review_in(path, busy_timeout=0.6, run_id=RUN_ID, case_id=case, method="dcem",
                             final_label=label, comment="", reviewer="ana")
        waited = float(re.search(r"over (\d+\.\d) s", str(info.value)).group(1))  # type: ignore[union-attr]
        assert waited >= 0.6 and "\n" not in str(info.value)  # it kept trying for the whole bounded wait
    finally:
        release.set()
        proc.join(timeout=30)
    review_id = record_review_in(path, run_id=RUN_ID, case_id=case, method="dcem", final_label=label,
                                 comment="after", reviewer="ana")  # released: it lands
    with Store(path) as store:
        assert review_history(store, RUN_ID, case)["review_id"].tolist() == [review_id]


def test_defect16_retry_backs_off_within_its_bound_and_a_retried_review_lands_once(
        small_run_store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    import common.db
    from common.db import StoreBusyError, retry_busy

    sleeps: list[float] = []
    monkeypatch.setattr(common.db.time, "sleep", sleeps.append)
    calls = iter([StoreBusyError("busy")] * 6 + ["done"])

    def work() -> str:
        value = next(calls)
        if isinstance(value, BaseException):
            raise value
        return value

    assert retry_busy(work, timeout=10) == "done"
    assert len(sleeps) == 6 and all(0 < s <= 0.25 for s in sleeps)
    assert sleeps[-1] > sleeps[0]  # growing (jittered within the upper half of each step)
    case = _escalated(small_run_store)["case_id"].iloc[0]
    label = _labels(small_run_store, case)[0]
    first = _review(small_run_store, case, label, review_id="abc123")
    again = _review(small_run_store, case, label, review_id="abc123", comment="retried")
    assert first == again == "abc123"
    assert review_history(small_run_store, RUN_ID, case)["comment"].tolist() == ["checked"]
    with pytest.raises(InputError, match="review_id"):
        _review(small_run_store, case, label, review_id="not an id!")
