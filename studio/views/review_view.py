"""What the Escalation review page shows, computed from stored results (no Streamlit here).

The queue table, its caption and review count, the next unreviewed case, the check that a
final label was chosen, the reason a case escalated, each agent's last answer,
the rounds played, a case's review history, and the reviewed cases turned into a
calibration set.  The page only lays the results out in widgets.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import pandas as pd

from dcem.calibration.reviewed_labels import ReviewedInto, reviewed_into
from dcem.calibration.sets import CalibrationSet, rows_to_set
from common.errors import InputError
from studio.views.walkthrough import CaseTrace
# names its page imports from here (pages import from studio only)
from dcem.analysis.run_info import describe_run, is_llm_run
from dcem.store.case_reads import case_agents, case_text
from dcem.store.reviews import (
    escalation_queue,
    export_reviews,
    last_answers,
    record_review,
    review_history,
    reviewed_as_calibration_rows,
)

__all__ = ["QUEUE_TABLE_COLUMNS", "ANSWER_TABLE_COLUMNS", "HISTORY_TABLE_COLUMNS", "QueueView", "LastAnswersView",
           "HistoryView", "ReviewedInto", "queue_view", "next_unreviewed", "after_save", "chosen_label",
           "escalation_why", "last_answers_view", "played_rounds_table", "history_view", "reviewed_calibration_set"]

QUEUE_TABLE_COLUMNS = ["case_id", "scenario", "seed", "energy", "margin", "descent", "steers", "rounds", "reviewed",
                       "review_label", "why"]
ANSWER_TABLE_COLUMNS = ["agent_name", "model", "label", "probability", "runner_up", "runner_up_probability", "error"]
HISTORY_TABLE_COLUMNS = ["created_at", "reviewer", "final_label", "comment"]


@dataclass(frozen=True, eq=False)
class QueueView:
    """The escalation queue as shown: the table, its caption, the case ids to pick from and
    how many of the cases have a review."""

    table: pd.DataFrame
    caption: str
    case_ids: list[str]
    reviewed: int
    total: int

    @property
    def progress(self) -> str:
        """"N of M escalated cases reviewed"."""
        return f"{self.reviewed} of {self.total} escalated cases reviewed"


def queue_view(queue: pd.DataFrame, *, show_truth: bool = False) -> QueueView:
    """The shown columns of :func:`dcem.store.reviews.escalation_queue` (the true label
    only when asked for), worst first as given, with a caption counting the reviews."""
    columns = QUEUE_TABLE_COLUMNS + (["truth_label"] if show_truth else [])
    reviewed = int(queue["reviewed"].sum())
    caption = (f"{len(queue)} escalated cases, {reviewed} reviewed; worst first "
               "(highest final energy, then smallest margin, then slowest descent).")
    return QueueView(queue[columns], caption, queue["case_id"].tolist(), reviewed, len(queue))


def next_unreviewed(queue: pd.DataFrame, case_id: str) -> str | None:
    """The first case after ``case_id`` in queue order (wrapping round to the top) that has
    no review, ``case_id`` itself excluded (it has just been reviewed); None when every
    other case is reviewed."""
    ids = queue["case_id"].tolist()
    done = dict(zip(ids, queue["reviewed"].astype(bool)))
    start = ids.index(case_id) + 1 if case_id in ids else 0
    for other in ids[start:] + ids[:start]:
        if other != case_id and not done[other]:
            return str(other)
    return None


def after_save(queue: pd.DataFrame, case_id: str, *, go_next: bool) -> tuple[str, str | None]:
    """The message after a review of ``case_id`` was saved and, for "Save and next", the
    case to open next (:func:`next_unreviewed` of ``queue`` as read before the save)."""
    message = f"Review of {case_id} recorded."
    if not go_next:
        return message, None
    following = next_unreviewed(queue, case_id)
    if following is None:
        return message + " Every escalated case of this run now has a review.", None
    return message + f" Next unreviewed case: {following}.", following


def chosen_label(value: object, labels: Sequence[str]) -> str:
    """The final label picked on the page; :class:`InputError` when none (or an unknown
    one) was chosen, so that nothing is saved without a deliberate choice."""
    if value is None or value == "":
        raise InputError("final label", "choose the final label before saving (no label is pre-selected)")
    if value not in labels:
        raise InputError("final label", f"{value!r} is not one of the case's labels ({', '.join(labels)})")
    return str(value)


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


def reviewed_calibration_set(rows: pd.DataFrame, labels: Sequence[str], *, run_id: str,
                             current: CalibrationSet | None = None) -> ReviewedInto:
    """The rows of :func:`dcem.store.reviews.reviewed_as_calibration_rows` as a calibration
    set over ``labels``, into ``current`` when there is one: labels for the cases it holds
    (a set from this run's reports), new rows for the rest
    (:func:`dcem.calibration.reviewed_labels.reviewed_into`).  Raises
    :class:`common.errors.ProjectError` (labels that do not match ``current``, a case
    held with other reports, a label-free estimate with problems)."""
    return reviewed_into(current, rows_to_set(rows, labels, f"reviews of run {run_id}"))
