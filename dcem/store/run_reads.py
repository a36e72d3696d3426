"""Reading what a stored run is and what its cells hold, for the analysis and the pages:
a run's kind and specification, its rows for a picker, its cells' labels and confusions,
per-round accuracy and energy, changed outcomes between two runs, and the reports (and
probability vectors) a run replay reshapes.  The callers parse and shape; the SQL is here."""
from __future__ import annotations

from typing import Any

import pandas as pd

from common.db import Database
from dcem.store.database import Store, StoreError

__all__ = ["run_spec_text", "run_kind", "has_agent_turns", "outcome_methods", "run_rows", "cell_scenarios",
           "cell_labels", "cell_infos", "cell_confusions", "round_accuracy_energy", "changed_outcomes",
           "final_energies", "replay_cell_heads", "replay_cases", "replay_reports", "traces_have_probabilities",
           "probability_summary", "probability_widths", "probability_values"]

_TRACE_CASES = "FROM traces t JOIN cases c USING (run_id, case_id) WHERE t.run_id = ? AND t.method = ?"


def run_spec_text(store: Database, run_id: str) -> Any:
    """The stored specification of a run, as stored (JSON text, or None); StoreError for an unknown run."""
    row = store.con.execute("SELECT spec_json FROM runs WHERE run_id = ?", [run_id]).fetchone()
    if row is None:
        raise StoreError(f"no run {run_id!r} in {store.path}")
    return row[0]


def run_kind(store: Database, run_id: str) -> str:
    """A run's kind (``synthetic``, ``clinical`` ...); StoreError for an unknown run."""
    row = store.con.execute("SELECT kind FROM runs WHERE run_id = ?", [run_id]).fetchone()
    if row is None:
        raise StoreError(f"no run {run_id!r} in {store.path}")
    return str(row[0])


def has_agent_turns(store: Database, run_id: str) -> bool:
    """Whether the run stored any agent turn (runs of language-model agents do)."""
    return store.con.execute("SELECT 1 FROM agent_turns WHERE run_id = ? LIMIT 1", [run_id]).fetchone() is not None


def outcome_methods(store: Database, run_id: str) -> set[str]:
    """The methods with stored outcomes in the run."""
    return {r[0] for r in store.con.execute("SELECT DISTINCT method FROM outcomes WHERE run_id = ?",
                                            [run_id]).fetchall()}


def run_rows(store: Database) -> list[tuple[Any, ...]]:
    """Every stored run, newest first: (run_id, kind, status, spec_json, seeds, created_at, finished_at)."""
    return store.con.execute(
        "SELECT run_id, kind, status, spec_json, seeds, created_at, finished_at FROM runs "
        "ORDER BY created_at DESC, run_id").fetchall()


def cell_scenarios(store: Database) -> list[tuple[Any, Any]]:
    """(run_id, scenario) of every run's stored cells, once each, by run then scenario."""
    return store.con.execute("SELECT DISTINCT run_id, scenario FROM cells ORDER BY run_id, scenario").fetchall()


def cell_labels(store: Database, run_id: str) -> dict[tuple[str, int], list[str]]:
    """(scenario, seed) -> the label names of each stored cell of the run."""
    rows = store.con.execute("SELECT scenario, seed, labels FROM cells WHERE run_id = ?", [run_id]).fetchall()
    return {(str(s), int(k)): [str(x) for x in labels] for s, k, labels in rows}


def cell_infos(store: Database, run_id: str) -> list[Any]:
    """The stored agent information (``info_json``) of each stored cell of the run."""
    return [r[0] for r in store.con.execute("SELECT info_json FROM cells WHERE run_id = ?", [run_id]).fetchall()]


def cell_confusions(store: Database, run_id: str) -> list[tuple[Any, ...]]:
    """(scenario, seed, confusion, info_json) of each stored cell of the run, by scenario then seed."""
    return store.con.execute("SELECT scenario, seed, confusion, info_json FROM cells WHERE run_id = ? "
                             "ORDER BY scenario, seed", [run_id]).fetchall()


def round_accuracy_energy(store: Database, run_id: str, method: str) -> pd.DataFrame:
    """Per (scenario, seed, round) of ``method``: pooled accuracy and mean energy over the cases."""
    return store.con.execute(
        "SELECT c.scenario, c.seed, t.round, avg(CAST(t.decision = c.truth AS DOUBLE)) AS accuracy, "
        f"avg(t.energy) AS energy {_TRACE_CASES} GROUP BY ALL", [run_id, method]).df()


