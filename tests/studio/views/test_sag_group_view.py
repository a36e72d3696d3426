"""What the Agent group page shows: run and item labels, the timeline, distributions,
passages, flags, judges, mediator rounds, run comparison and the launch settings."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from common.errors import ConfigError
from studio.views.sag_launch import MAX_LAUNCH_ITEMS, launch_message, launch_spec, progress_update
from common.work import WorkSummary
from sag.store.tables import MESSAGE_COLUMNS, SagStore
from studio.views.sag_group_view import (DIST_COLUMNS, FLAG_COLUMNS, JUDGE_COLUMNS, MEDIATOR_COLUMNS,
                                         PASSAGE_COLUMNS, Outcome, compare_runs, distributions, item_labels,
                                         load_item_view, mediator_table, outcome_of, passages, run_labels, timeline,
                                         turn_markdown)

from tests.sag.group_runs import GROUP_RUN_ITEMS, build_group_runs, telling_seed


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    path = tmp_path_factory.mktemp("views") / "sag.duckdb"
    runs = build_group_runs(path, tmp_path_factory.mktemp("idx"))
    return path, {name: s.run_id for name, s in runs.items()}


def _first_item(db: SagStore, run_id: str) -> str:
    return str(db.outcomes(run_id)["item_id"].iloc[0])


def test_run_and_item_labels(stored: tuple[Path, dict[str, str]]) -> None:
    path, ids = stored
    with SagStore(path) as db:
        labels = run_labels(db.runs())
        items = item_labels(db.outcomes(ids["sag"]))
    assert set(labels) == set(ids.values())
    assert labels[ids["dcem"]].startswith(f"medqa · sag-6-dcem · dcem · 3/3 answered · seed {telling_seed()} ·")
    assert len(items) == GROUP_RUN_ITEMS and all("(wrong)" in v for v in items.values())  # B is never the truth
    runs = pd.DataFrame({"run_id": ["r-1", "r-2"], "benchmark": ["medqa"] * 2, "group_name": ["single"] * 2,
                         "method": ["single"] * 2, "seed": [0, 1], "items": [5, 5], "answered": [0, 2]})
    assert list(run_labels(runs)) == ["r-2"] and list(run_labels(runs, answered_only=False)) == ["r-1", "r-2"]
    outcomes = pd.DataFrame({"item_id": ["a", "b", "c"], "answer": ["A", "REFUSE", "ESCALATE"],
                             "truth": ["A", "B", "C"], "correct": [True, False, False]})
    assert [v.split("(")[-1] for v in item_labels(outcomes).values()] == ["right)", "handed to a human)",
                                                                          "handed to a human)"]


def test_item_view_of_a_debate(stored: tuple[Path, dict[str, str]]) -> None:
    path, ids = stored
    with SagStore(path) as db:
        item = _first_item(db, ids["sag"])
        view = load_item_view(db, ids["sag"], item)
    assert view.letters == ("A", "B", "C", "D") and not view.dcem and view.question
    assert view.outcome.answer == "B" and view.outcome.rounds == 2 and view.outcome.kind == "info"
    assert "**B**" in view.outcome.line and "not correct" in view.outcome.line
    tl = view.timeline
    assert tl.rounds == (0, 1, 2) and [lane.role for lane in tl.lanes] == ["reasoning", "knowledge", "safety", "judge"]
    reasoning, knowledge, safety, judge = tl.lanes
    assert [(t.agent_id, t.answer) for t in reasoning.cells[0]] == [("R1", "B"), ("R2", "C")]
    assert [t.max_probability for t in reasoning.cells[0]] == pytest.approx([0.7, 0.7])
    assert [t.phase for t in knowledge.cells[0]] == ["retrieve", "retrieve"] and knowledge.cells[0][0].retrieved
    assert safety.cells[0] == () and safety.cells[1][0].flags == ("check the dose before acting",)
    assert judge.cells[2][0].new is False
    cited = [t for t in knowledge.cells[1] if t.phase == "debate"]
    assert cited and all(t.citations and t.parse_note is None for t in cited)
    assert "max p 0.70" in turn_markdown(reasoning.cells[0][1]) and "NEW: no" in turn_markdown(judge.cells[1][0])
    assert turn_markdown(knowledge.cells[0][0]).startswith("**K1** searched: mlp-")


def test_item_view_tables(stored: tuple[Path, dict[str, str]]) -> None:
    path, ids = stored
    with SagStore(path) as db:
        view = load_item_view(db, ids["sag"], _first_item(db, ids["sag"]))
    dist = view.distributions
    assert tuple(dist.columns) == DIST_COLUMNS
    assert dist.groupby(["round", "agent"])["probability"].sum().round(6).eq(1.0).all()
    r2 = dist[(dist["round"] == 0) & (dist["agent"] == "R2")]
    assert r2.set_index("option")["probability"].idxmax() == "C"
    assert list(dict.fromkeys(dist[dist["round"] == 1]["agent"])) == ["R1", "R2", "K1", "K2", "S1", "J1"]
    found = view.passages
    assert tuple(found.columns) == PASSAGE_COLUMNS and len(found) == 2 * 3 * 3  # 2 agents, 3 rounds, top 3
    assert set(found["corpus"]) == {"medlineplus", "pubmedqa"} and (found["score"] > 0).all()
    assert (found["title"] != "").all() and (found["text"] != "").all()
    assert set(found.loc[found["cited_by"] != "", "cited_by"]) == {"K1, K2"}
    assert tuple(view.flags.columns) == FLAG_COLUMNS and list(view.flags["round"]) == [1, 2]
    assert tuple(view.judges.columns) == JUDGE_COLUMNS and list(view.judges["says something new"]) == ["no", "no"]
    assert tuple(view.mediator.columns) == MEDIATOR_COLUMNS and view.mediator.empty


def test_item_view_of_a_dcem_run(stored: tuple[Path, dict[str, str]]) -> None:
    path, ids = stored
    with SagStore(path) as db:
        view = load_item_view(db, ids["dcem"], _first_item(db, ids["dcem"]))
    assert view.dcem and not view.mediator.empty
    assert view.mediator["action"].iloc[-1] in ("STOP_AND_DECIDE", "STOP_AND_ESCALATE")
    steers = {(r["round"] + 1, r["steer target"].split(" → ")[0]) for r in view.mediator.to_dict("records")
              if r["steer target"]}
    challenged = [t for lane in view.timeline.lanes for cell in lane.cells for t in cell if t.challenge]
    assert {(t.round, t.agent_id) for t in challenged} <= steers
    assert all("challenge received" in turn_markdown(t) for t in challenged)
    assert view.passages.empty  # no retriever in this run


def test_outcome_and_missing_item(stored: tuple[Path, dict[str, str]]) -> None:
    path, ids = stored
    with SagStore(path) as db:
        with pytest.raises(ConfigError, match="no stored outcome"):
            load_item_view(db, ids["sag"], "medqa-nope")
    refused = Outcome("REFUSE", "B", False, "safety and judge refuse", 1, "refused")
    assert refused.handed_to_human and refused.kind == "warning" and "handed to a human" in refused.line
    assert Outcome("A", "A", True, "the judge's answer", 2, "settled").kind == "info"  # stated, not celebrated
    with pytest.raises(ConfigError):
        outcome_of(pd.DataFrame(columns=["item_id"]), "x")


def _message(**values: object) -> dict[str, object]:
    row: dict[str, object] = {c: None for c in MESSAGE_COLUMNS}
    row.update({"round": 0, "phase": "propose", "agent_id": "R1", "role": "reasoning", "distribution": [],
                "citations": [], "unknown_citations": [], "flags": [], "retrieved_json": "[]",
                "new_substance": pd.NA, "answer": math.nan, "parse_note": math.nan})
    row.update(values)
    return row


def test_missing_and_odd_cells_are_read_without_failing() -> None:
    messages = pd.DataFrame([
        _message(),
        _message(round=1, phase="debate", answer="A", distribution=[0.6, 0.4], rationale="*bold* $x$ [mlp-1]\nnext",
                 error="model failed", parse_note="no citation", note="re-examine A"),
        _message(round=1, phase="retrieve", agent_id="K1", role="knowledge", retrieved_json="not json"),
        _message(round=1, phase="retrieve", agent_id="K2", role="knowledge",
                 retrieved_json=json.dumps([["xyz-1", 2.5], ["mlp-1", 1.0]])),
    ])
    tl = timeline(messages)
    assert tl.rounds == (0, 1)
    first = tl.lanes[0].cells[0][0]
    assert first.answer is None and first.max_probability is None and first.new is None and first.parse_note is None
    text = turn_markdown(tl.lanes[0].cells[1][0])
    assert "\\*bold\\* \\$x\\$ \\[mlp-1\\] next" in text and "error: model failed" in text
    assert "parse note: no citation" in text and "challenge received: re-examine A" in text
    assert turn_markdown(tl.lanes[1].cells[1][0]) == "**K1** searched: nothing"
    assert tl.lanes[2].empty and not tl.lanes[0].empty
    assert len(distributions(messages, ("A", "B"))) == 2 and distributions(messages, ("A", "B", "C")).empty
    found = passages(messages, lookup=lambda ids: {})
    assert list(found["passage_id"]) == ["xyz-1", "mlp-1"] and list(found["corpus"]) == ["", "medlineplus"]
    assert (found["title"] == "").all()
    rounds = pd.DataFrame({"round": [1], "action": ["CONTINUE"], "decision": ["A"], "energy": [0.5],
                           "margin": [math.nan], "steer_agent": [None], "steer_alternative": [math.nan]})
    assert mediator_table(rounds).iloc[0].tolist() == [1, "CONTINUE", "A", 0.5, None, ""]


def test_compare_two_runs(stored: tuple[Path, dict[str, str]]) -> None:
    path, ids = stored
    with SagStore(path) as db:
        same = compare_runs(db.outcomes(ids["sag"]), db.outcomes(ids["majority"]))
        apart = compare_runs(db.outcomes(ids["sag"]), db.outcomes(ids["dcem"]))
    assert same.n_common == GROUP_RUN_ITEMS and list(same.table["answer A"]) == ["B"] * 3
    assert list(same.table["answer B"]) == ["C"] * 3 and same.table["rounds B"].eq(0).all()
    truth_c = int((same.table["truth"] == "C").sum())
    assert same.accuracy_a == 0.0 and same.accuracy_b == pytest.approx(truth_c / 3) and truth_c >= 1
    assert f"accuracy of B: {truth_c / 3:.3f}" in same.caption
    assert "Most frequent answer: run A answered 'B' on 100.0% of items, run B 'C' on 100.0%" in same.caption
    diff, low, high = same.difference
    assert diff == pytest.approx(truth_c / 3) and low <= diff <= high and low >= 0
    assert f"B - A on the same items: {diff:+.3f}" in same.caption
    assert apart.n_common == 0 and apart.accuracy_a is None and "no item in common" in apart.caption


def test_launch_settings_are_checked() -> None:
    spec = launch_spec("medqa", "sag-6", 3, 1, 2)
    assert spec.cfg.name == "sag-6" and spec.cfg.t_max == 2 and spec.n_items == 3 and spec.seed == 1
    bad = ((("nejm", "sag-6", 3, 0, 2), "benchmark"), (("medqa", "sag-99", 3, 0, 2), "group"),
           (("medqa", "sag-6", 0, 0, 2), "items"), (("medqa", "sag-6", MAX_LAUNCH_ITEMS + 1, 0, 2), "items"),
           (("medqa", "sag-6", 3, -1, 2), "seed"), (("medqa", "sag-6", 3, 0, 11), "t_max"))
    for args, field in bad:
        with pytest.raises(ConfigError, match=f"^{field}"):
            launch_spec(*args)  # type: ignore[arg-type]
    assert progress_update(2, 4, "medqa-0001") == (0.5, "2 of 4 items answered (medqa-0001)")
    assert progress_update(1, 5, "calibration") == (0.2, "calibration: 1 of 5 items")
    assert progress_update(0, 0, "x")[0] == 1.0
    text = launch_message(WorkSummary("sag-x", True, 2, 1, 3, True, seconds=1.25, model_calls=28, cached_calls=14))
    assert text == ("Run sag-x: resumed; 2 item(s) answered now of 3, 28 model call(s), 14 answered from the "
                    "call log, 1.2 s.")


def test_the_most_frequent_answer_keeps_the_run_apart_from_the_letter() -> None:
    from sag.runs.compare import RunComparison

    table = pd.DataFrame({"answer A": ["A", "A", "B"], "answer B": ["A", "C", "C"]})
    caption = RunComparison(table, 0.5, 0.5).caption
    assert "run A answered 'A' on 66.7% of items, run B 'C' on 66.7%" in caption
    assert "A A on" not in caption
