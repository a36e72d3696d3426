"""What the Escalation review page shows, computed from stored results (no Streamlit here).

The queue table and its caption, the reason a case escalated, each agent's last answer,
the rounds played, a case's review history, and the reviewed cases turned into a
calibration set.  The page only lays the results out in widgets.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import pandas as pd

from dcem.analysis.walkthrough import CaseTrace
from dcem.calibration.sets import CalibrationSet, rows_to_set

__all__ = ["QUEUE_TABLE_COLUMNS", "ANSWER_TABLE_COLUMNS", "HISTORY_TABLE_COLUMNS", "QueueView", "LastAnswersView",
           "HistoryView", "ReviewedSet", "queue_view", "escalation_why", "last_answers_view", "played_rounds_table",
           "history_view", "reviewed_calibration_set"]

QUEUE_TABLE_COLUMNS = ["case_id", "scenario", "seed", "energy", "margin", "descent", "steers", "rounds", "reviewed",
                       "review_label", "why"]
ANSWER_TABLE_COLUMNS = ["agent_name", "model", "label", "probability", "runner_up", "runner_up_probability", "error"]
HISTORY_TABLE_COLUMNS = ["created_at", "reviewer", "final_label", "comment"]


@dataclass(frozen=True, eq=False)
class QueueView:
    """The escalation queue as shown: the table, its caption and the case ids to pick from."""

    table: pd.DataFrame
    caption: str
    case_ids: list[str]


def queue_view(queue: pd.DataFrame, *, show_truth: bool = False) -> QueueView:
    """The shown columns of :func:`dcem.store.reviews.escalation_queue` (the true label
    only when asked for), worst first as given, with a caption counting the reviews."""
    columns = QUEUE_TABLE_COLUMNS + (["truth_label"] if show_truth else [])
    caption = (f"{len(queue)} escalated cases, {int(queue['reviewed'].sum())} reviewed; worst first "
               "(highest final energy, then smallest margin, then slowest descent).")
    return QueueView(queue[columns], caption, queue["case_id"].tolist())


def escalation_why(queue: pd.DataFrame, case_id: str) -> str:
    """The sentence saying why a queued case escalated."""
    row = queue[queue["case_id"] == case_id].iloc[0]
    return f"Why it escalated: {row['why']}"


@dataclass(frozen=True, eq=False)
class LastAnswersView:
    """Each agent's last answer of a case, as shown beside the case text.

    ``heading`` names the round; ``table`` has the columns of
    :data:`ANSWER_TABLE_COLUMNS` (agent_name shown as "agent", label as "answer"),
    rounded to 3 decimals; ``names``, ``probabilities`` and ``answers`` feed the bar
    chart; ``errors`` holds one line per failed turn.  ``empty`` when no turn is stored.
    """

    heading: str
    empty: bool
    table: pd.DataFrame
    names: list[str]
    probabilities: list[list[float] | None]
    answers: list[str | None]
    errors: list[str]


def last_answers_view(answers: pd.DataFrame, trace: CaseTrace) -> LastAnswersView:
    """Lay out :func:`dcem.store.reviews.last_answers` of the case whose episode is ``trace``;
    the heading's round is the answers' last round (the outcome round when there are none)."""
    rounds = int(answers["round"].max()) if not answers.empty else trace.outcome_round
    heading = f"**Each agent's last answer (round {rounds}, when the mediator escalated)**"
    renamed = {"agent_name": "agent", "label": "answer"}
    if answers.empty:
        return LastAnswersView(heading, True, pd.DataFrame(columns=[renamed.get(c, c) for c in ANSWER_TABLE_COLUMNS]),
                               [], [], [], [])
    table = answers[ANSWER_TABLE_COLUMNS].rename(columns=renamed).round(3)
    errors = [f"⚠ {turn.agent_name}: {turn.error}".replace("\n", " ")
              for turn in answers.itertuples(index=False) if turn.error]
    return LastAnswersView(heading, False, table, answers["agent_name"].tolist(), answers["probabilities"].tolist(),
                           answers["label"].tolist(), errors)


def played_rounds_table(trace: CaseTrace) -> pd.DataFrame:
    """The rounds played up to the outcome: reports, Bayes decision, action and energy."""
    played = trace.rounds[~trace.rounds["after_outcome"]]
    return pd.DataFrame({"round": played["round"].tolist(),
                         "reports": [", ".join(trace.labels[r] for r in reps) for reps in played["reports"]],
                         "decision": [trace.labels[int(d)] for d in played["decision"]],
                         "action": played["action"].tolist(),
                         "energy": played["energy"].round(3).tolist()})


@dataclass(frozen=True, eq=False)
class HistoryView:
    """A case's reviews: a summary sentence and the table, oldest first."""

    summary: str
    table: pd.DataFrame


def history_view(history: pd.DataFrame) -> HistoryView | None:
    """Lay out :func:`dcem.store.reviews.review_history` of one case; None when it has no review."""
    if history.empty:
        return None
    summary = (f"History of this case: {len(history)} review(s), oldest first; by "
               + ", ".join(history["reviewer"]))
    return HistoryView(summary, history[HISTORY_TABLE_COLUMNS])


@dataclass(frozen=True, eq=False)
class ReviewedSet:
    """The calibration set with the reviewed cases added, and how many cases were added."""

    calibration_set: CalibrationSet
    added: int

    @property
    def message(self) -> str:
        return (f"{self.added} reviewed cases are now in the calibration set "
                "(see the Calibration sets page).")


def reviewed_calibration_set(rows: pd.DataFrame, labels: Sequence[str], *, run_id: str,
                             current: CalibrationSet | None = None) -> ReviewedSet:
    """The rows of :func:`dcem.store.reviews.reviewed_as_calibration_rows` as a calibration
    set over ``labels``, appended to ``current`` when there is one.  Raises
    :class:`dcem.errors.DcemError` (e.g. labels that do not match ``current``)."""
    added = rows_to_set(rows, labels, f"reviews of run {run_id}")
    combined = current.merge(added) if current is not None else added
    return ReviewedSet(combined, added.n_cases)
