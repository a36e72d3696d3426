"""The agents table of the clinical markdown: each member's CAL accuracy, the accuracy of
its own round-1 D-CEM answer on TEST (a failed call is wrong), how often it was the
CAL-best agent and how often D-CEM sided with it when the panel split, on a small
hand-made export."""
from __future__ import annotations

import json
import math
import re
from types import SimpleNamespace
from typing import Any

import pandas as pd
import pytest

from dcem_clinical.report.agents import AGENT_ROW_COLUMNS, agent_rows, export_agent_rows, position_letter
from dcem_clinical.report.markdown import AGENTS_TITLE, render_clinical_markdown

HEADER = "| agent | name | model | CAL accuracy | TEST accuracy | CAL-best | sided with |"
STAT = {"name": "Agent B", "model": "stat:nb-evidence", "backend": "stat", "model_sha256": "f" * 64}


def _llm(name: str, model: str) -> dict[str, Any]:
    return {"name": name, "model": model, "backend": "llama.cpp", "model_sha256": "a" * 64}


def _cell(run_id: str, scenario: str, seed: int, agents: list[dict[str, Any]], cal: list[float],
          best: int) -> dict[str, Any]:
    info = {"agents": agents, "calibration_accuracy": cal, "best_agent": best}
    return {"run_id": run_id, "scenario": scenario, "seed": seed, "info_json": json.dumps(info)}


# (run, cell scenario, seed, case number) -> truth; and each agent's round-1 D-CEM labels
# ddxplus8, r1: cell S1/0 and S2/0, four TEST cases each; medqa-tri, r2: one cell, two cases
TRUTH = {("r1", "S1", 0): [0, 1, 2, 3], ("r1", "S2", 0): [4, 5, 6, 7], ("r2", "S1", 0): [0, 1]}
FIRST = {  # agent -> labels per cell (None: the call failed)
    ("r1", "S1", 0): {0: [0, 1, 2, 0], 1: [0, 1, None, 0]},   # A 3/4, B 2/4 (the failed call is wrong)
    ("r1", "S2", 0): {0: [4, 0, 0, 0], 1: [4, 5, 6, 7]},      # A 1/4, B 4/4
    ("r2", "S1", 0): {0: [0, 0], 1: [1, 0]},                  # A 1/2, B 0/2
}


def _turn(run_id: str, case_id: str, method: str, rnd: int, agent: int, label: int | None) -> dict[str, Any]:
    return {"run_id": run_id, "case_id": case_id, "method": method, "round": rnd, "agent": agent,
            "label": label, "error": "call failed: timeout" if label is None else None, "cached": False}


def _cases_and_turns() -> tuple[pd.DataFrame, pd.DataFrame]:
    cases, turns = [], []
    for (run_id, scenario, seed), truths in TRUTH.items():
        for i, truth in enumerate(truths):
            case_id = f"{scenario}-s{seed}-test-{i}"
            cases.append({"run_id": run_id, "case_id": case_id, "scenario": scenario, "seed": seed, "truth": truth})
            for agent, labels in FIRST[(run_id, scenario, seed)].items():
                turns.append(_turn(run_id, case_id, "dcem", 1, agent, labels[i]))
                # later rounds and other methods are not the member's own first answer
                turns.append(_turn(run_id, case_id, "dcem", 2, agent, truth))
                turns.append(_turn(run_id, case_id, "single", 1, agent, truth + 1))
    frame = pd.DataFrame(turns)
    return pd.DataFrame(cases), frame.assign(label=frame["label"].astype("Int32"))


# D-CEM outcomes of r1: cell -> (outcome round, reports at that round, decision) per case;
# round 1 of an outcome at round 2 is a decoy split; r2 has no traces (no split counted)
OUTCOMES = {
    ("r1", "S1", 0): [(2, [0, 0], 0), (2, [1, 2], 1), (2, [2, 3], 3), (2, [0, 1], 1)],  # A 1 of 3, B 2 of 3
    ("r1", "S2", 0): [(1, [4, 4], 4), (1, [0, 5], 5), (1, [0, 6], 6), (1, [0, 7], 2)],  # A 0 of 3, B 2 of 3
}


