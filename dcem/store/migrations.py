"""The D-CEM tables' schema migrations, in order (applied by :func:`common.migrations.migrate`).

New schema changes are appended as new migrations; existing ones are never edited.
"""
from __future__ import annotations

from common.migrations import Migration

__all__ = ["PACKAGE", "MIGRATIONS"]

_M001 = [
    """CREATE TABLE runs (
        run_id VARCHAR PRIMARY KEY,
        kind VARCHAR NOT NULL,
        spec_json VARCHAR NOT NULL,
        config_json VARCHAR NOT NULL,
        seeds INTEGER[] NOT NULL,
        git_revision VARCHAR,
        created_at TIMESTAMP NOT NULL,
        finished_at TIMESTAMP,
        status VARCHAR NOT NULL
    )""",
    """CREATE TABLE cells (
        run_id VARCHAR NOT NULL,
        scenario VARCHAR NOT NULL,
        seed INTEGER NOT NULL,
        labels VARCHAR[] NOT NULL,
        confusion DOUBLE[][][] NOT NULL,
        prior DOUBLE[] NOT NULL,
        loss DOUBLE[][] NOT NULL,
        high_risk INTEGER[] NOT NULL,
        config_json VARCHAR NOT NULL,
        info_json VARCHAR NOT NULL,
        finished_at TIMESTAMP NOT NULL,
        PRIMARY KEY (run_id, scenario, seed)
    )""",
    """CREATE TABLE cases (
        run_id VARCHAR NOT NULL,
        case_id VARCHAR NOT NULL,
        scenario VARCHAR NOT NULL,
        seed INTEGER NOT NULL,
        truth INTEGER NOT NULL,
        features INTEGER[] NOT NULL,
        PRIMARY KEY (run_id, case_id)
    )""",
    """CREATE TABLE traces (
        run_id VARCHAR NOT NULL,
        case_id VARCHAR NOT NULL,
        method VARCHAR NOT NULL,
        round INTEGER NOT NULL,
        reports INTEGER[] NOT NULL,
        posteriors DOUBLE[][],
        weights DOUBLE[],
        pooled DOUBLE[],
        decision INTEGER,
        runner_up INTEGER,
        margin DOUBLE,
        agent_risk DOUBLE[],
        dangerous_miss INTEGER[],
        energy DOUBLE,
        e_disagreement DOUBLE,
        e_risk DOUBLE,
        e_margin DOUBLE,
        descent DOUBLE,
        action VARCHAR,
        steer_agent INTEGER,
        steer_current INTEGER,
        steer_alternative INTEGER,
        steer_features VARCHAR[],
        certified BOOLEAN,
        budget BOOLEAN,
        PRIMARY KEY (run_id, case_id, method, round)
    )""",
    """CREATE TABLE outcomes (
        run_id VARCHAR NOT NULL,
        case_id VARCHAR NOT NULL,
        method VARCHAR NOT NULL,
        action VARCHAR NOT NULL,
        decision INTEGER NOT NULL,
        rounds INTEGER NOT NULL,
        certified BOOLEAN NOT NULL,
        budget BOOLEAN NOT NULL,
        truth INTEGER NOT NULL,
        loss DOUBLE NOT NULL,
        PRIMARY KEY (run_id, case_id, method)
    )""",
    """CREATE TABLE metrics (
        run_id VARCHAR NOT NULL,
        scenario VARCHAR NOT NULL,
        seed INTEGER NOT NULL,
        method VARCHAR NOT NULL,
        metric VARCHAR NOT NULL,
        value DOUBLE,
        PRIMARY KEY (run_id, scenario, seed, method, metric)
    )""",
    """CREATE TABLE ablation (
        run_id VARCHAR NOT NULL,
        scenario VARCHAR NOT NULL,
        seed INTEGER NOT NULL,
        xi DOUBLE NOT NULL,
        horizon INTEGER NOT NULL,
        metric VARCHAR NOT NULL,
        value DOUBLE,
        PRIMARY KEY (run_id, scenario, seed, xi, horizon, metric)
    )""",
]

# Saved what-if settings (a name may be saved many times: the latest row wins) and the
# append-only human reviews of escalated cases (the current review of a case is its
# latest row).
_M002 = [
    """CREATE TABLE presets (
        preset_id VARCHAR PRIMARY KEY,
        name VARCHAR NOT NULL,
        config_json VARCHAR NOT NULL,
        loss DOUBLE[][],
        labels VARCHAR[],
        note VARCHAR,
        created_at TIMESTAMP NOT NULL
    )""",
    """CREATE TABLE reviews (
        review_id VARCHAR PRIMARY KEY,
        run_id VARCHAR NOT NULL,
        case_id VARCHAR NOT NULL,
        method VARCHAR NOT NULL,
        final_label VARCHAR NOT NULL,
        comment VARCHAR NOT NULL,
        reviewer VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL
    )""",
]

# Runs of language-model agents: each round's probability vectors beside the labels,
# the case text the agents read, and every agent turn (mediator note, reply, error,
# whether the call log answered it) per case, method, round and agent.
_M003 = [
    "ALTER TABLE traces ADD COLUMN probabilities DOUBLE[][]",
    """CREATE TABLE case_texts (
        run_id VARCHAR NOT NULL,
        case_id VARCHAR NOT NULL,
        source_id VARCHAR,
        text VARCHAR NOT NULL,
        PRIMARY KEY (run_id, case_id)
    )""",
    """CREATE TABLE agent_turns (
        run_id VARCHAR NOT NULL,
        case_id VARCHAR NOT NULL,
        method VARCHAR NOT NULL,
        round INTEGER NOT NULL,
        agent INTEGER NOT NULL,
        note VARCHAR,
        reply VARCHAR,
        label INTEGER,
        probabilities DOUBLE[],
        error VARCHAR,
        cached BOOLEAN NOT NULL,
        cache_key VARCHAR,
        PRIMARY KEY (run_id, case_id, method, round, agent)
    )""",
]

# each agent turn's few-shot examples as JSON (a list), for turns imported from a run export;
# a store that made the run keeps them with the logged call instead (NULL here)
_M004 = [
    "ALTER TABLE agent_turns ADD COLUMN examples_json VARCHAR",
]

# a cell whose computation raised: the message, kept apart from the cells (common.work)
_M005 = [
    """CREATE TABLE cell_failures (
        run_id VARCHAR NOT NULL,
        scenario VARCHAR NOT NULL,
        seed INTEGER NOT NULL,
        message VARCHAR NOT NULL,
        failed_at TIMESTAMP NOT NULL,
        PRIMARY KEY (run_id, scenario, seed, failed_at)
    )""",
]

PACKAGE = "dcem"
MIGRATIONS: list[Migration] = [
    ("001_runs_cells_cases_traces_outcomes_metrics", _M001),
    ("002_presets_reviews", _M002),
    ("003_llm_traces_case_texts_agent_turns", _M003),
    ("004_agent_turn_examples", _M004),
    ("005_cell_failures", _M005),
]
