"""Human review of escalated cases: the queue, append-only reviews, export.

A STOP_AND_ESCALATE outcome hands the case to a human.  :func:`escalation_queue` lists
those cases worst first with a plain-language reason taken from the policy contract;
:func:`record_review` stores the reviewer's final label and comment.

Reviews are APPEND-ONLY: nothing here updates or deletes a review.  Reviewing a case again
adds a row; the *current* review of a (case, method) is its latest row (latest
``created_at``, ties broken by the larger ``review_id``).  Each write runs in its own
transaction on its own cursor (:mod:`common.transactions`), so several dashboard sessions
of one process can record reviews at the same time; a dashboard holds the file only while
a page runs (``studio.store_scope``), so two dashboards can too.  Other programs use
:func:`record_review_in`, which opens the file for the one review and closes it again;
DuckDB lets one process at a time hold the file for writing, so a reviewer who finds it
held waits and retries with bounded, jittered back-off (:func:`common.db.retry_busy`, up to
:data:`common.db.BUSY_TIMEOUT_S` seconds) and the review is written exactly once.

For a run of language-model agents, :func:`last_answers` gives each agent's answer in the
round the case ended (label, probability, runner-up, any error) so a reviewer can read it
beside the case text (:func:`dcem.store.case_reads.case_text`).

Reviewed cases can be fed back into calibration: :func:`reviewed_as_calibration_rows`
gives rows in the calibration CSV layout (case_id, agent, reported_label, true_label),
with the reviewer's final label as the truth and each agent's round-1 report.
"""
from __future__ import annotations

import datetime as _dt
import json
import math
import os
import uuid
from typing import Any

import duckdb
import pandas as pd

from common.db import BUSY_TIMEOUT_S, retry_busy
from common.transactions import cursor, run_in_transaction
from dcem.store.case_reads import TURN_COLUMNS, agent_turns, case_agents
from dcem.core.config import MediatorConfig
from dcem.core.vocabulary import mediated_methods
from common.errors import InputError
from common.fields import Instance, Satisfies, Text, check
from dcem.store.database import Store, StoreError

__all__ = ["MAX_COMMENT", "MAX_REVIEWER", "REVIEW_COLUMNS", "QUEUE_COLUMNS", "CALIBRATION_COLUMNS",
           "record_review", "record_review_in", "review_history", "current_reviews", "escalation_queue",
           "escalation_reason", "export_reviews", "reviewed_as_calibration_rows", "case_labels",
           "LAST_ANSWER_COLUMNS", "last_answers"]

MAX_COMMENT = 5000
MAX_REVIEWER = 200
REVIEW_COLUMNS = ["review_id", "run_id", "case_id", "method", "final_label", "comment", "reviewer",
                  "created_at"]
QUEUE_COLUMNS = ["case_id", "scenario", "seed", "truth", "truth_label", "decision_label", "rounds",
                 "energy", "margin", "descent", "steers", "budget", "why", "reviewed", "review_label"]
CALIBRATION_COLUMNS = ["case_id", "agent", "reported_label", "true_label"]
LAST_ANSWER_COLUMNS = TURN_COLUMNS + ["model", "probability", "runner_up", "runner_up_probability"]
_SELECT_REVIEWS = "SELECT " + ", ".join(REVIEW_COLUMNS) + " FROM reviews"
_LATEST = "row_number() OVER (PARTITION BY {part} ORDER BY created_at DESC, review_id DESC) = 1"


def _text(value: object, field: str) -> str:
    return check(field, value, Instance(str, msg="must be text, got {type}"), error=InputError)


def case_labels(store: Store, run_id: str, case_id: str) -> tuple[str, ...]:
    """The label set of the cell a case belongs to (the choices for a final label)."""
    with cursor(store) as cur:
        return _case_labels(cur, run_id, case_id)