def changed_outcomes(store: Database, run_a: str, run_b: str, method: str = "dcem") -> pd.DataFrame:
    """Cases present in both runs whose terminal action or decision changed."""
    return store.con.execute(
        "SELECT a.case_id, a.truth, a.action AS action_a, b.action AS action_b, a.decision AS decision_a, "
        "b.decision AS decision_b, a.rounds AS rounds_a, b.rounds AS rounds_b FROM outcomes a "
        "JOIN outcomes b ON a.case_id = b.case_id AND a.method = b.method "
        "WHERE a.run_id = ? AND b.run_id = ? AND a.method = ? "
        "AND (a.action <> b.action OR a.decision <> b.decision) ORDER BY a.case_id",
        [run_a, run_b, method]).df()


def final_energies(store: Database, run_id: str, method: str) -> dict[str, float]:
    """Case id -> energy of the case's outcome round (mediated methods; empty otherwise)."""
    rows = store.con.execute(
        "SELECT o.case_id, t.energy FROM outcomes o JOIN traces t ON t.run_id = o.run_id "
        "AND t.case_id = o.case_id AND t.method = o.method AND t.round = o.rounds "
        "WHERE o.run_id = ? AND o.method = ? AND t.energy IS NOT NULL", [run_id, method]).fetchall()
    return {str(case): float(energy) for case, energy in rows}


# ------------------------------------------------------------ run replay reads
def replay_cell_heads(store: Store, run_id: str) -> list[tuple[Any, ...]]:
    """(scenario, seed, labels, confusion, prior, loss, high_risk, config_json) of each stored
    cell of the run, by scenario then seed."""
    return store.con.execute(
        "SELECT scenario, seed, labels, confusion, prior, loss, high_risk, config_json FROM cells "
        "WHERE run_id = ? ORDER BY scenario, seed", [run_id]).fetchall()


def replay_cases(store: Store, run_id: str) -> pd.DataFrame:
    """(scenario, seed, case_id, truth) of every case of the run, in cell then case order."""
    return store.con.execute(
        "SELECT scenario, seed, case_id, truth FROM cases WHERE run_id = ? ORDER BY scenario, seed, case_id",
        [run_id]).df()


def replay_reports(store: Store, run_id: str, method: str) -> pd.DataFrame:
    """The label reports of ``method``, flat: one row per case, round and agent (``report``,
    1-based ``agent``), in cell, case, round and agent order."""
    return store.con.execute(
        "SELECT c.scenario, c.seed, t.case_id, t.round, unnest(t.reports) AS report, "
        "generate_subscripts(t.reports, 1) AS agent "
        "FROM traces t JOIN cases c USING (run_id, case_id) WHERE t.run_id = ? AND t.method = ? "
        "ORDER BY c.scenario, c.seed, t.case_id, t.round, agent", [run_id, method]).df()


def traces_have_probabilities(store: Store) -> bool:
    """Whether the store's traces table has the (optional) ``probabilities`` column."""
    rows = store.con.execute("SELECT name FROM pragma_table_info('traces')").fetchall()
    return any(str(name) == "probabilities" for (name,) in rows)


def probability_summary(store: Store, run_id: str, method: str) -> list[tuple[Any, ...]]:
    """Per cell of ``method``'s trace rows: (scenario, seed, rows without probabilities,
    rows, rows whose vector count differs from the report count)."""
    return store.con.execute(
        "SELECT c.scenario, c.seed, count(*) FILTER (WHERE t.probabilities IS NULL) AS missing, "
        "count(*) AS total, count(*) FILTER (WHERE len(t.probabilities) <> len(t.reports)) AS misaligned "
        f"{_TRACE_CASES} GROUP BY c.scenario, c.seed", [run_id, method]).fetchall()


def probability_widths(store: Store, run_id: str, method: str) -> list[tuple[Any, ...]]:
    """Per cell: (scenario, seed, shortest, longest) stored probability vector of ``method``."""
    return store.con.execute(
        "SELECT scenario, seed, min(len(vec)), max(len(vec)) FROM (SELECT c.scenario, c.seed, "
        f"unnest(t.probabilities) AS vec {_TRACE_CASES} AND t.probabilities IS NOT NULL) GROUP BY scenario, seed",
        [run_id, method]).fetchall()


def probability_values(store: Store, run_id: str, method: str) -> pd.DataFrame:
    """The stored probabilities of ``method``, flat (column ``p``), in cell, case, round,
    agent and label order."""
    return store.con.execute(
        "SELECT c.scenario, c.seed, t.case_id, t.round, unnest(flatten(t.probabilities)) AS p, "
        f"generate_subscripts(flatten(t.probabilities), 1) AS idx {_TRACE_CASES} AND t.probabilities IS NOT NULL "
        "ORDER BY c.scenario, c.seed, t.case_id, t.round, idx", [run_id, method]).df()
