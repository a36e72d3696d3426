"""What a row of the SAG tables may hold when another store file is merged in
(:func:`common.store_merge.merge_store`; the rules' form is :mod:`common.merge_checks`).

A merged run must be well formed and, when the target holds it too, defined alike (same
benchmark, group, method, configuration, items and seed: a finished copy may then only
mark it finished).  Each item belongs to its run's item list at its position, with options
lettered A, B, ... and an answer among them.  An outcome, message or mediator round belongs
to an item of the run; an outcome's answer is an option letter of that item, REFUSE or
ESCALATE, its truth the item's answer, ``correct``/``refused``/``escalated`` follow from
the answer; counts and rounds are non-negative, seconds and durations finite and
non-negative, probabilities finite in [0, 1].  A failed item (``sag_failures``) belongs to an
item of its run and says why; one that either file answered is not listed as failed
(:meth:`sag.store.tables.SagStore.failures` reads only unanswered ones).
"""
from __future__ import annotations

from common.merge_checks import RowCheck, belongs, counts, json_text, number, numbers, one_of, same_in_both
from sag.group.config import AgentRole
from sag.group.transcript import ESCALATE, REFUSE

__all__ = ["SAG_CHECKS", "letters_of", "sag_store_checks"]

_STATUSES = ("running", "finished", "interrupted", "failed")
_PHASES = ("retrieve", "propose", "debate", "audit", "judge", "answer")
_ACTIONS = ("CONTINUE", "DIFFERENTIAL_STEER", "STOP_AND_DECIDE", "STOP_AND_ESCALATE", "PENDING")
_ITEM = "the run and item must exist (in the target or among the merged rows)"


def letters_of(options_json: str) -> str:
    """SQL: the option letters of an item's ``options_json`` (NULL unless valid JSON)."""
    return f"CASE WHEN json_valid({options_json}) THEN json_extract_string({options_json}, '$[*][0]') END"


def _in_item(column: str, extra: tuple[str, ...]) -> str:
    """SQL: the row's ``column`` is not an option letter of its item (nor one of ``extra``)."""
    allowed = "".join(f" AND r.{column} <> '{word}'" for word in extra)
    return (f"r.{column} IS NOT NULL{allowed} AND NOT EXISTS (SELECT 1 FROM {{sag_items}} i WHERE "
            f"i.run_id = r.run_id AND i.item_id = r.item_id AND "
            f"coalesce(list_contains({letters_of('i.options_json')}, r.{column}), false))")


_OPTIONS_OK = ("json_valid(r.options_json) AND json_type(r.options_json) = 'ARRAY' "
               "AND json_array_length(r.options_json) BETWEEN 2 AND 26 "
               "AND coalesce(json_extract_string(r.options_json, '$[*][0]') = "
               "list_transform(range(json_array_length(r.options_json)::BIGINT), "
               "lambda i: chr((65 + i)::INTEGER)), false) "
               "AND coalesce(len(list_filter(json_extract(r.options_json, '$[*]'), "
               "lambda o: json_type(o) <> 'ARRAY' OR json_array_length(o) <> 2 "
               "OR json_type(o, '$[1]') <> 'VARCHAR')) = 0, false)")

_RUNS = [
    one_of("sag_runs", "status", _STATUSES),
    RowCheck("sag_runs", "finished_at", "(r.status = 'finished') = (r.finished_at IS NULL)",
             "must be set exactly when the run is finished"),
    *[RowCheck("sag_runs", c, f"r.{c} = ''", "must not be empty") for c in ("run_id", "benchmark", "group_name",
                                                                          "method")],
    RowCheck("sag_runs", "item_ids", "len(r.item_ids) = 0 OR len(list_distinct(r.item_ids)) <> len(r.item_ids)",
             "must list at least one item, each once, none missing"),
    *counts("sag_runs", "seed"),
    json_text("sag_runs", "config_json"),
    json_text("sag_runs", "calibration_json", nullable=True),
    *same_in_both("sag_runs", "benchmark", "group_name", "method", "config_json", "item_ids", "seed"),
]

_ITEMS = [
    belongs("sag_items", "sag_runs", ("run_id",), "the run must exist (in the target or among the merged rows)"),
    RowCheck("sag_items", "item_id", "NOT EXISTS (SELECT 1 FROM {sag_runs} p WHERE p.run_id = r.run_id AND "
             "list_contains(p.item_ids, r.item_id))", "must be one of its run's item_ids"),
    RowCheck("sag_items", "position", "NOT EXISTS (SELECT 1 FROM {sag_runs} p WHERE p.run_id = r.run_id AND "
             "list_position(p.item_ids, r.item_id) = r.position + 1)",
             "must be the item's place in its run's item_ids (counted from 0)"),
    RowCheck("sag_items", "options_json", f"NOT coalesce({_OPTIONS_OK}, false)",
             "must be a JSON list of two to 26 [letter, text] pairs lettered A, B, C, ... in order"),
    RowCheck("sag_items", "answer", f"NOT coalesce(list_contains({letters_of('r.options_json')}, r.answer), false)",
             "must be one of the item's option letters"),
    *same_in_both("sag_items", "position", "benchmark", "question", "options_json", "answer", "context"),
]

