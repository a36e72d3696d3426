"""Reading and writing the Small Agent Group's tables (schema in :mod:`sag.store.migrations`).

A run is one (benchmark, item selection, group config, seed); its items are written when
the run is created, and each answered item's messages, outcome and mediator rounds in one
transaction, so a crash loses at most the item in progress and never leaves half an item.
"""
from __future__ import annotations

import contextlib
import datetime as _dt
import json
import os
from typing import Any, Iterator, Sequence

import pandas as pd

from clinical.questions import QuestionItem
from common.db import Database, StoreError, git_revision
from common.ledger import MIGRATIONS as LEDGER_MIGRATIONS, PACKAGE as LEDGER, Ledger, table_mirror
from common.migrations import migrate
from common.resume import check_resume
from common.transactions import cursor, run_in_transaction
from runtime.call_log import CallLog
from sag.group.config import GroupConfig
from sag.group.failures import FailedItem
from sag.debate.results import ItemResult
from sag.store.export_rows import CALL_LOG, RunSelection
from sag.store.migrations import MIGRATIONS, PACKAGE
from sag.group.transcript import GroupMessage

__all__ = ["SagStore", "MESSAGE_COLUMNS", "OUTCOME_COLUMNS", "write_item"]

MESSAGE_COLUMNS = ("run_id", "item_id", "seq", "round", "phase", "agent_id", "role", "model", "answer",
                   "distribution", "refuse_probability", "rationale", "citations", "unknown_citations", "flags",
                   "stances", "new_substance", "parse_note", "retrieved_json", "note", "call_key", "cached",
                   "prompt_tokens", "completion_tokens", "reused_tokens", "duration_s", "error")
OUTCOME_COLUMNS = ("run_id", "item_id", "answer", "truth", "correct", "refused", "escalated", "rule", "rounds",
                   "stop_reason", "refusal_score", "model_calls", "cached_calls", "prompt_tokens",
                   "completion_tokens", "seconds", "created_at")
# A failure row of an item answered since (a store merged from a copy that answered it) is not a failure.
_UNANSWERED = ("NOT EXISTS (SELECT 1 FROM sag_outcomes a WHERE a.run_id = f.run_id "  # noqa: S608 (fixed SQL)
               "AND a.item_id = f.item_id)")
_FAILURE_COLUMNS = ("run_id", "item_id", "reason", "attempts", "model_calls", "cached_calls", "seconds", "failed_at")
_MEDIATOR_COLUMNS = ("run_id", "item_id", "round", "action", "decision", "energy", "margin", "steer_agent",
                     "steer_alternative")


def _insert(table: str, columns: Sequence[str]) -> str:
    return (f"INSERT INTO {table} ({', '.join(columns)}) "  # noqa: S608 (fixed names)
            f"VALUES ({', '.join('?' * len(columns))})")


def _message_row(run_id: str, item_id: str, seq: int, m: GroupMessage) -> list[Any]:
    r = m.reading
    return [run_id, item_id, seq, m.round, m.phase, m.agent_id, m.role.value, m.model, m.answer,
            [float(p) for p in m.distribution], m.refuse_probability, m.rationale, list(r.citations),
            list(r.unknown_citations), list(r.flags), list(r.stances), r.new_substance, r.note,
            json.dumps([[pid, score] for pid, score in m.retrieved]), m.note, m.call_key, m.cached,
            m.prompt_tokens, m.completion_tokens, m.reused_tokens, m.duration_s, m.error]


def _stored_item(item: QuestionItem) -> tuple[Any, ...]:
    return (item.question, json.dumps(list(item.options)), item.answer, item.context)


_ITEM_FIELDS = ("question", "options", "answer", "context")


_RESUME_HINT = "repeat the command that started it to resume it, or run these settings in another store (--db)"


def _settings(benchmark: str, cfg: GroupConfig, seed: int) -> dict[str, Any]:
    """What a run stores besides its items, as :func:`common.resume.check_resume` compares it."""
    return {"benchmark": benchmark, "config": cfg.to_dict(), "seed": seed}


