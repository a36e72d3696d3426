"""The Small Agent Group's schema migrations, in order (applied by
:func:`common.migrations.migrate` under the package name ``sag``).

New schema changes are appended as new migrations; existing ones are never edited.
"""
from __future__ import annotations

from common.migrations import Migration

__all__ = ["PACKAGE", "MIGRATIONS"]

_M001 = [
    """CREATE TABLE sag_runs (
        run_id VARCHAR PRIMARY KEY,
        benchmark VARCHAR NOT NULL,
        group_name VARCHAR NOT NULL,
        method VARCHAR NOT NULL,
        config_json VARCHAR NOT NULL,
        item_ids VARCHAR[] NOT NULL,
        seed INTEGER NOT NULL,
        calibration_json VARCHAR,
        git_revision VARCHAR,
        created_at TIMESTAMP NOT NULL,
        finished_at TIMESTAMP,
        status VARCHAR NOT NULL
    )""",
    """CREATE TABLE sag_items (
        run_id VARCHAR NOT NULL,
        item_id VARCHAR NOT NULL,
        position INTEGER NOT NULL,
        benchmark VARCHAR NOT NULL,
        question VARCHAR NOT NULL,
        options_json VARCHAR NOT NULL,
        answer VARCHAR NOT NULL,
        context VARCHAR NOT NULL,
        PRIMARY KEY (run_id, item_id)
    )""",
    """CREATE TABLE sag_messages (
        run_id VARCHAR NOT NULL,
        item_id VARCHAR NOT NULL,
        seq INTEGER NOT NULL,
        round INTEGER NOT NULL,
        phase VARCHAR NOT NULL,
        agent_id VARCHAR NOT NULL,
        role VARCHAR NOT NULL,
        model VARCHAR NOT NULL,
        answer VARCHAR,
        distribution DOUBLE[] NOT NULL,
        refuse_probability DOUBLE,
        rationale VARCHAR NOT NULL,
        citations VARCHAR[] NOT NULL,
        unknown_citations VARCHAR[] NOT NULL,
        flags VARCHAR[] NOT NULL,
        stances VARCHAR[] NOT NULL,
        new_substance BOOLEAN,
        parse_note VARCHAR,
        retrieved_json VARCHAR NOT NULL,
        note VARCHAR,
        call_key VARCHAR,
        cached BOOLEAN NOT NULL,
        prompt_tokens INTEGER NOT NULL,
        completion_tokens INTEGER NOT NULL,
        reused_tokens INTEGER NOT NULL,
        duration_s DOUBLE NOT NULL,
        error VARCHAR,
        PRIMARY KEY (run_id, item_id, seq)
    )""",
    """CREATE TABLE sag_outcomes (
        run_id VARCHAR NOT NULL,
        item_id VARCHAR NOT NULL,
        answer VARCHAR NOT NULL,
        truth VARCHAR NOT NULL,
        correct BOOLEAN NOT NULL,
        refused BOOLEAN NOT NULL,
        escalated BOOLEAN NOT NULL,
        rule VARCHAR NOT NULL,
        rounds INTEGER NOT NULL,
        stop_reason VARCHAR NOT NULL,
        refusal_score DOUBLE NOT NULL,
        model_calls INTEGER NOT NULL,
        cached_calls INTEGER NOT NULL,
        prompt_tokens INTEGER NOT NULL,
        completion_tokens INTEGER NOT NULL,
        seconds DOUBLE NOT NULL,
        created_at TIMESTAMP NOT NULL,
        PRIMARY KEY (run_id, item_id)
    )""",
    """CREATE TABLE sag_mediator (
        run_id VARCHAR NOT NULL,
        item_id VARCHAR NOT NULL,
        round INTEGER NOT NULL,
        action VARCHAR NOT NULL,
        decision VARCHAR NOT NULL,
        energy DOUBLE NOT NULL,
        margin DOUBLE NOT NULL,
        steer_agent VARCHAR,
        steer_alternative VARCHAR,
        PRIMARY KEY (run_id, item_id, round)
    )""",
]

_M002 = [
    """CREATE TABLE sag_eval_parts (
        eval_id VARCHAR NOT NULL,
        group_name VARCHAR NOT NULL,
        part VARCHAR NOT NULL,
        metric VARCHAR NOT NULL,
        run_id VARCHAR NOT NULL,
        spec_json VARCHAR NOT NULL,
        config_json VARCHAR NOT NULL,
        extra_json VARCHAR NOT NULL,
        position INTEGER NOT NULL,
        created_at TIMESTAMP NOT NULL,
        PRIMARY KEY (eval_id, group_name, part)
    )""",
    """CREATE TABLE sag_eval_cost (
        eval_id VARCHAR NOT NULL,
        group_name VARCHAR NOT NULL,
        peak_rss_mb DOUBLE NOT NULL,
        weights_json VARCHAR NOT NULL,
        measured_at TIMESTAMP NOT NULL,
        PRIMARY KEY (eval_id, group_name)
    )""",
]

# Items whose model call failed (sag.group.failures): apart from the outcomes, one row per item
# (its latest failure), deleted when a later attempt answers the item.
_M003 = [
    """CREATE TABLE sag_failures (
        run_id VARCHAR NOT NULL,
        item_id VARCHAR NOT NULL,
        reason VARCHAR NOT NULL,
        attempts INTEGER NOT NULL,
        model_calls INTEGER NOT NULL,
        cached_calls INTEGER NOT NULL,
        seconds DOUBLE NOT NULL,
        failed_at TIMESTAMP NOT NULL,
        PRIMARY KEY (run_id, item_id)
    )""",
]

# Outcomes of runs read from the older runs export (sag.runs.old_runs_load), which never measured
# the refusal score: it is empty there, never made up.
_M004 = ["ALTER TABLE sag_outcomes ALTER COLUMN refusal_score DROP NOT NULL"]

PACKAGE = "sag"
MIGRATIONS: list[Migration] = [("001_runs_items_messages_outcomes_mediator", _M001),
                               ("002_evaluation_parts_and_cost", _M002),
                               ("003_failed_items", _M003),
                               ("004_refusal_score_may_be_unknown", _M004)]