def _outcomes_and_traces() -> tuple[pd.DataFrame, pd.DataFrame]:
    outcomes, traces = [], []
    for (run_id, scenario, seed), rows in OUTCOMES.items():
        for i, (rounds, reports, decision) in enumerate(rows):
            case_id = f"{scenario}-s{seed}-test-{i}"
            for method in ("dcem", "dcem_noesc"):  # only D-CEM's own outcomes count
                outcomes.append({"run_id": run_id, "case_id": case_id, "method": method, "scenario": scenario,
                                 "seed": seed, "rounds": rounds, "decision": decision if method == "dcem" else 9})
            for rnd in range(1, rounds + 1):
                traces.append({"run_id": run_id, "case_id": case_id, "method": "dcem", "round": rnd,
                               "reports": reports if rnd == rounds else [5, 6]})
    return pd.DataFrame(outcomes), pd.DataFrame(traces)


def _export() -> SimpleNamespace:
    cells = pd.DataFrame([
        _cell("r1", "S1", 0, [_llm("Agent A", "SmolLM2.gguf"), STAT], [0.5, 0.8], 1),
        _cell("r1", "S2", 0, [_llm("Agent A", "SmolLM2.gguf"), STAT], [0.7, 0.9], 1),
        _cell("r2", "S1", 0, [_llm("Agent A", "gemma.gguf"), _llm("Agent B", "SmolLM2.gguf")], [0.3, 0.6], 1),
    ])
    cases, turns = _cases_and_turns()
    manifest = {"command": "python -m dcem_clinical run ...", "models": [], "runs": [
        {"run_id": "r1", "kind": "clinical", "spec": {"dataset": "ddxplus8", "agents": ["smollm2-135m", "stat"]}},
        {"run_id": "r2", "kind": "clinical", "spec": {"dataset": "medqa-tri",
                                                      "agents": ["gemma3-270m", "smollm2-135m"]}}]}
    metrics = pd.DataFrame([{"run_id": r, "scenario": s, "seed": seed, "method": m, "metric": "accuracy",
                             "value": 0.5} for (r, s, seed) in TRUTH for m in ("single", "dcem")])
    outcomes, traces = _outcomes_and_traces()
    return SimpleNamespace(cells=cells, cases=cases, turns=turns, manifest=manifest, metrics=metrics,
                           outcomes=outcomes, traces=traces)


def _agents_table(markdown: str, dataset: str) -> list[str]:
    block = markdown.split(f"(`{dataset}`)", 1)[1].split("#### ", 1)[0]
    assert block.count(AGENTS_TITLE) == 1 and block.count(HEADER) == 1
    table = block.split(HEADER, 1)[1].strip().splitlines()
    return [line for line in table[1:] if line.startswith("| ")]


def test_rows_per_cell_count_a_failed_call_wrong_and_mark_the_cal_best_agent() -> None:
    export = _export()
    rows = agent_rows(export.cells, export.cases, export.turns, export.manifest)
    assert list(rows.columns) == AGENT_ROW_COLUMNS and len(rows) == 6
    got = {(r.run_id, r.scenario, r.agent): (r.dataset, r.model, r.cal_accuracy, r.test_accuracy, r.best)
           for r in rows.itertuples()}
    assert got[("r1", "S1", 0)] == ("ddxplus8", "smollm2-135m", 0.5, 0.75, False)
    assert got[("r1", "S1", 1)] == ("ddxplus8", "stat:nb-evidence", 0.8, 0.5, True)  # 2 of 4: the failed call is wrong
    assert got[("r1", "S2", 0)][3:] == (0.25, False) and got[("r1", "S2", 1)][3:] == (1.0, True)
    assert got[("r2", "S1", 0)] == ("medqa-tri", "gemma3-270m", 0.3, 0.5, False)
    assert got[("r2", "S1", 1)][1:] == ("smollm2-135m", 0.6, 0.0, True)
    assert (rows["split_cases"] == 0).all()  # without outcomes and traces
    split = agent_rows(export.cells, export.cases, export.turns, export.manifest, outcomes=export.outcomes,
                       traces=export.traces).set_index(["run_id", "scenario", "agent"])
    assert split.loc[("r1", "S1", 0), ["split_cases", "split_sided"]].tolist() == [3, 1]
    assert split.loc[("r1", "S1", 1), ["split_cases", "split_sided"]].tolist() == [3, 2]
    assert split.loc[("r1", "S2", 0), ["split_cases", "split_sided"]].tolist() == [3, 0]
    assert split.loc[("r1", "S2", 1), ["split_cases", "split_sided"]].tolist() == [3, 2]
    assert split.loc[("r2", "S1", 0), ["split_cases", "split_sided"]].tolist() == [0, 0]