def _check_items(cur: Any, run_id: str, items: Sequence[QuestionItem], settings: dict[str, Any]) -> bool:
    """See :meth:`SagStore.check_items`; True when the run exists."""
    row = cur.execute("SELECT item_ids, benchmark, config_json, seed FROM sag_runs WHERE run_id = ?",
                      [run_id]).fetchone()
    if row is None:
        return False
    if list(row[0]) != [it.item_id for it in items]:
        raise StoreError(f"run {run_id} exists with other items; it cannot be resumed with these")
    check_resume(f"run {run_id}", {"benchmark": row[1], "config": json.loads(row[2]), "seed": row[3]}, settings,
                 hint=_RESUME_HINT)
    stored = {r[0]: tuple(r[1:]) for r in cur.execute(
        "SELECT item_id, question, options_json, answer, context FROM sag_items WHERE run_id = ?",
        [run_id]).fetchall()}
    for it in items:
        old = stored.get(it.item_id)
        if old is not None and old != _stored_item(it):
            fields = [name for name, a, b in zip(_ITEM_FIELDS, old, _stored_item(it)) if a != b]
            raise StoreError(f"item {it.item_id!r} has changed since run {run_id} began ({', '.join(fields)} "
                             "differ); its stored results belong to the old item. Give the edited item a new id, "
                             "or use another store (--db)")
    return True


def write_item(cur: Any, run_id: str, result: ItemResult) -> None:
    """One answered item's rows (messages, mediator rounds, outcome; its failure row goes),
    on ``cur``, inside the caller's transaction."""
    item, out = result.item, result.outcome
    outcome = [run_id, item.item_id, out.answer, item.answer, result.correct, result.refused, result.escalated,
               out.rule, out.rounds, out.stop_reason, result.refusal_score, result.model_calls,
               result.cached_calls, result.prompt_tokens, result.completion_tokens, result.seconds,
               _dt.datetime.now()]
    for seq, m in enumerate(out.messages):
        cur.execute(_insert("sag_messages", MESSAGE_COLUMNS), _message_row(run_id, item.item_id, seq, m))
    for r in result.mediator:
        cur.execute(_insert("sag_mediator", _MEDIATOR_COLUMNS),
                    [run_id, item.item_id, r.round, r.action, r.decision, r.energy, r.margin, r.steer_agent,
                     r.steer_alternative])
    cur.execute(_insert("sag_outcomes", OUTCOME_COLUMNS), outcome)
    cur.execute("DELETE FROM sag_failures WHERE run_id = ? AND item_id = ?", [run_id, item.item_id])


_MIRROR = table_mirror("sag_runs")  # the ledger keeps sag_runs.status in step


