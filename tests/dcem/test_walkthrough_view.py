"""What the Case walkthrough page shows, computed without Streamlit."""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Iterator

import numpy as np
import pandas as pd
import pytest

from dcem.analysis.run_info import run_methods
from studio.views.walkthrough import case_list
from studio.views.walkthrough_view import (
    SYNTHETIC_METHODS,
    Notice,
    clamp_round,
    confusion_view,
    default_method_index,
    filter_options,
    load_walk_case,
    round_view,
    select_cases,
    truth_text,
    walkthrough_methods,
)
from dcem.core.vocabulary import mediated_methods
from dcem.store.database import Store, StoreError

from .small_run import RUN_ID, small_run_file, small_run_store  # noqa: F401


@pytest.fixture()
def clinical_store(clinical_db: Path, tmp_path: Path) -> Iterator[tuple[Store, str]]:
    path = tmp_path / "clinical.duckdb"
    shutil.copy(clinical_db, path)
    store = Store(path)
    yield store, store.latest_run("clinical")
    store.close()


def test_methods_offered_and_selected_first(small_run_store: Store,
                                            clinical_store: tuple[Store, str]) -> None:
    assert walkthrough_methods(small_run_store, RUN_ID, llm=False) == list(SYNTHETIC_METHODS)
    store, run_id = clinical_store
    offered = walkthrough_methods(store, run_id, llm=True)
    assert offered == run_methods(store, run_id) and "dcem" in offered and len(offered) > 2
    assert offered[default_method_index(offered)] == "dcem"
    assert default_method_index(["single:fake-a", "free"]) == 0


def test_filters_and_selection_caption(small_run_store: Store) -> None:
    cases = case_list(small_run_store, RUN_ID, "dcem")
    options = filter_options(cases)
    assert options["scenario"] == ["S1", "S3b"]
    assert options["outcome"] == sorted(set(cases["outcome"]))
    assert set(options["outcome"]) <= {"certified decision", "decision at the round budget", "decision",
                                       "escalated to a human"}
    certified = select_cases(cases, outcomes=["certified decision"])
    assert not certified.empty and certified.cases["certified"].all()
    everything = select_cases(cases)
    assert everything.caption == f"{len(cases)} of {len(cases)} cases match." and not everything.empty
    escalated = select_cases(cases, scenarios=["S3b"], escalated_only=True)
    assert escalated.case_ids == escalated.cases["case_id"].tolist()
    assert set(escalated.cases["scenario"]) <= {"S3b"} and escalated.cases["escalated"].all()
    assert escalated.caption.startswith(f"{len(escalated.case_ids)} of {len(cases)}")
    nothing = select_cases(cases, truths=["no such class"])
    assert nothing.empty and nothing.caption == f"0 of {len(cases)} cases match."


def test_clamp_round() -> None:
    assert [clamp_round(v, 4) for v in (-3, 0, 1, 3, 4, 9, "2")] == [1, 1, 1, 3, 4, 4, 2]


def test_synthetic_case_rounds(small_run_store: Store) -> None:
    cases = case_list(small_run_store, RUN_ID, "dcem")
    steered = cases[cases["steers"] > 0] if "steers" in cases else cases
    case_id = (steered if len(steered) else cases)["case_id"].iloc[0]
    case = load_walk_case(small_run_store, RUN_ID, case_id, "dcem", llm=False)
    assert case.text is None and case.agents.empty and case.turns.empty and case.names == {}
    last = case.trace.outcome_round
    final = round_view(case, last, method="dcem", cases=cases)
    row = case.trace.rounds[case.trace.rounds["round"] == last].iloc[0]
    assert final.mediated and final.title == f"Round {last} of {last}: {row['action']}"
    assert [name for name, _ in final.metrics] == ["Bayes decision", "Runner-up", "Margin", "Energy"]
    assert final.metrics[3][1] == f"{row['energy']:.3f}"
    assert len(final.agent_lines) == len(row["reports"])
    assert final.agent_lines[0].startswith("**Agent 1** reports")
    assert final.turns_heading is None and not final.show_turns
    kinds = {"STOP_AND_ESCALATE": "error", "STOP_AND_DECIDE": "success"}
    assert [n.kind for n in final.notices] == [kinds[row["action"]]]
    assert truth_text(case.trace) == f"True label: **{case.trace.truth}**"


