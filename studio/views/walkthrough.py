"""Read stored episodes for a round-by-round case walkthrough.

Everything here reads the DuckDB store; nothing calls an agent.  Labels are returned as
strings (each cell keeps its own label list), agents as 0-based indices.

Runs of language-model agents (kind ``clinical``) also store the case text the agents
read (:func:`case_text`), the agents' models and roles (:func:`case_agents`), which agents
showed solved examples in their prompts (:func:`few_shot_agents`) and every
agent turn: the mediator note it received, its reply, label, probability vector and any
error (:func:`agent_turns`).  Synthetic runs have none of these (empty results).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from dcem.core.config import MediatorConfig
from dcem.core.vocabulary import mediated_methods
from dcem.store.case_reads import case_head, case_outcome_rows, scenario_reports
from dcem.store.database import Store, StoreError
from studio.views.walkthrough_nav import outcome_words
# names its page imports from here (pages import from studio only)
from dcem.analysis.run_info import describe_run, is_llm_run

__all__ = ["CaseTrace", "case_list", "filter_cases", "case_trace", "steer_message", "ex_post_confusion",
           "probability_table"]


def case_list(store: Store, run_id: str, method: str = "dcem") -> pd.DataFrame:
    """One row per case of a run for ``method``.

    Columns: case_id, scenario, seed, truth, action, decision, rounds, certified,
    budget, loss, correct, high_risk_truth, harmful_consensus, escalated (labels as
    strings), outcome (in the words the case table shows,
    :func:`studio.views.walkthrough_nav.outcome_words`).
    """
    rows = case_outcome_rows(store, run_id, method)
    if rows.empty:
        return pd.DataFrame(columns=["case_id", "scenario", "seed", "truth", "action", "decision", "rounds",
                                     "certified", "budget", "loss", "correct", "high_risk_truth",
                                     "harmful_consensus", "escalated", "outcome"])
    high = [int(t) in set(h) for t, h in zip(rows["truth"], rows["high_risk"])]
    out = rows.drop(columns=["labels", "high_risk"]).copy()
    out["truth"] = [labs[int(t)] for t, labs in zip(rows["truth"], rows["labels"])]
    out["decision"] = [labs[int(d)] for d, labs in zip(rows["decision"], rows["labels"])]
    out["correct"] = out["truth"] == out["decision"]
    out["high_risk_truth"] = high
    out["escalated"] = out["action"] == "STOP_AND_ESCALATE"
    out["harmful_consensus"] = ~out["correct"] & out["high_risk_truth"] & ~out["escalated"]
    mediated = method in mediated_methods()
    out["outcome"] = [outcome_words(a, bool(c), bool(b), mediated=mediated)
                      for a, c, b in zip(out["action"], out["certified"], out["budget"])]
    return out


def filter_cases(cases: pd.DataFrame, *, scenarios: Sequence[str] = (), outcomes: Sequence[str] = (),
                 truths: Sequence[str] = (), harmful_only: bool = False,
                 escalated_only: bool = False) -> pd.DataFrame:
    """Rows of :func:`case_list` matching every given filter (empty filter = no filter)."""
    keep = pd.Series(True, index=cases.index)
    if scenarios:
        keep &= cases["scenario"].isin(list(scenarios))
    if outcomes:
        keep &= cases["outcome"].isin(list(outcomes))
    if truths:
        keep &= cases["truth"].isin(list(truths))
    if harmful_only:
        keep &= cases["harmful_consensus"].astype(bool)
    if escalated_only:
        keep &= cases["escalated"].astype(bool)
    return cases[keep]


@dataclass(frozen=True, eq=False)
class CaseTrace:
    """A stored episode ready to display.

    rounds : DataFrame, one row per recorded round with the stored trace columns, plus
        ``after_outcome`` (rounds recorded past the terminal action, fixed horizon).
    labels : label names of the case's cell; truth : the true label (reveal on request);
    config : the mediator settings the run used; outcome_round : 1-based.
    """

    case_id: str
    scenario: str
    seed: int
    labels: tuple[str, ...]
    high_risk: tuple[int, ...]
    truth: str
    config: MediatorConfig
    outcome_action: str
    outcome_round: int
    rounds: pd.DataFrame
    features: tuple[int, ...]

    @property
    def n_agents(self) -> int:
        return len(self.rounds["reports"].iloc[0]) if not self.rounds.empty else 0


def case_trace(store: Store, run_id: str, case_id: str, method: str = "dcem") -> CaseTrace:
    """Load one case's episode; raises :class:`StoreError` for an unknown case."""
    head = case_head(store, run_id, case_id, method)
    if head is None:
        raise StoreError(f"run {run_id!r} has no case {case_id!r} for method {method!r}")
    scenario, seed, truth, features, labels, high, cfg_json, action, rounds = head
    trace = store.traces(run_id, case_id, method)
    trace["after_outcome"] = trace["round"] > int(rounds)
    return CaseTrace(case_id, str(scenario), int(seed), tuple(labels), tuple(int(h) for h in high),
                     labels[int(truth)], MediatorConfig.from_mapping(json.loads(cfg_json)), str(action),
                     int(rounds), trace, tuple(int(f) for f in features))


def steer_message(current: str, alternative: str, features: Sequence[str] | None) -> str:
    """The auditable challenge the mediator sends with DIFFERENTIAL_STEER (section 3.3)."""
    cues = ", ".join(features) if features else "the evidence that separates them"
    return (f"You currently report {current}. In calibration, your {current} reports were sometimes "
            f"cases of {alternative}, a costlier miss. Re-examine what separates the two, "
            f"in particular: {cues}. Change your report only if that evidence supports it.")


def ex_post_confusion(store: Store, run_id: str, scenario: str, method: str = "dcem") -> np.ndarray:
    """Round-wise confusion counts over a scenario's evaluation cases (Appendix B.1).

    Returns int array of shape (T, A, K, K) with ``[t, a, i, j]`` = number of cases whose
    truth is i and whose agent a reported j in round t + 1.  Computed ex post for display;
    the mediator never sees it.
    """
    df = scenario_reports(store, run_id, scenario, method)
    if df.empty:
        raise StoreError(f"run {run_id!r} has no {method} traces for scenario {scenario!r}")
    k = len(df["labels"].iloc[0])
    reports = np.stack([np.asarray(r, dtype=np.int64) for r in df["reports"]])
    rounds = df["round"].to_numpy(dtype=np.int64) - 1
    truth = df["truth"].to_numpy(dtype=np.int64)
    n_rounds, n_agents = int(rounds.max()) + 1, reports.shape[1]
    out = np.zeros((n_rounds, n_agents, k, k), dtype=np.int64)
    for a in range(n_agents):
        np.add.at(out, (rounds, a, truth, reports[:, a]), 1)
    return out


def probability_table(turns: pd.DataFrame, labels: Sequence[str]) -> pd.DataFrame:
    """Probability vectors of some agent turns side by side: one row per label, one
    column per turn (its agent's name); a turn without a vector gives an empty column."""
    columns = {}
    for row in turns.itertuples(index=False):
        probs = row.probabilities
        columns[row.agent_name] = (list(probs) if probs is not None and len(probs) == len(labels)
                                   else [float("nan")] * len(labels))
    return pd.DataFrame(columns, index=pd.Index(list(labels), name="label"))
