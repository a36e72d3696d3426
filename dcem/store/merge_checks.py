"""What a row of the D-CEM tables may hold when another store file is merged in
(:func:`common.store_merge.merge_store`; the rules' form is :mod:`common.merge_checks`).

A merged run is well formed and, when the target holds it too, defined alike (kind, spec,
configuration and seeds).  A cell belongs to a run and one of its seeds; a case to a cell,
its truth one of the cell's labels; a trace, outcome, case text or agent turn to a case;
an outcome's truth is its case's; a metric or ablation row to a run; a review to an
outcome.  Counts, rounds and indices are non-negative, every number finite, probabilities
(confusion rows, priors, posteriors, weights, pooled vectors, reported vectors) in [0, 1].
"""
from __future__ import annotations

from common.ledger import ledger_checks
from common.merge_checks import RowCheck, belongs, counts, json_text, number, numbers, one_of, same_in_both
from dcem.core.policy import Action

__all__ = ["DCEM_CHECKS"]

_RUN = "the run must exist (in the target or among the merged rows)"
_CASE = "the run and case must exist (in the target or among the merged rows)"
_LABEL = ("NOT EXISTS (SELECT 1 FROM {{cells}} c WHERE c.run_id = r.run_id AND c.scenario = r.scenario AND "
          "c.seed = r.seed AND r.{col} < len(c.labels))")


def _label_of_case(column: str) -> str:
    """SQL: the row's ``column`` is not a label index of its case's cell."""
    return (f"r.{column} IS NOT NULL AND NOT EXISTS (SELECT 1 FROM {{cases}} k JOIN {{cells}} c "
            "ON c.run_id = k.run_id AND c.scenario = k.scenario AND c.seed = k.seed "
            f"WHERE k.run_id = r.run_id AND k.case_id = r.case_id AND r.{column} < len(c.labels))")


_RUNS = [
    one_of("runs", "status", ("running", "finished", "interrupted")),
    RowCheck("runs", "finished_at", "(r.status = 'finished') = (r.finished_at IS NULL)",
             "must be set exactly when the run is finished"),
    RowCheck("runs", "run_id", "r.run_id = ''", "must not be empty"),
    RowCheck("runs", "kind", "r.kind = ''", "must not be empty"),
    json_text("runs", "spec_json"),
    json_text("runs", "config_json"),
    RowCheck("runs", "seeds", "len(r.seeds) = 0 OR len(list_distinct(r.seeds)) <> len(r.seeds)",
             "must list at least one seed, each once, none missing"),
    *same_in_both("runs", "kind", "spec_json", "config_json", "seeds"),
]

_CELLS = [
    belongs("cells", "runs", ("run_id",), _RUN),
    RowCheck("cells", "seed", "NOT EXISTS (SELECT 1 FROM {runs} p WHERE p.run_id = r.run_id AND "
             "list_contains(p.seeds, r.seed))", "must be one of its run's seeds"),
    RowCheck("cells", "labels", "len(r.labels) < 2 OR len(list_distinct(r.labels)) <> len(r.labels)",
             "must name two or more labels, each once, none missing"),
    numbers("cells", "confusion", 0.0, 1.0, depth=3),
    numbers("cells", "prior", 0.0, 1.0),
    numbers("cells", "loss", None, depth=2),
    numbers("cells", "high_risk", 0.0),
    RowCheck("cells", "high_risk", "len(list_filter(r.high_risk, lambda i: i >= len(r.labels))) > 0",
             "must hold label indices of the cell"),
    json_text("cells", "config_json"),
    json_text("cells", "info_json"),
]

_CASES = [
    belongs("cases", "cells", ("run_id", "scenario", "seed"), "the cell (run, scenario, seed) must exist "
            "(in the target or among the merged rows)"),
    RowCheck("cases", "truth", "r.truth < 0 OR " + _LABEL.format(col="truth"), "must be a label index of its cell"),
    numbers("cases", "features", 0.0),
]

_TRACES = [
    belongs("traces", "cases", ("run_id", "case_id"), _CASE),
    *counts("traces", "round"),
    numbers("traces", "reports", 0.0),
    numbers("traces", "posteriors", 0.0, 1.0, depth=2, nullable=True),
    *[numbers("traces", c, 0.0, 1.0, nullable=True) for c in ("weights", "pooled")],
    numbers("traces", "probabilities", 0.0, 1.0, depth=2, nullable=True),
    numbers("traces", "agent_risk", None, nullable=True),
    *counts("traces", "decision", "runner_up", nullable=True),
    *[number("traces", c, None, nullable=True) for c in ("margin", "energy", "e_disagreement", "e_risk",
                                                         "e_margin", "descent")],
]

_OUTCOMES = [
    belongs("outcomes", "cases", ("run_id", "case_id"), _CASE),
    one_of("outcomes", "action", tuple(a.name for a in Action)),
    RowCheck("outcomes", "decision", "r.decision < 0 OR " + _label_of_case("decision"),
             "must be a label index of the case's cell"),
    *counts("outcomes", "rounds"),
    RowCheck("outcomes", "truth", "NOT EXISTS (SELECT 1 FROM {cases} k WHERE k.run_id = r.run_id AND "
             "k.case_id = r.case_id AND k.truth = r.truth)", "must be the case's stored truth"),
    number("outcomes", "loss", None),
]

_RESULTS = [
    belongs("metrics", "runs", ("run_id",), _RUN),
    number("metrics", "value", None, nullable=True),
    belongs("ablation", "runs", ("run_id",), _RUN),
    number("ablation", "xi", None),
    *counts("ablation", "horizon"),
    number("ablation", "value", None, nullable=True),
]

_LLM = [
    belongs("case_texts", "cases", ("run_id", "case_id"), _CASE),
    belongs("agent_turns", "cases", ("run_id", "case_id"), _CASE),
    *counts("agent_turns", "round", "agent"),
    RowCheck("agent_turns", "label", "r.label < 0 OR " + _label_of_case("label"),
             "must be a label index of the case's cell or empty"),
    numbers("agent_turns", "probabilities", 0.0, 1.0, nullable=True),
    json_text("agent_turns", "examples_json", nullable=True),
]

_SAVED = [
    json_text("presets", "config_json"),
    numbers("presets", "loss", 0.0, depth=2, nullable=True),
    RowCheck("presets", "name", "r.name = ''", "must not be empty"),
    belongs("reviews", "outcomes", ("run_id", "case_id", "method"), "the run's outcome of this case and method "
            "must exist (in the target or among the merged rows)"),
    RowCheck("reviews", "final_label", "NOT EXISTS (SELECT 1 FROM {cases} k JOIN {cells} c ON c.run_id = k.run_id "
             "AND c.scenario = k.scenario AND c.seed = k.seed WHERE k.run_id = r.run_id AND k.case_id = r.case_id "
             "AND list_contains(c.labels, r.final_label))", "must be one of the case's labels"),
    RowCheck("reviews", "reviewer", "trim(r.reviewer) = ''", "must name the reviewer"),
]

# the run ledger's rows come with every grid (common.ledger: start, cells, finish and failure go through it)
DCEM_CHECKS: tuple[RowCheck, ...] = (*_RUNS, *_CELLS, *_CASES, *_TRACES, *_OUTCOMES, *_RESULTS, *_LLM, *_SAVED,
                                     *ledger_checks())
"""The rules of every D-CEM table, parents first (a run before its cells, a cell before its cases)."""