def test_steer_round_names_the_challenge(small_run_store: Store) -> None:
    cases = case_list(small_run_store, RUN_ID, "dcem")
    for case_id in cases["case_id"]:
        case = load_walk_case(small_run_store, RUN_ID, case_id, "dcem", llm=False)
        steers = case.trace.rounds[(case.trace.rounds["action"] == "DIFFERENTIAL_STEER")
                                   & ~case.trace.rounds["after_outcome"]]
        if len(steers):
            break
    else:
        pytest.fail("the small run has no steered case")
    number = int(steers["round"].iloc[0])
    view = round_view(case, number, method="dcem", cases=cases)
    target = int(steers["steer_agent"].iloc[0])
    assert view.notices[0] == Notice("warning", view.notices[0].text)
    assert view.notices[0].text.startswith(f"Challenge to agent {target + 1}: ")
    feats = steers["steer_features"].iloc[0]
    if feats is not None and len(feats):
        assert view.notices[1].kind == "write" and view.notices[1].text.startswith("Feature set S(t): ")


def test_unknown_case_is_a_store_error(small_run_store: Store) -> None:
    with pytest.raises(StoreError):
        load_walk_case(small_run_store, RUN_ID, "no-such-case", "dcem", llm=False)


def test_language_model_case_shows_turns_and_names(clinical_store: tuple[Store, str]) -> None:
    store, run_id = clinical_store
    cases = case_list(store, run_id, "dcem")
    case_id = cases["case_id"].iloc[0]
    case = load_walk_case(store, run_id, case_id, "dcem", llm=True)
    assert case.text and len(case.agents) == 2 and set(case.models.values()) == {"oracle-a", "oracle-b"}
    view = round_view(case, 1, method="dcem", cases=cases)
    assert view.turns_heading == "**The agents' answers this round**" and view.show_turns
    assert set(view.turns["round"]) == {1} and len(view.turns) == 2
    names = list(case.names.values())
    assert view.agent_lines[0].startswith(f"**{names[0]}** reports")


def test_unmediated_method_shows_only_turns(clinical_store: tuple[Store, str]) -> None:
    store, run_id = clinical_store
    method = next(m for m in run_methods(store, run_id) if m not in mediated_methods())
    cases = case_list(store, run_id, method)
    case = load_walk_case(store, run_id, cases["case_id"].iloc[0], method, llm=True)
    last = case.trace.outcome_round
    view = round_view(case, last, method=method, cases=cases)
    assert not view.mediated and view.metrics == [] and view.agent_lines == [] and view.show_turns
    decision = cases[cases["case_id"] == case.trace.case_id]["decision"].iloc[0]
    assert view.notices == [Notice("success", f"Decision {decision} ({view.title.split(': ', 1)[1]}, no mediator).")]
    if last > 1:
        assert round_view(case, 1, method=method, cases=cases).notices == []


def test_confusion_panels(small_run_store: Store) -> None:
    cases = case_list(small_run_store, RUN_ID, "dcem")
    view = confusion_view(small_run_store, RUN_ID, cases, "S3b", "dcem")
    assert view.counts.ndim == 4 and view.counts.shape[2] == view.counts.shape[3] == len(view.labels)
    panels = view.panels(1, {0: "Left"})
    assert len(panels) == view.n_agents and panels[0].title == "Left, round 1"
    assert panels[1].title == "Agent 2, round 1"
    for panel in panels:
        sums = panel.share.sum(axis=1)
        seen = panel.counts.sum(axis=1) > 0
        assert np.allclose(sums[seen], 1.0) and np.allclose(sums[~seen], 0.0)
    n_s3b = int((cases["scenario"] == "S3b").sum())
    assert int(view.counts[0, 0].sum()) == n_s3b
    assert isinstance(cases, pd.DataFrame)
