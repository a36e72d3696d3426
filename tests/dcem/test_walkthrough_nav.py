"""The case table and the deep links of the Case walkthrough page."""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from studio.views.decision_view import HIGH_RISK_MARK, cell_loss, decision_table, loss_frame
from studio.views.walkthrough import case_list, case_trace
from studio.views.walkthrough_nav import (
    CASE_TABLE_COLUMNS,
    WalkLink,
    case_table,
    final_energies,
    link_query,
    outcome_words,
    parse_link,
    picked_case,
    resolve_choice,
    resolve_round,
)
from studio.views.walkthrough_view import load_walk_case, round_view
from dcem.store.database import Store


def test_case_table_has_the_outcome_and_final_energy(run_db: Path) -> None:
    with Store(run_db) as store:
        cases = case_list(store, "ui-run", "dcem")
        energies = final_energies(store, "ui-run", "dcem")
        table = case_table(cases, energies)
        trace = case_trace(store, "ui-run", cases["case_id"].iloc[-1], "dcem")
        assert final_energies(store, "ui-run", "single") == {}
    assert list(table.columns) == CASE_TABLE_COLUMNS and len(table) == len(cases)
    final = trace.rounds[trace.rounds["round"] == trace.outcome_round]["energy"].iloc[0]
    assert math.isclose(table["final energy"].iloc[-1], final)
    assert (table["escalated"] == (table["outcome"] == "escalated to a human")).all()
    assert set(table["outcome"]) <= {"certified decision", "decision at the round budget", "escalated to a human"}
    assert case_table(cases, {}, mediated=False)["final energy"].isna().all()
    assert list(case_table(cases.iloc[:0], energies).columns) == CASE_TABLE_COLUMNS


def test_outcome_words() -> None:
    assert outcome_words("STOP_AND_DECIDE", True, False) == "certified decision"
    assert outcome_words("STOP_AND_DECIDE", False, True) == "decision at the round budget"
    assert outcome_words("STOP_AND_ESCALATE", False, False) == "escalated to a human"
    assert outcome_words("STOP_AND_DECIDE", False, False, mediated=False) == "decision (no mediator)"


def test_a_click_opens_a_case_only_when_the_selection_changes() -> None:
    ids = ["a", "b", "c"]
    assert picked_case([1], None, ids) == "b"
    assert picked_case([1], [1], ids) is None  # the same selection on a later run: the case chosen since stays
    assert picked_case([2], [1], ids) == "c"
    assert picked_case([], [1], ids) is None and picked_case([5], [], ids) is None


def test_links_round_trip_and_ignore_other_parameters() -> None:
    query = link_query("ui-run", "dcem", "S1-s0-003", 2)
    assert query == "?run=ui-run&method=dcem&case=S1-s0-003&round=2"
    assert parse_link({"run": "ui-run", "case": ["x", "S1 s0"], "round": " 3 ", "embed": "true"}) == \
        WalkLink("ui-run", None, "S1 s0", "3")
    assert parse_link({"embed": "true", "run": ""}).empty
    assert link_query("a&b", "dcem", "c d", 1) == "?run=a%26b&method=dcem&case=c+d&round=1"


def test_bad_link_parts_fall_back_with_a_message() -> None:
    assert resolve_choice("b", ["a", "b"], "case", "a") == ("b", None)
    assert resolve_choice(None, ["a"], "case", "a") == ("a", None)
    value, message = resolve_choice("zz", ["a", "b"], "case", "a")
    assert value == "a" and message == "The link asks for case 'zz', which is not available here; showing 'a' instead."
    assert resolve_round("2", 4) == (2, None) and resolve_round(None, 4) == (1, None)
    assert resolve_round("9", 4) == (4, "The link asks for round 9, but this case has rounds 1 to 4; showing round 4.")
    assert resolve_round("0", 4)[0] == 1
    number, message = resolve_round("two", 4)
    assert number == 1 and message is not None and "not a round number" in message


def test_decision_table_explains_the_bayes_decision() -> None:
    labels = ("mild", "severe", "other")
    loss = np.array([[0.0, 5.0, 1.0], [1.0, 0.0, 1.0], [1.0, 5.0, 0.0]])
    pooled = [0.6, 0.3, 0.1]
    table = decision_table(labels, pooled, loss, [1], decision=1)
    assert table["class"].tolist() == ["mild", "severe (decision)", "other"]
    assert table["high-risk"].tolist() == ["", HIGH_RISK_MARK, ""]
    risks = table["expected loss"].to_numpy()
    assert int(np.argmin(risks)) == 1 and math.isclose(risks[0], 1.6)  # 5 * 0.3 + 1 * 0.1
    assert table["cost if true"].tolist() == [1.0, 0.0, 1.0]
    frame = loss_frame(labels, loss, [1])
    assert frame.loc["decide mild", f"true severe {HIGH_RISK_MARK}"] == 5.0 and frame.shape == (3, 3)


def test_round_view_carries_the_reason_and_the_decision(run_db: Path) -> None:
    with Store(run_db) as store:
        cases = case_list(store, "ui-run", "dcem")
        case_id = cases[cases["escalated"]]["case_id"].iloc[0]
        case = load_walk_case(store, "ui-run", case_id, "dcem", llm=False)
        assert case.loss is not None and np.array_equal(case.loss, cell_loss(store, "ui-run", case_id))
    last = round_view(case, case.trace.outcome_round, method="dcem", cases=cases)
    assert last.reason is not None and ": escalate, the case goes to a human reviewer" in last.reason
    assert last.decision is not None and len(last.decision) == len(case.trace.labels)
    assert last.decision["class"].str.endswith("(decision)").sum() == 1
