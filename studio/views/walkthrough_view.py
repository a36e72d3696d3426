"""What the Case walkthrough page shows, computed from the store (no Streamlit here).

The page picks a run, a method and a case; this module decides which methods are
offered, which cases match the filters, what each round's title, metrics, agent lines
and notices say, and the per-agent round-wise confusion panels.  The page only lays the
results out in widgets.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, NamedTuple, Sequence

import numpy as np
import pandas as pd

from studio.views.decision_view import cell_loss, decision_table
from studio.views.round_reason import row_reason
from dcem.analysis.run_info import run_methods
from dcem.store.case_reads import AGENT_COLUMNS, TURN_COLUMNS, agent_turns, case_agents, case_text
from dcem.core.vocabulary import mediated_methods, method_label
from dcem.store.database import Store
from studio.views.walkthrough import CaseTrace, case_trace, ex_post_confusion, filter_cases, steer_message

__all__ = ["SYNTHETIC_METHODS", "FILTER_COLUMNS", "Notice", "CaseSelection", "WalkCase", "RoundView",
           "ConfusionPanel", "ConfusionView", "walkthrough_methods", "default_method_index", "filter_options",
           "select_cases", "load_walk_case", "clamp_round", "round_view", "round_metrics", "agent_lines",
           "round_notices", "steer_notices", "truth_text", "confusion_view"]

SYNTHETIC_METHODS = ("dcem", "dcem_noesc")
FILTER_COLUMNS = ("scenario", "outcome", "truth")


class Notice(NamedTuple):
    """One message under a round; ``kind`` names the Streamlit call that shows it
    ("warning", "write", "error" or "success")."""

    kind: str
    text: str


def walkthrough_methods(store: Store, run_id: str, *, llm: bool) -> list[str]:
    """The methods offered for a run: every stored one of a language-model run (display
    order), D-CEM with and without escalation for a synthetic run."""
    return run_methods(store, run_id) if llm else list(SYNTHETIC_METHODS)


def default_method_index(methods: Sequence[str]) -> int:
    """Index of the method selected first: D-CEM when offered, else the first one."""
    return list(methods).index("dcem") if "dcem" in methods else 0


def filter_options(cases: pd.DataFrame) -> dict[str, list[str]]:
    """The sorted distinct values of each filter column (:data:`FILTER_COLUMNS`) of a case list."""
    return {column: sorted(cases[column].unique()) for column in FILTER_COLUMNS}


@dataclass(frozen=True, eq=False)
class CaseSelection:
    """The cases matching the filters: their rows, their ids and the "n of m" caption."""

    cases: pd.DataFrame
    case_ids: list[str]
    caption: str

    @property
    def empty(self) -> bool:
        return not self.case_ids


def select_cases(cases: pd.DataFrame, *, scenarios: Sequence[str] = (), outcomes: Sequence[str] = (),
                 truths: Sequence[str] = (), harmful_only: bool = False,
                 escalated_only: bool = False) -> CaseSelection:
    """:func:`filter_cases` with the ids to choose from and the caption counting the matches."""
    shown = filter_cases(cases, scenarios=scenarios, outcomes=outcomes, truths=truths,
                         harmful_only=harmful_only, escalated_only=escalated_only)
    return CaseSelection(shown, shown["case_id"].tolist(), f"{len(shown)} of {len(cases)} cases match.")


@dataclass(frozen=True, eq=False)
class WalkCase:
    """One case under one method: its episode and, for a language-model run, the case
    text, the agents and their turns (empty for a synthetic run); ``loss`` is the cell's
    loss matrix L[d, y] (None when not loaded)."""

    trace: CaseTrace
    llm: bool
    text: str | None
    agents: pd.DataFrame
    turns: pd.DataFrame
    loss: np.ndarray | None = None

    @property
    def models(self) -> dict[int, str]:
        """Agent index -> model name."""
        return dict(zip(self.agents["agent"], self.agents["model"]))

    @property
    def names(self) -> dict[int, str]:
        """Agent index -> agent name (empty for a synthetic run)."""
        return dict(zip(self.agents["agent"], self.agents["name"]))


def load_walk_case(store: Store, run_id: str, case_id: str, method: str, *, llm: bool) -> WalkCase:
    """Load a case for the walkthrough; :class:`StoreError` for an unknown case."""
    trace = case_trace(store, run_id, case_id, method)
    loss = cell_loss(store, run_id, case_id)
    if not llm:
        return WalkCase(trace, False, None, pd.DataFrame(columns=AGENT_COLUMNS), pd.DataFrame(columns=TURN_COLUMNS),
                        loss)
    return WalkCase(trace, True, case_text(store, run_id, case_id), case_agents(store, run_id, case_id),
                    agent_turns(store, run_id, case_id, method), loss)


def clamp_round(value: object, last: int) -> int:
    """A round number kept within 1..last."""
    return min(max(int(value), 1), last)


@dataclass(frozen=True, eq=False)
class RoundView:
    """Everything shown for round ``number`` of a case.

    ``row`` is the stored trace row, ``turns`` the agents' turns of the round.  For a
    mediated method: ``metrics`` (name, value) and one markdown line per agent; for the
    agents' turns, ``turns_heading`` (None: no heading) and ``show_turns``.  ``reason``
    says in words why the mediator took the round's action (None without a mediator);
    ``decision`` is the decision beside the loss matrix (:func:`decision_table`; None
    without a mediator or a loss matrix).
    """

    number: int
    last: int
    title: str
    mediated: bool
    row: pd.Series
    turns: pd.DataFrame
    metrics: list[tuple[str, str]]
    agent_lines: list[str]
    turns_heading: str | None
    show_turns: bool
    notices: list[Notice]
    reason: str | None = None
    decision: pd.DataFrame | None = None


def round_metrics(row: pd.Series, labels: Sequence[str]) -> list[tuple[str, str]]:
    """The four headline metrics of a mediated round: decision, runner-up, margin, energy."""
    return [("Bayes decision", labels[int(row["decision"])]), ("Runner-up", labels[int(row["runner_up"])]),
            ("Margin", f"{row['margin']:.3f}"), ("Energy", f"{row['energy']:.3f}")]


def agent_lines(row: pd.Series, labels: Sequence[str], names: Mapping[int, str]) -> list[str]:
    """Per agent: its report, own risk and dangerous plausible miss (markdown)."""
    lines = []
    for a, (rep, miss, risk) in enumerate(zip(row["reports"], row["dangerous_miss"], row["agent_risk"])):
        who = names.get(a, f"Agent {a + 1}")
        lines.append(f"**{who}** reports **{labels[rep]}** (own risk {risk:.3f}); "
                     f"dangerous plausible miss: :red[**{labels[miss]}**]")
    return lines


def steer_notices(row: pd.Series, labels: Sequence[str], turns: pd.DataFrame, number: int, *,
                  llm: bool) -> list[Notice]:
    """The challenge of a DIFFERENTIAL_STEER round and its cue list.

    A language-model run shows the note the agent actually received with the next round;
    otherwise the challenge is rebuilt with :func:`steer_message`.
    """
    target = int(row["steer_agent"])
    feats = list(row["steer_features"]) if row["steer_features"] is not None else []
    sent = turns[(turns["round"] == number + 1) & (turns["agent"] == target)]["note"] if llm else []
    if len(sent) and sent.iloc[0]:
        name = turns[turns["agent"] == target]["agent_name"].iloc[0]
        notices = [Notice("warning", f"Challenge to {name}, sent with round {number + 1}: {sent.iloc[0]}")]
    else:
        current, alternative = labels[int(row["steer_current"])], labels[int(row["steer_alternative"])]
        notices = [Notice("warning", f"Challenge to agent {target + 1}: " + steer_message(current, alternative, feats))]
    if feats:
        notices.append(Notice("write", ("Cues S(t), listed by the agent itself: " if llm else "Feature set S(t): ")
                              + ", ".join(f"`{f}`" for f in feats)))
    return notices


def round_notices(case: WalkCase, row: pd.Series, number: int) -> list[Notice]:
    """What a mediated round's action means: the challenge, the escalation or the decision."""
    labels = case.trace.labels
    if row["action"] == "DIFFERENTIAL_STEER":
        return steer_notices(row, labels, case.turns, number, llm=case.llm)
    if row["action"] == "STOP_AND_ESCALATE":
        return [Notice("error", "Escalated: the case goes to a human reviewer; no autonomous decision is made.")]
    if row["action"] == "STOP_AND_DECIDE":
        kind = "certified" if row["certified"] else "round budget reached, not certified"
        return [Notice("success", f"Decision {labels[int(row['decision'])]} ({kind}).")]
    return []