def test_markdown_has_one_agents_table_per_dataset_with_mean_and_spread_over_cells() -> None:
    export = _export()
    markdown = render_clinical_markdown(export.metrics, export.manifest, agents=export_agent_rows(export))
    assert markdown.count(AGENTS_TITLE) == 2
    # after the summary lines of each dataset
    ddx = markdown.split("(`ddxplus8`)", 1)[1].split("#### ", 1)[0]
    assert ddx.index("D-CEM action mix over the rounds played") < ddx.index(AGENTS_TITLE)
    assert _agents_table(markdown, "ddxplus8") == [
        # CAL 0.5, 0.7 -> 0.60 ± .10; TEST 3/4, 1/4 -> 0.50 ± .25; never CAL-best
        "| A | Agent A | smollm2-135m | 0.60 ± .10 | 0.50 ± .25 | 0 of 2 | 1 of 6 |",
        # CAL 0.8, 0.9 -> 0.85 ± .05; TEST 2/4 (one failed call), 4/4 -> 0.75 ± .25; best in both cells
        "| B | Agent B | stat:nb-evidence | 0.85 ± .05 | 0.75 ± .25 | 2 of 2 | 4 of 6 |"]
    assert _agents_table(markdown, "medqa-tri") == [  # one cell: no spread
        "| A | Agent A | gemma3-270m | 0.30 | 0.50 | 0 of 1 | — |",
        "| B | Agent B | smollm2-135m | 0.60 | 0.00 | 1 of 1 | — |"]


def test_without_agents_input_the_markdown_is_unchanged_and_has_no_agents_table() -> None:
    export = _export()
    plain = render_clinical_markdown(export.metrics, export.manifest)
    assert AGENTS_TITLE not in plain
    assert render_clinical_markdown(export.metrics, export.manifest, agents=None) == plain
    with_agents = render_clinical_markdown(export.metrics, export.manifest, agents=export_agent_rows(export))
    # the agents tables are the only addition
    stripped = re.sub(re.escape(AGENTS_TITLE) + r"[^\n]*\n\n(?:\|[^\n]*\n)+\n?", "", with_agents)
    assert stripped.rstrip("\n") == plain.rstrip("\n") and stripped != with_agents


@pytest.mark.parametrize("empty", ["cells", "cases", "turns"])
def test_an_export_without_cells_cases_or_turns_gives_no_agent_rows(empty: str) -> None:
    export = _export()
    setattr(export, empty, getattr(export, empty).iloc[0:0])
    assert export_agent_rows(export) is None


def test_a_cell_without_dcem_turns_has_no_test_accuracy_and_prints_a_dash() -> None:
    export = _export()
    turns = export.turns[export.turns["method"] != "dcem"]
    rows = agent_rows(export.cells, export.cases, turns, export.manifest)
    assert rows["test_accuracy"].map(math.isnan).all() and rows["cal_accuracy"].notna().all()
    markdown = render_clinical_markdown(export.metrics, export.manifest, agents=rows)
    assert "| A | Agent A | gemma3-270m | 0.30 | — | 0 of 1 |" in markdown


def test_position_letters() -> None:
    assert [position_letter(a) for a in (0, 1, 7, 25, 26)] == ["A", "B", "H", "Z", "A2"]
