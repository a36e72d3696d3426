"""Reading a case of a language-model run from the store: its text, its panel of agents
(names, models, role sentences, calibration accuracy, few-shot settings) and every agent
turn, by round; the outcome rows of a run's cases, one case's episode head, the loss
matrix of its cell and a scenario's round reports.  The walkthrough and the review read
these; so does the review store."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd

from dcem.store.database import Store, StoreError

__all__ = ["TURN_COLUMNS", "AGENT_COLUMNS", "case_text", "case_agents", "few_shot_agents", "agent_turns",
           "cell_loss", "case_outcome_rows", "case_head", "scenario_reports", "longest_escalated_case"]


TURN_COLUMNS = ["round", "agent", "agent_name", "note", "reply", "label", "probabilities", "error", "cached"]
AGENT_COLUMNS = ["agent", "name", "model", "role", "calibration_accuracy", "view"]


def _cell_row(store: Store, run_id: str, case_id: str) -> tuple[list[str], dict]:
    row = store.con.execute(
        "SELECT k.labels, k.info_json FROM cases c JOIN cells k ON k.run_id = c.run_id "
        "AND k.scenario = c.scenario AND k.seed = c.seed WHERE c.run_id = ? AND c.case_id = ?",
        [run_id, case_id]).fetchone()
    if row is None:
        raise StoreError(f"run {run_id!r} has no case {case_id!r}")
    try:
        info = json.loads(row[1]) if row[1] else {}
    except ValueError:
        info = {}
    return list(row[0]), info if isinstance(info, dict) else {}


def _agent_name(agents: list, a: int) -> str:
    if a < len(agents) and isinstance(agents[a], dict) and agents[a].get("name"):
        return str(agents[a]["name"])
    return f"Agent {a + 1}"


def case_text(store: Store, run_id: str, case_id: str) -> str | None:
    """The case text the agents of a language-model run read; None when none is stored."""
    row = store.con.execute("SELECT text FROM case_texts WHERE run_id = ? AND case_id = ?",
                            [run_id, case_id]).fetchone()
    return None if row is None else str(row[0])


def case_agents(store: Store, run_id: str, case_id: str) -> pd.DataFrame:
    """The panel of a case's cell: one row per agent (columns :data:`AGENT_COLUMNS`).

    For a language-model run: name, model, role sentence, calibration accuracy and view
    (the part of the case the member read, e.g. ``complaint``; None when it read all of
    it) from the cell's info; empty when the cell does not name its agents (synthetic runs).
    """
    _, info = _cell_row(store, run_id, case_id)
    agents = info.get("agents") or []
    if not isinstance(agents, list) or not agents:
        return pd.DataFrame(columns=AGENT_COLUMNS)
    roles = info.get("roles") or []
    acc = info.get("calibration_accuracy") or []
    views = info.get("views") if isinstance(info.get("views"), list) else []
    rows = []
    for a, agent in enumerate(agents):
        model = agent.get("model") if isinstance(agent, dict) else agent
        view = agent.get("view") if isinstance(agent, dict) and agent.get("view") else (
            views[a] if a < len(views) else None)
        rows.append({"agent": a, "name": _agent_name(agents, a), "model": None if model is None else str(model),
                     "role": str(roles[a]) if a < len(roles) else None,
                     "calibration_accuracy": float(acc[a]) if a < len(acc) and acc[a] is not None else None,
                     "view": None if view in (None, "all") else str(view)})
    return pd.DataFrame(rows, columns=AGENT_COLUMNS)


def few_shot_agents(store: Store, run_id: str, case_id: str) -> dict[int, int]:
    """Agent index -> k for the agents of a case's cell that showed k solved examples per
    prompt (retrieval few-shot, recorded in the cell's agent information); empty when none did."""
    _, info = _cell_row(store, run_id, case_id)
    agents = info.get("agents") if isinstance(info.get("agents"), list) else []
    out = {}
    for a, agent in enumerate(agents):
        few = agent.get("few_shot") if isinstance(agent, dict) else None
        k = few.get("k") if isinstance(few, dict) else None
        if isinstance(k, int) and not isinstance(k, bool) and k > 0:
            out[a] = k
    return out


def agent_turns(store: Store, run_id: str, case_id: str, method: str) -> pd.DataFrame:
    """Every stored agent turn of a case under ``method``, by round then agent.

    Columns :data:`TURN_COLUMNS`: the mediator note the agent received before answering
    (None in round 1), its raw reply, the parsed label (a string, None when unusable),
    its probability vector (list of floats over the cell's labels, or None), the error
    (None when the turn succeeded) and whether the call log answered it.  Empty for runs
    without agent turns (synthetic runs).
    """
    labels, info = _cell_row(store, run_id, case_id)
    agents = info.get("agents") if isinstance(info.get("agents"), list) else []
    df = store.con.execute(
        "SELECT round, agent, note, reply, label, probabilities, error, cached FROM agent_turns "
        "WHERE run_id = ? AND case_id = ? AND method = ? ORDER BY round, agent", [run_id, case_id, method]).df()
    if df.empty:
        return pd.DataFrame(columns=TURN_COLUMNS)

    def text(value: object) -> str | None:
        return None if value is None or (isinstance(value, float) and np.isnan(value)) else str(value)

    def obj(values: list) -> pd.Series:  # object dtype keeps None (a string dtype would turn it into NaN)
        return pd.Series(values, dtype=object)

    return pd.DataFrame({
        "round": df["round"].astype(int).to_numpy(), "agent": df["agent"].astype(int).to_numpy(),
        "agent_name": obj([_agent_name(agents, int(a)) for a in df["agent"]]),
        "note": obj([text(v) for v in df["note"]]), "reply": obj([text(v) for v in df["reply"]]),
        "label": obj([None if pd.isna(v) or not 0 <= int(v) < len(labels) else labels[int(v)]
                      for v in df["label"]]),
        "probabilities": obj([None if p is None or (isinstance(p, float) and np.isnan(p)) else
                              [float(x) for x in p] for p in df["probabilities"]]),
        "error": obj([text(v) for v in df["error"]]), "cached": df["cached"].astype(bool).to_numpy()},
        columns=TURN_COLUMNS)


def cell_loss(store: Store, run_id: str, case_id: str) -> np.ndarray:
    """The loss matrix L[d, y] of the cell a case belongs to; StoreError for an unknown case."""
    row = store.con.execute(
        "SELECT k.loss FROM cases c JOIN cells k ON k.run_id = c.run_id AND k.scenario = c.scenario "
        "AND k.seed = c.seed WHERE c.run_id = ? AND c.case_id = ?", [run_id, case_id]).fetchone()
    if row is None:
        raise StoreError(f"run {run_id!r} has no case {case_id!r}")
    return np.asarray(row[0], dtype=float)


def case_outcome_rows(store: Store, run_id: str, method: str) -> pd.DataFrame:
    """One row per case of a run for ``method``: its outcome (truth, action, decision, rounds,
    certified, budget, loss as indices and flags) beside its cell's labels and high-risk
    classes, by scenario, seed and case."""
    return store.con.execute(
        "SELECT o.case_id, c.scenario, c.seed, o.truth, o.action, o.decision, o.rounds, o.certified, "
        "o.budget, o.loss, k.labels, k.high_risk FROM outcomes o "
        "JOIN cases c USING (run_id, case_id) "
        "JOIN cells k ON k.run_id = o.run_id AND k.scenario = c.scenario AND k.seed = c.seed "
        "WHERE o.run_id = ? AND o.method = ? ORDER BY c.scenario, c.seed, o.case_id",
        [run_id, method]).df()


def case_head(store: Store, run_id: str, case_id: str, method: str) -> tuple | None:
    """(scenario, seed, truth, features, labels, high_risk, config_json, action, rounds) of a
    case's episode under ``method``; None when the run has no such case."""
    return store.con.execute(
        "SELECT c.scenario, c.seed, c.truth, c.features, k.labels, k.high_risk, k.config_json, o.action, "
        "o.rounds FROM cases c JOIN cells k ON k.run_id = c.run_id AND k.scenario = c.scenario "
        "AND k.seed = c.seed JOIN outcomes o ON o.run_id = c.run_id AND o.case_id = c.case_id "
        "WHERE c.run_id = ? AND c.case_id = ? AND o.method = ?", [run_id, case_id, method]).fetchone()


def scenario_reports(store: Store, run_id: str, scenario: str, method: str) -> pd.DataFrame:
    """(round, reports, truth, labels) of every ``method`` trace row of a scenario's cases."""
    return store.con.execute(
        "SELECT t.round, t.reports, c.truth, k.labels FROM traces t JOIN cases c USING (run_id, case_id) "
        "JOIN cells k ON k.run_id = c.run_id AND k.scenario = c.scenario AND k.seed = c.seed "
        "WHERE t.run_id = ? AND c.scenario = ? AND t.method = ?", [run_id, scenario, method]).df()


def longest_escalated_case(store: Store, kind: str = "synthetic", method: str = "dcem") -> tuple[str, str, int] | None:
    """(run, case, rounds) of the case escalated after the most rounds under ``method`` among
    the runs of ``kind`` (of equals, the first case id); None when no case was escalated."""
    row = store.con.execute(
        "SELECT o.run_id, o.case_id, o.rounds FROM outcomes o JOIN runs r USING (run_id) WHERE r.kind = ? "
        "AND o.method = ? AND o.action = 'STOP_AND_ESCALATE' ORDER BY o.rounds DESC, o.case_id LIMIT 1",
        [kind, method]).fetchone()
    return None if row is None else (str(row[0]), str(row[1]), int(row[2]))