def round_view(case: WalkCase, number: int, *, method: str, cases: pd.DataFrame) -> RoundView:
    """Round ``number`` of a case under ``method``; ``cases`` (a :func:`case_list` frame
    holding the case) gives an unmediated method's final decision."""
    trace = case.trace
    last = trace.outcome_round
    row = trace.rounds[trace.rounds["round"] == number].iloc[0]
    turns = case.turns[case.turns["round"] == number]
    if method not in mediated_methods():  # Single, Free, Pool of a language-model run: the turns only
        decision = cases[cases["case_id"] == trace.case_id].iloc[0]["decision"]
        notices = ([Notice("success", f"Decision {decision} ({method_label(method)}, no mediator).")]
                   if number == last else [])
        return RoundView(number, last, f"Round {number} of {last}: {method_label(method)}", False, row, turns,
                         [], [], None, True, notices)
    reason = row_reason(row, number, trace.config, escalation=mediated_methods()[method])
    table = None if case.loss is None else decision_table(trace.labels, row["pooled"], case.loss, trace.high_risk,
                                                          int(row["decision"]))
    return RoundView(number, last, f"Round {number} of {last}: {row['action']}", True, row, turns,
                     round_metrics(row, trace.labels), agent_lines(row, trace.labels, case.names),
                     "**The agents' answers this round**" if case.llm else None, case.llm,
                     round_notices(case, row, number), reason, table)