_OUTCOMES = [
    belongs("sag_outcomes", "sag_items", ("run_id", "item_id"), _ITEM),
    RowCheck("sag_outcomes", "answer", _in_item("answer", (REFUSE, ESCALATE)),
             f"must be an option letter of the item, {REFUSE} or {ESCALATE}"),
    RowCheck("sag_outcomes", "truth", "NOT EXISTS (SELECT 1 FROM {sag_items} i WHERE i.run_id = r.run_id AND "
             "i.item_id = r.item_id AND i.answer = r.truth)", "must be the item's stored answer"),
    RowCheck("sag_outcomes", "correct", "r.correct IS DISTINCT FROM (r.answer = r.truth)",
             "must say whether the answer is the truth"),
    RowCheck("sag_outcomes", "refused", f"r.refused IS DISTINCT FROM (r.answer = '{REFUSE}')",
             f"must say whether the answer is {REFUSE}"),
    RowCheck("sag_outcomes", "escalated", f"r.escalated IS DISTINCT FROM (r.answer = '{ESCALATE}')",
             f"must say whether the answer is {ESCALATE}"),
    *counts("sag_outcomes", "rounds", "model_calls", "cached_calls", "prompt_tokens", "completion_tokens"),
    number("sag_outcomes", "refusal_score", 0.0, 1.0, nullable=True),  # unknown in an older export
    number("sag_outcomes", "seconds"),
]

_MESSAGES = [
    belongs("sag_messages", "sag_items", ("run_id", "item_id"), _ITEM),
    *counts("sag_messages", "seq", "round", "prompt_tokens", "completion_tokens", "reused_tokens"),
    one_of("sag_messages", "phase", _PHASES),
    one_of("sag_messages", "role", tuple(r.value for r in AgentRole)),
    RowCheck("sag_messages", "answer", _in_item("answer", (REFUSE,)), f"must be an option letter of the item, "
             f"{REFUSE} or empty"),
    numbers("sag_messages", "distribution", 0.0, 1.0),
    number("sag_messages", "refuse_probability", 0.0, 1.0, nullable=True),
    number("sag_messages", "duration_s"),
    json_text("sag_messages", "retrieved_json"),
]

_MEDIATOR = [
    belongs("sag_mediator", "sag_items", ("run_id", "item_id"), _ITEM),
    *counts("sag_mediator", "round"),
    one_of("sag_mediator", "action", _ACTIONS),
    number("sag_mediator", "energy", None),
    number("sag_mediator", "margin", None),
]

_FAILURES = [
    belongs("sag_failures", "sag_items", ("run_id", "item_id"), _ITEM),
    RowCheck("sag_failures", "reason", "r.reason IS NULL OR trim(r.reason) = ''", "must say why the item failed"),
    RowCheck("sag_failures", "attempts", "r.attempts IS NULL OR r.attempts < 1", "must be a whole number >= 1"),
    *counts("sag_failures", "model_calls", "cached_calls"),
    number("sag_failures", "seconds"),
]

_EVAL = [
    belongs("sag_eval_parts", "sag_runs", ("run_id",), "the run must exist (in the target or among the merged rows)"),
    *counts("sag_eval_parts", "position"),
    *[json_text("sag_eval_parts", c) for c in ("spec_json", "config_json", "extra_json")],
    number("sag_eval_cost", "peak_rss_mb"),
    json_text("sag_eval_cost", "weights_json"),
]

SAG_CHECKS: tuple[RowCheck, ...] = (*_RUNS, *_ITEMS, *_OUTCOMES, *_MESSAGES, *_MEDIATOR, *_FAILURES, *_EVAL)
"""The rules of every SAG table, parents first (a run before its items, an item before its outcome)."""


def sag_store_checks() -> tuple[RowCheck, ...]:
    """The rules of every table a SAG store may hold: the SAG tables', the call log's (its
    calls belong to SAG or D-CEM runs), the run ledger's and, for a store shared with D-CEM
    runs, D-CEM's."""
    from dcem.store.merge_checks import DCEM_CHECKS
    from runtime.merge_checks import call_log_checks

    return (*SAG_CHECKS, *call_log_checks(("sag_runs", "runs")), *DCEM_CHECKS)