def _case_labels(cur: duckdb.DuckDBPyConnection, run_id: str, case_id: str) -> tuple[str, ...]:
    if cur.execute("SELECT 1 FROM runs WHERE run_id = ?", [run_id]).fetchone() is None:
        raise InputError("run_id", f"no run {run_id!r} in the store")
    row = cur.execute(
        "SELECT cl.labels FROM cases c JOIN cells cl ON cl.run_id = c.run_id AND cl.scenario = c.scenario "
        "AND cl.seed = c.seed WHERE c.run_id = ? AND c.case_id = ?", [run_id, case_id]).fetchone()
    if row is None:
        raise InputError("case_id", f"run {run_id!r} has no case {case_id!r}")
    return tuple(row[0])


def record_review(store: Store, *, run_id: str, case_id: str, method: str, final_label: str,
                  comment: str, reviewer: str, review_id: str | None = None) -> str:
    """Append a review of a case's outcome; returns its review_id (uuid4 hex).

    Checks that the run, the case and its outcome under ``method`` exist, that
    ``final_label`` is one of the case's labels, that the comment has at most
    :data:`MAX_COMMENT` characters and that the reviewer is named; otherwise raises
    :class:`InputError` naming the field.  Runs in its own transaction.  A given
    ``review_id`` that is already stored adds nothing (a retried write lands once).
    """
    run_id, case_id, method = _text(run_id, "run_id"), _text(case_id, "case_id"), _text(method, "method")
    final_label, comment = _text(final_label, "final_label"), _text(comment, "comment")
    reviewer = _text(reviewer, "reviewer").strip()
    if not reviewer:
        raise InputError("reviewer", "enter the reviewer's name")
    if len(reviewer) > MAX_REVIEWER:
        raise InputError("reviewer", f"is {len(reviewer)} characters long; at most {MAX_REVIEWER} are allowed")
    if len(comment) > MAX_COMMENT:
        raise InputError("comment", f"is {len(comment):,} characters long; at most {MAX_COMMENT:,} are allowed")
    if review_id is None:
        review_id = uuid.uuid4().hex
    else:
        check("review_id", review_id, Text(nonempty=False, max_len=64), Satisfies(str.isalnum),
              msg="must be 1-64 letters and digits", error=InputError)

    def write(cur: duckdb.DuckDBPyConnection) -> None:
        if cur.execute("SELECT 1 FROM reviews WHERE review_id = ?", [review_id]).fetchone() is not None:
            return  # this very review is already stored
        labels = _case_labels(cur, run_id, case_id)
        if cur.execute("SELECT 1 FROM outcomes WHERE run_id = ? AND case_id = ? AND method = ?",
                       [run_id, case_id, method]).fetchone() is None:
            raise InputError("method", f"case {case_id!r} has no {method!r} outcome in run {run_id!r}")
        if final_label not in labels:
            raise InputError("final_label", f"{final_label!r} is not one of the case's labels "
                             f"({', '.join(labels)})")
        row = cur.execute("SELECT max(created_at) FROM reviews WHERE run_id = ? AND case_id = ? AND method = ?",
                          [run_id, case_id, method]).fetchone()
        latest, now = (row[0] if row else None), _dt.datetime.now()
        if latest is not None and now <= latest:  # keep "the latest review is current" strict
            now = latest + _dt.timedelta(microseconds=1)
        cur.execute("INSERT INTO reviews (review_id, run_id, case_id, method, final_label, comment, reviewer, "
                    "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [review_id, run_id, case_id, method, final_label, comment, reviewer, now])

    run_in_transaction(store, write)
    return review_id


def record_review_in(path: str | os.PathLike[str] | None = None, *, busy_timeout: float = BUSY_TIMEOUT_S,
                     **review: str) -> str:
    """Open the store at ``path``, append one review (:func:`record_review`), close it.

    For reviewers in separate processes: while another process holds the file the open
    and the write are retried with jittered back-off for at most ``busy_timeout`` seconds,
    then :class:`common.db.StoreBusyError` says the store is still in use.  The review_id
    is fixed before the first attempt, so the review is stored exactly once.
    """
    review_id = review.pop("review_id", None) or uuid.uuid4().hex

    def once() -> str:
        with Store(path) as store:
            return record_review(store, review_id=review_id, **review)

    return retry_busy(once, timeout=busy_timeout)


def review_history(store: Store, run_id: str, case_id: str | None = None) -> pd.DataFrame:
    """Every review of the run (or of one case), oldest first."""
    with cursor(store) as cur:
        store.check_run(run_id, cur)
        return cur.execute(
            _SELECT_REVIEWS + " WHERE run_id = ? AND (? IS NULL OR case_id = ?) ORDER BY created_at, review_id",
            [run_id, case_id, case_id]).df()


def current_reviews(store: Store, run_id: str) -> pd.DataFrame:
    """The current (latest) review of every reviewed (case, method) of the run."""
    with cursor(store) as cur:
        store.check_run(run_id, cur)
        return cur.execute(
            _SELECT_REVIEWS + " WHERE run_id = ? QUALIFY " + _LATEST.format(part="case_id, method")
            + " ORDER BY case_id, method", [run_id]).df()


def _fmt_pair(a: float, b: float) -> tuple[str, str]:
    """Format two numbers with the fewest decimals (2 to 6) that keep them distinct."""
    for digits in range(2, 7):
        sa, sb = f"{a:.{digits}f}", f"{b:.{digits}f}"
        if sa != sb or a == b:
            break
    return sa, sb


def escalation_reason(energy: float, descent: float | None, budget: bool, rounds: int,
                      cfg: MediatorConfig) -> str:
    """Why the policy escalated, in plain words with the numbers (see :mod:`dcem.core.policy`).

    Budget rule: round t_max reached with energy above eps_low ("Out of rounds: ...").
    Rule 3: the windowed descent (the energy's fall per round, averaged over the window;
    negative when it rose) was below delta while the energy stayed above eps_low
    ("Energy did not fall enough: -0.10 per round ..., needed at least 0.05 (delta) ...").
    """
    e, low = _fmt_pair(energy, cfg.eps_low)
    if budget or descent is None or (isinstance(descent, float) and math.isnan(descent)):
        return (f"Out of rounds: round {rounds} of {cfg.t_max} was the last and the energy {e} was still above "
                f"eps_low {low}, so no decision could be made safely.")
    d, delta = _fmt_pair(abs(descent), cfg.delta)
    if descent != 0 and float(d) == 0:  # a small change is not shown as "0.00"
        d = f"{abs(descent):.2g}"
    signed = f"-{d}" if descent < 0 else d
    note = " (it rose)" if descent < 0 else " (it did not move)" if descent == 0 else ""
    rounds_txt = "round" if cfg.window == 1 else f"{cfg.window} rounds"
    return (f"Energy did not fall enough: {signed} per round over the last {rounds_txt}{note}, needed at least "
            f"{delta} (delta). The energy {e} stayed above eps_low {low}, so the deliberation stalled at "
            f"round {rounds}.")


def escalation_queue(store: Store, run_id: str, method: str = "dcem") -> pd.DataFrame:
    """The run's STOP_AND_ESCALATE cases under ``method``, worst first.

    One row per case (columns :data:`QUEUE_COLUMNS`) with the final round's energy,
    margin and windowed descent (the stagnation measure), the number of steers played,
    the reason (``why``, from the cell's configuration), ``reviewed`` and the current
    review's label.  Order: energy descending, then margin ascending, then descent
    ascending, then case id.
    """
    if method not in mediated_methods():
        raise InputError("method", f"only mediated methods escalate ({', '.join(mediated_methods())}), got {method!r}")
    with cursor(store) as cur:
        store.check_run(run_id, cur)
        frame = cur.execute(
            "WITH esc AS (SELECT case_id, decision, rounds, budget, truth FROM outcomes "
            "  WHERE run_id = ? AND method = ? AND action = 'STOP_AND_ESCALATE'), "
            "steers AS (SELECT t.case_id, count(*) AS n FROM traces t JOIN esc e ON t.case_id = e.case_id "
            "  WHERE t.run_id = ? AND t.method = ? AND t.round <= e.rounds AND t.action = 'DIFFERENTIAL_STEER' "
            "  GROUP BY t.case_id), "
            "latest AS (SELECT case_id, final_label FROM reviews WHERE run_id = ? AND method = ? "
            "  QUALIFY " + _LATEST.format(part="case_id") + ") "
            "SELECT e.case_id, c.scenario, c.seed, e.truth, e.decision, e.rounds, e.budget, "
            "  t.energy, t.margin, t.descent, coalesce(s.n, 0) AS steers, cl.labels, cl.config_json, "
            "  l.final_label AS review_label "
            "FROM esc e JOIN cases c ON c.run_id = ? AND c.case_id = e.case_id "
            "JOIN cells cl ON cl.run_id = c.run_id AND cl.scenario = c.scenario AND cl.seed = c.seed "
            "LEFT JOIN traces t ON t.run_id = ? AND t.case_id = e.case_id AND t.method = ? AND t.round = e.rounds "
            "LEFT JOIN steers s ON s.case_id = e.case_id LEFT JOIN latest l ON l.case_id = e.case_id "
            "ORDER BY t.energy DESC NULLS LAST, t.margin ASC NULLS LAST, t.descent ASC NULLS LAST, e.case_id",
            [run_id, method, run_id, method, run_id, method, run_id, run_id, method]).df()
    configs: dict[str, MediatorConfig] = {}
    why, truth_label, decision_label = [], [], []
    for row in frame.itertuples(index=False):
        if row.config_json not in configs:
            configs[row.config_json] = MediatorConfig.from_mapping(json.loads(row.config_json)).with_changes(
                escalation=mediated_methods()[method])
        descent = None if pd.isna(row.descent) else float(row.descent)
        energy = float("nan") if pd.isna(row.energy) else float(row.energy)
        why.append(escalation_reason(energy, descent, bool(row.budget), int(row.rounds), configs[row.config_json]))
        labels = list(row.labels)
        truth_label.append(labels[int(row.truth)])
        decision_label.append(labels[int(row.decision)])
    frame["why"], frame["truth_label"], frame["decision_label"] = why, truth_label, decision_label
    frame["reviewed"] = frame["review_label"].notna()
    frame["steers"] = frame["steers"].astype(int)
    frame["budget"] = frame["budget"].astype(bool)
    return frame[QUEUE_COLUMNS].reset_index(drop=True)


def export_reviews(store: Store, run_id: str) -> pd.DataFrame:
    """Every review of the run with its case context, oldest first, for download.

    Adds scenario, seed, truth_label, the mediator's outcome (mediator_action,
    mediator_label) and ``is_current`` (the latest review of its case and method).
    """
    with cursor(store) as cur:
        store.check_run(run_id, cur)
        frame = cur.execute(
            "SELECT r.review_id, r.run_id, r.case_id, r.method, c.scenario, c.seed, "
            "  cl.labels[c.truth + 1] AS truth_label, o.action AS mediator_action, "
            "  cl.labels[o.decision + 1] AS mediator_label, r.final_label, r.comment, r.reviewer, r.created_at, "
            "  row_number() OVER (PARTITION BY r.case_id, r.method ORDER BY r.created_at DESC, r.review_id DESC) = 1 "
            "  AS is_current "
            "FROM reviews r JOIN cases c ON c.run_id = r.run_id AND c.case_id = r.case_id "
            "JOIN cells cl ON cl.run_id = c.run_id AND cl.scenario = c.scenario AND cl.seed = c.seed "
            "LEFT JOIN outcomes o ON o.run_id = r.run_id AND o.case_id = r.case_id AND o.method = r.method "
            "WHERE r.run_id = ? ORDER BY r.created_at, r.review_id", [run_id]).df()
    return frame


def reviewed_as_calibration_rows(store: Store, run_id: str, method: str | None = None) -> pd.DataFrame:
    """Reviewed cases as calibration CSV rows: case_id, agent, reported_label, true_label.

    One row per (reviewed case, agent): the agent's round-1 report under the reviewed
    method and the reviewer's final label as the truth.  A case reviewed under several
    methods uses its latest review (restricted to ``method`` when given).  Agents are
    named "agent 1", "agent 2", ... in panel order.
    """
    with cursor(store) as cur:
        store.check_run(run_id, cur)
        rows = cur.execute(
            "WITH latest AS (SELECT case_id, method, final_label FROM reviews "
            "  WHERE run_id = ? AND (? IS NULL OR method = ?) QUALIFY " + _LATEST.format(part="case_id") + ") "
            "SELECT l.case_id, l.final_label, cl.labels, t.reports FROM latest l "
            "JOIN cases c ON c.run_id = ? AND c.case_id = l.case_id "
            "JOIN cells cl ON cl.run_id = c.run_id AND cl.scenario = c.scenario AND cl.seed = c.seed "
            "JOIN traces t ON t.run_id = ? AND t.case_id = l.case_id AND t.method = l.method AND t.round = 1 "
            "ORDER BY l.case_id", [run_id, method, method, run_id, run_id]).fetchall()
    out: list[dict[str, Any]] = []
    for case_id, final_label, labels, reports in rows:
        for a, report in enumerate(reports):
            out.append({"case_id": case_id, "agent": f"agent {a + 1}",
                        "reported_label": labels[int(report)], "true_label": final_label})
    return pd.DataFrame(out, columns=CALIBRATION_COLUMNS)


def last_answers(store: Store, run_id: str, case_id: str, method: str = "dcem") -> pd.DataFrame:
    """Each agent's last answer of a case: its turn in the round the outcome was reached.

    One row per agent (columns :data:`LAST_ANSWER_COLUMNS`): the turn (see
    :func:`dcem.store.case_reads.agent_turns`) plus the agent's model, the probability of the
    label it answered and its runner-up label with that label's probability.  Empty for
    runs without agent turns (synthetic runs); :class:`StoreError` for an unknown case.
    """
    row = store.con.execute("SELECT rounds FROM outcomes WHERE run_id = ? AND case_id = ? AND method = ?",
                            [run_id, case_id, method]).fetchone()
    if row is None:
        raise StoreError(f"run {run_id!r} has no case {case_id!r} for method {method!r}")
    turns = agent_turns(store, run_id, case_id, method)
    turns = turns[turns["round"] <= int(row[0])]
    if turns.empty:
        return pd.DataFrame(columns=LAST_ANSWER_COLUMNS)
    last = turns.sort_values(["agent", "round"]).groupby("agent", sort=True).tail(1).reset_index(drop=True)
    labels = case_labels(store, run_id, case_id)
    agents = case_agents(store, run_id, case_id)
    models = dict(zip(agents["agent"], agents["model"]))
    extra: dict[str, list[Any]] = {"model": [], "probability": [], "runner_up": [], "runner_up_probability": []}
    for turn in last.itertuples(index=False):
        extra["model"].append(models.get(int(turn.agent)))
        probs = turn.probabilities
        if probs is None or len(probs) != len(labels):
            extra["probability"].append(float("nan"))
            extra["runner_up"].append(None)
            extra["runner_up_probability"].append(float("nan"))
            continue
        order = sorted(range(len(labels)), key=lambda j: -probs[j])
        chosen = labels.index(turn.label) if turn.label in labels else order[0]
        other = next(j for j in order if j != chosen)
        extra["probability"].append(float(probs[chosen]))
        extra["runner_up"].append(labels[other])
        extra["runner_up_probability"].append(float(probs[other]))
    for name, values in extra.items():
        last[name] = pd.Series(values, dtype=object if name in ("model", "runner_up") else float)
    return last[LAST_ANSWER_COLUMNS]