def truth_text(trace: CaseTrace) -> str:
    """The teaching-mode reveal of the true label."""
    return f"True label: **{trace.truth}**"


@dataclass(frozen=True, eq=False)
class ConfusionPanel:
    """One agent's round-wise confusion: row shares, counts and the panel title."""

    agent: int
    title: str
    share: np.ndarray
    counts: np.ndarray


@dataclass(frozen=True, eq=False)
class ConfusionView:
    """Ex-post confusion counts of a scenario, shape (T, A, K, K), and its labels."""

    counts: np.ndarray
    labels: tuple[str, ...]

    @property
    def n_rounds(self) -> int:
        return int(self.counts.shape[0])

    @property
    def n_agents(self) -> int:
        return int(self.counts.shape[1])

    def panels(self, number: int, names: Mapping[int, str]) -> list[ConfusionPanel]:
        """One panel per agent for round ``number`` (1-based); each row of ``share`` sums to
        one (zero for a label no case had)."""
        out = []
        for a in range(self.n_agents):
            c = self.counts[number - 1, a]
            share = c / c.sum(axis=1, keepdims=True).clip(min=1)
            out.append(ConfusionPanel(a, f"{names.get(a, f'Agent {a + 1}')}, round {number}", share, c))
        return out


def confusion_view(store: Store, run_id: str, cases: pd.DataFrame, scenario: str, method: str) -> ConfusionView:
    """Round-wise confusion of a scenario (:func:`ex_post_confusion`) with the labels of
    its cell (read from the scenario's first case in ``cases``)."""
    counts = ex_post_confusion(store, run_id, scenario, method)
    first = cases[cases["scenario"] == scenario]["case_id"].iloc[0]
    return ConfusionView(counts, case_trace(store, run_id, first, method).labels)

