"""A view group played end to end by scripted members (no model), then measured: every
run the report reads is stored under the ids it reads, the rows count what the members
and the group said, and a rerun answers nothing new."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from sag.group.config import GroupConfig
from sag.runs.run import run_sag
from sag.store.tables import SagStore
from sag.views.measures import vote_letters
from sag.views.report import AFTER_VOTE_ROW, build_report, report_markdown, view_runs, view_specs

from ..fakes import ScriptedTurns

CFG = GroupConfig(name="v", counts=(3, 0, 1, 1), views=("complaint", "history", "pain-character"), alternatives=1,
                  t_max=1, rationale_tokens=8)
N_TEST, N_CAL = 24, 16
_LINE = re.compile(r"- (R\d) \([^)]*\): answer ([A-H])")
LETTERS = "ABCDEFGH"


def _policy(agent: str, prompt: str, request: object) -> tuple[str, str]:
    """Members answer a letter fixed by the length of what they read; in round 1 each takes
    the letter R2 said; the judge takes the last R1 line's letter; the safety agent A."""
    if agent.startswith("R"):
        said = dict(_LINE.findall(prompt))
        if said:
            return said.get("R2", "A"), "followed R2"
        reading = prompt.split("What you read of the case", 1)[-1]
        return LETTERS[len(reading) % 8], "read"
    if agent.startswith("J"):
        return [a for r, a in _LINE.findall(prompt) if r == "R1"][-1], "weighed"
    return "A", "no flag"


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("views") / "s.duckdb"
    with SagStore(path) as store:
        for spec in view_specs(CFG, N_TEST, N_CAL).values():
            run_sag(store, spec, runners={m: ScriptedTurns(_policy) for m in spec.cfg.models()}, retrievers={})
    return path


def test_every_run_is_stored_under_the_ids_the_report_reads(store_path: Path) -> None:
    runs = view_runs(CFG, N_TEST, N_CAL)
    with SagStore(store_path, read_only=True) as store:
        done = [len(store.outcomes(r)) for r in (runs.test, runs.cal, runs.dcem, runs.twins, runs.single)]
    assert done == [N_TEST, N_CAL, N_TEST, 2 * N_TEST, N_TEST]


def test_rows_count_what_the_members_and_the_group_said(store_path: Path) -> None:
    runs = view_runs(CFG, N_TEST, N_CAL)
    with SagStore(store_path, read_only=True) as store:
        outcomes = store.outcomes(runs.test)
        said = store.agent_distributions(runs.test)
        report = build_report(store, CFG, {"always A": {i: "A" for i in outcomes["item_id"]}}, n_test=N_TEST,
                              n_cal=N_CAL)
    truth = list(outcomes["truth"])
    rows = {r.name: r for r in report.rows}
    letters = {a: list(said[(said["agent_id"] == a) & (said["round"] == 0)]["answer"]) for a in ("R1", "R2", "R3")}
    for agent in ("R1", "R2", "R3"):
        assert rows[f"{agent} alone ({CFG.view_of(agent)})"].n_correct == sum(a == t for a, t in zip(letters[agent], truth))
        after = rows[f"{agent} after the debate"]
        assert after.n_correct == sum(a == t for a, t in zip(letters["R2"], truth))  # everyone took R2's letter
    index = np.array([[LETTERS.index(x) for x in letters[a]] for a in ("R1", "R2", "R3")])
    vote = vote_letters(index, np.eye(8)[index], list(LETTERS))
    assert rows["majority vote of the members"].n_correct == sum(v == t for v, t in zip(vote, truth))
    # after the debate every member took R2's letter, so their vote is R2's answer
    assert rows[AFTER_VOTE_ROW].n_correct == sum(a == t for a, t in zip(letters["R2"], truth))
    assert rows["the group (debate and judge)"].n_correct == int(outcomes["correct"].sum())
    assert rows["always A"].top_answer == "A" and rows["always A"].top_share == 1.0
    moved = {c.agent: c for c in report.changes}
    assert moved["R2"].kept == N_TEST and moved["R2"].wrong_to_right == moved["R2"].right_to_wrong == 0
    assert sum(moved["R1"].__dict__[k] for k in ("wrong_to_right", "right_to_wrong", "wrong_to_wrong", "kept")) == N_TEST
    assert set(report.cdr) == {"sex", "age"}
    text = report_markdown(report)
    assert "| R2 (history) |" in text and "Chance 0.125" in text and "x the seconds" in text


def test_a_rerun_answers_nothing_new(store_path: Path) -> None:
    spec = view_specs(CFG, N_TEST, N_CAL)["test"]
    with SagStore(store_path) as store:
        summary = run_sag(store, spec, runners={m: ScriptedTurns(_policy) for m in CFG.models()}, retrievers={})
    assert summary.computed == 0 and summary.model_calls == 0 and summary.total == N_TEST