class SagStore(Database):
    """The SAG tables (and the call log) of the project's DuckDB file; a context manager."""

    def __init__(self, path: str | os.PathLike[str] | None = None, *, read_only: bool = False,
                 create: bool = True) -> None:
        super().__init__(path, read_only=read_only, create=create)
        if not read_only:
            migrate(self.con, PACKAGE, MIGRATIONS)
            migrate(self.con, LEDGER, LEDGER_MIGRATIONS)  # the run ledger its runs go through
            CallLog(self)

    def __enter__(self) -> "SagStore":
        return self

    # ------------------------------------------------------------------ runs
    def check_items(self, run_id: str, items: Sequence[QuestionItem], *, benchmark: str, cfg: GroupConfig,
                    seed: int) -> None:
        """StoreError when run ``run_id`` exists with other items, or with an item of the same
        id whose question, options, answer or context differ (an item file edited since the
        run began: its stored answers belong to the old item); :class:`common.resume.ResumeRefused`
        when it exists with another benchmark, group config or seed (the first field that differs)."""
        with cursor(self) as cur:
            _check_items(cur, run_id, items, _settings(benchmark, cfg, seed))

    def ensure_run(self, run_id: str, *, benchmark: str, cfg: GroupConfig, items: Sequence[QuestionItem],
                   seed: int) -> bool:
        """Create the run and its items if new; True when it already existed (a resume);
        refused when it exists with other settings or other or edited items (:meth:`check_items`)."""
        def work(cur: Any) -> bool:
            if _check_items(cur, run_id, items, _settings(benchmark, cfg, seed)):
                cur.execute("UPDATE sag_runs SET status = 'running', finished_at = NULL WHERE run_id = ? "
                            "AND status <> 'finished'", [run_id])
                return True
            cur.execute(_insert("sag_runs", ("run_id", "benchmark", "group_name", "method", "config_json",
                                             "item_ids", "seed", "git_revision", "created_at", "status")),
                        [run_id, benchmark, cfg.name, cfg.method, json.dumps(cfg.to_dict(), sort_keys=True),
                         [it.item_id for it in items], seed, git_revision(), _dt.datetime.now(), "running"])
            for pos, it in enumerate(items):
                cur.execute(_insert("sag_items", ("run_id", "item_id", "position", "benchmark", "question",
                                                  "options_json", "answer", "context")),
                            [run_id, it.item_id, pos, it.benchmark, *_stored_item(it)])
            return False
        return run_in_transaction(self, work)

    def set_calibration(self, run_id: str, calibration: dict[str, Any]) -> None:
        self.con.cursor().execute("UPDATE sag_runs SET calibration_json = ? WHERE run_id = ?",
                                  [json.dumps(calibration, sort_keys=True), run_id])

    def calibration(self, run_id: str) -> dict[str, Any] | None:
        with cursor(self) as cur:
            row = cur.execute("SELECT calibration_json FROM sag_runs WHERE run_id = ?", [run_id]).fetchone()
        return json.loads(row[0]) if row and row[0] else None

    def ledger(self) -> Ledger:
        """The store's run ledger (:mod:`common.ledger`), which keeps ``sag_runs.status`` in
        step: a run's start, items, finish and failure go through it (:func:`sag.runs.run.run_items`)."""
        return Ledger(self, mirror=_MIRROR)

    def save_failure(self, run_id: str, failure: FailedItem) -> None:
        """Record that an item got no answer (its latest failure; attempts counted)."""
        def work(cur: Any) -> None:
            row = cur.execute("SELECT attempts FROM sag_failures WHERE run_id = ? AND item_id = ?",
                              [run_id, failure.item_id]).fetchone()
            cur.execute("DELETE FROM sag_failures WHERE run_id = ? AND item_id = ?", [run_id, failure.item_id])
            cur.execute(_insert("sag_failures", _FAILURE_COLUMNS),
                        [run_id, failure.item_id, failure.reason, (row[0] if row else 0) + 1, failure.model_calls,
                         failure.cached_calls, failure.seconds, _dt.datetime.now()])
        run_in_transaction(self, work)

    def failures(self, run_id: str | None = None) -> pd.DataFrame:
        """Items that got no answer and have not been answered since, of one run (or all)."""
        return self._frame("SELECT f.*, r.benchmark, r.group_name, r.method FROM sag_failures f "
                           "JOIN sag_runs r USING (run_id) LEFT JOIN sag_items i USING (run_id, item_id) "
                           f"WHERE (? IS NULL OR f.run_id = ?) AND {_UNANSWERED} ORDER BY f.run_id, i.position",
                           [run_id, run_id])

    def done_items(self, run_id: str) -> set[str]:
        with cursor(self) as cur:
            rows = cur.execute("SELECT item_id FROM sag_outcomes WHERE run_id = ?", [run_id]).fetchall()
        return {r[0] for r in rows}

    # ----------------------------------------------------------------- items
    def save_item(self, run_id: str, result: ItemResult) -> None:
        """Write one answered item (messages, outcome, mediator rounds) in one transaction."""
        run_in_transaction(self, lambda cur: write_item(cur, run_id, result))

    # ----------------------------------------------------------------- reads
    def _frame(self, sql: str, params: Sequence[Any] = ()) -> pd.DataFrame:
        with cursor(self) as cur:
            return cur.execute(sql, list(params)).df()

    def runs(self) -> pd.DataFrame:
        """Every run, newest first, with its item count, answered items and failed items
        (no answer yet: a model call failed)."""
        return self._frame(
            "SELECT r.run_id, r.benchmark, r.group_name, r.method, r.seed, r.status, r.created_at, "
            "len(r.item_ids) AS items, count(o.item_id) AS answered, "
            f"(SELECT count(*) FROM sag_failures f WHERE f.run_id = r.run_id AND {_UNANSWERED}) AS failed "
            "FROM sag_runs r "
            "LEFT JOIN sag_outcomes o USING (run_id) GROUP BY ALL ORDER BY r.created_at DESC")

    def has_eval_parts(self) -> bool:
        """Whether the store holds any part of an evaluation (``sag_eval_parts``)."""
        with cursor(self) as cur:
            return bool(cur.execute("SELECT count(*) FROM sag_eval_parts").fetchone()[0])

    def run_config(self, run_id: str) -> GroupConfig:
        with cursor(self) as cur:
            row = cur.execute("SELECT config_json FROM sag_runs WHERE run_id = ?", [run_id]).fetchone()
        if row is None:
            raise StoreError(f"no SAG run {run_id!r} in {self.path}")
        return GroupConfig.from_mapping(json.loads(row[0]))

    def items(self, run_id: str) -> pd.DataFrame:
        return self._frame("SELECT * FROM sag_items WHERE run_id = ? ORDER BY position", [run_id])

    def outcomes(self, run_id: str | None = None) -> pd.DataFrame:
        """Outcomes of one run (or all), with the run's benchmark, group and method."""
        return self._frame(
            "SELECT o.*, r.benchmark, r.group_name, r.method FROM sag_outcomes o JOIN sag_runs r USING (run_id) "
            "LEFT JOIN sag_items i USING (run_id, item_id) WHERE ? IS NULL OR o.run_id = ? "
            "ORDER BY o.run_id, i.position", [run_id, run_id])

    def agent_answers(self, run_id: str) -> pd.DataFrame:
        """Every agent's answer letter in every round of a run's items (no rationale text)."""
        return self._frame("SELECT run_id, item_id, seq, round, phase, agent_id, role, model, answer "
                           "FROM sag_messages WHERE run_id = ? ORDER BY item_id, seq", [run_id])

    def agent_distributions(self, run_id: str) -> pd.DataFrame:
        """Every answer turn of a run's items: round, phase, agent, role, answer and its
        probability vector (no rationale text), items in run order."""
        return self._frame("SELECT m.item_id, m.round, m.phase, m.agent_id, m.role, m.answer, m.distribution "
                           "FROM sag_messages m LEFT JOIN sag_items i USING (run_id, item_id) "
                           "WHERE m.run_id = ? AND m.phase <> 'retrieve' ORDER BY i.position, m.seq", [run_id])

    def messages(self, run_id: str, item_id: str) -> pd.DataFrame:
        return self._frame("SELECT * FROM sag_messages WHERE run_id = ? AND item_id = ? ORDER BY seq",
                           [run_id, item_id])

    def mediator_rounds(self, run_id: str, item_id: str) -> pd.DataFrame:
        return self._frame("SELECT * FROM sag_mediator WHERE run_id = ? AND item_id = ? ORDER BY round",
                           [run_id, item_id])

    # --------------------------------------------------------------- exports
    def is_sag_store(self) -> bool:
        """Whether the file has the SAG runs table and the call log (a store opened
        read-only that SAG never wrote to has neither)."""
        return bool(self.con.cursor().execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = 'main' "
            "AND table_name IN ('sag_runs', ?)", [CALL_LOG]).fetchone()[0] == 2)

    def run_ids(self) -> set[str]:
        """The id of every SAG run."""
        return {str(r) for (r,) in self.con.cursor().execute("SELECT run_id FROM sag_runs").fetchall()}

    @contextlib.contextmanager
    def export_selection(self, run_ids: Sequence[str] | None) -> Iterator[RunSelection]:
        """The rows an export of ``run_ids`` (every SAG run when None) keeps, on a cursor of
        its own that is closed when the block ends (:class:`sag.store.export_rows.RunSelection`)."""
        cur = self.con.cursor()
        try:
            yield RunSelection(cur, run_ids)
        finally:
            cur.close()
