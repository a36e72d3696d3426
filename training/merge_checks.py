"""What a row of the training tables may hold when another store file is merged in
(:func:`common.store_merge.merge_store`; the rules' form is :mod:`common.merge_checks`).

A merged run has a status of :data:`training.store.RUN_STATUSES`, ids and names that are
not empty, settings that are a JSON object and a non-negative item count.  Its
``finished_at`` is empty exactly while it is running: the store sets it when a run
finishes and when it stops early, and clears it when the run resumes.  A finished run
names its adapter (or group) file with the file's sha256; a run both files hold is
defined alike in both (the same kind, method, base model, settings and data).

A step, evaluation or answer belongs to a run that exists (in the target or among the
merged rows).  Steps count from 1; loss, reward and KL are finite (a KL estimate near 0
may dip below it by rounding), accuracy and the share of clipped ratios are in [0, 1],
items, tokens and seconds are non-negative.  An evaluation's counts are non-negative
with at most ``n_items`` correct and the most frequent answer's share in [0, 1]; an
answer names its held-out set, item and answer (the truth may be empty: an item whose
right option was not offered).
"""
from __future__ import annotations

from common.merge_checks import RowCheck, belongs, counts, number, one_of, same_in_both
from training.store import RUN_STATUSES

__all__ = ["TRAINING_CHECKS", "training_store_checks"]

_RUN = "the run must exist (in the target or among the merged rows)"


def _nonempty(table: str, *columns: str) -> list[RowCheck]:
    return [RowCheck(table, c, f"r.{c} IS NULL OR trim(r.{c}) = ''", "must not be empty") for c in columns]


_RUNS = [
    one_of("train_runs", "status", RUN_STATUSES),
    *_nonempty("train_runs", "run_id", "kind", "method", "base_model", "data_name", "data_hash"),
    RowCheck("train_runs", "settings_json", "CASE WHEN json_valid(r.settings_json) THEN "
             "json_type(r.settings_json) <> 'OBJECT' ELSE true END", "must be a JSON object"),
    *counts("train_runs", "n_train"),
    RowCheck("train_runs", "finished_at", "(r.status = 'running') = (r.finished_at IS NOT NULL)",
             "must be empty exactly while the run is running (set when it finished or stopped)"),
    RowCheck("train_runs", "finished_at", "r.finished_at < r.created_at", "must not be before created_at"),
    RowCheck("train_runs", "adapter_file", "r.status = 'finished' AND (r.adapter_file IS NULL OR r.adapter_file = '')",
             "must name the adapter or group file of a finished run"),
    RowCheck("train_runs", "adapter_sha256", "(r.adapter_file IS NULL) <> (r.adapter_sha256 IS NULL) OR NOT "
             "coalesce(regexp_full_match(r.adapter_sha256, '[0-9a-f]{64}'), true)",
             "must be the adapter file's sha256 in hex, given exactly when the file is"),
    *same_in_both("train_runs", "kind", "method", "base_model", "settings_json", "data_name", "data_hash", "n_train"),
]

_STEPS = [
    belongs("train_steps", "train_runs", ("run_id",), _RUN),
    RowCheck("train_steps", "step", "r.step IS NULL OR r.step < 1", "must be a whole number >= 1"),
    *[number("train_steps", c, None) for c in ("loss", "reward", "kl")],
    *[number("train_steps", c, 0.0, 1.0) for c in ("accuracy", "clipped_share")],
    *counts("train_steps", "items", "tokens"),
    number("train_steps", "seconds"),
]

_EVALS = [
    belongs("train_evals", "train_runs", ("run_id",), _RUN),
    *counts("train_evals", "step", "n_items", "n_correct", "n_options"),
    RowCheck("train_evals", "n_correct", "r.n_correct > r.n_items", "must be at most n_items"),
    *_nonempty("train_evals", "split"),
    number("train_evals", "top_letter_share", 0.0, 1.0),
]

_ANSWERS = [
    belongs("train_answers", "train_runs", ("run_id",), _RUN),
    *counts("train_answers", "step"),
    *_nonempty("train_answers", "split", "item_id", "answer"),
]

TRAINING_CHECKS: tuple[RowCheck, ...] = (*_RUNS, *_STEPS, *_EVALS, *_ANSWERS)
"""The rules of every training table, the runs first."""


def training_store_checks() -> tuple[RowCheck, ...]:
    """The rules of the training tables and of the run ledger their runs go through (a store
    shared with other packages' runs adds theirs: the command that merges it names them all)."""
    from common.ledger import ledger_checks

    return (*TRAINING_CHECKS, *ledger_checks())
