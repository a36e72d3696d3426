"""The report of stored clinical runs as ``python -m dcem_clinical report --run RUN`` prints
it: a line per run (dataset, scenarios, agents, seeds), then Tables 6, 7 and 1 and the
accuracy / action-mix table as mean ± std over seeds.

:func:`clinical_report_text` reads one stored run and returns the text;
:func:`read_clinical_runs` checks and reads runs (StoreError, one line, for an unknown run
or a run of another kind); :func:`clinical_runs_text` and :func:`clinical_runs_dict` shape
runs read from the store or from a run export.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import pandas as pd

from dcem.analysis.charged_risk import DEFAULT_COST, check_escalation_cost
from dcem.store.database import Store, StoreError
from dcem.store.run_reads import cell_labels, run_kind, run_spec_text
from dcem_clinical.report.beside_chance import beside_chance_text
from dcem_clinical.report.tables import clinical_dict, clinical_text

__all__ = ["ClinicalRuns", "read_clinical_runs", "clinical_runs_text", "clinical_runs_dict", "clinical_report_text"]


@dataclass(frozen=True)
class ClinicalRuns:
    """Clinical runs reported together: (run id, stored metrics) in order, and each run's specification."""

    frames: tuple[tuple[str, pd.DataFrame], ...]
    specs: Mapping[str, Mapping[str, Any]]
    outcomes: Mapping[str, pd.DataFrame] = field(default_factory=dict)
    labels: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Each run's TEST outcomes and label names, for :mod:`dcem_clinical.report.beside_chance`
    (empty: those tables are left out)."""

    def metrics(self) -> pd.DataFrame:
        """Every run's metric rows, each with its run's ``dataset``."""
        return pd.concat([m.assign(dataset=self.specs[r].get("dataset", "?")) for r, m in self.frames],
                         ignore_index=True)


def read_clinical_runs(store: Store, run_ids: Sequence[str]) -> ClinicalRuns:
    """The stored runs ``run_ids``; StoreError for an unknown run or one of another kind
    (every run checked before any metric is read)."""
    specs: dict[str, Mapping[str, Any]] = {}
    for run_id in run_ids:
        store.check_run(run_id)
        kind = run_kind(store, run_id)
        if kind == "synthetic":
            raise StoreError(f"run {run_id} is a synthetic run: report it with python -m dcem report --run {run_id}")
        if kind != "clinical":
            raise StoreError(f"run {run_id} is a {kind} run, not a clinical one: python -m dcem_clinical report "
                             "reports clinical runs")
        specs[run_id] = json.loads(run_spec_text(store, run_id) or "{}")
    labels = {r: tuple(next(iter(cell_labels(store, r).values()), [])) for r in run_ids}
    return ClinicalRuns(tuple((run_id, store.metrics(run_id)) for run_id in run_ids), specs,
                        {r: store.outcomes(r) for r in run_ids if labels[r]}, {r: v for r, v in labels.items() if v})


def clinical_runs_text(runs: ClinicalRuns, *, escalation_cost: float = DEFAULT_COST) -> str:
    """The runs' lines and tables as text, final newline included (exactly what the command writes)."""
    cost = check_escalation_cost(escalation_cost)
    lines = []
    for run_id, _ in runs.frames:
        spec = runs.specs[run_id]
        lines.append(f"Run {run_id}: {spec.get('dataset')} {','.join(spec.get('scenarios', []))}, "
                     f"agents {' + '.join(spec.get('agents', []))}, seeds {spec.get('seeds')}")
    lines += ["mean ± std over seeds\n", clinical_text(runs.metrics(), escalation_cost=cost)]
    if runs.outcomes:
        lines.append(beside_chance_text(runs.outcomes, runs.labels))
    return "".join(line + "\n" for line in lines)


def clinical_runs_dict(runs: ClinicalRuns, *, escalation_cost: float = DEFAULT_COST) -> dict[str, Any]:
    """The runs' tables as plain data (``report --json``): run ids, cost, the tables."""
    cost = check_escalation_cost(escalation_cost)
    return {"runs": [r for r, _ in runs.frames], **clinical_dict(runs.metrics(), escalation_cost=cost)}


def clinical_report_text(store: Store, run_id: str, *, escalation_cost: float = DEFAULT_COST) -> str:
    """What ``python -m dcem_clinical report --run RUN_ID`` prints for the stored clinical run,
    final newline included; StoreError for an unknown run or a run of another kind,
    InputError for an escalation cost outside 0 to 1000."""
    cost = check_escalation_cost(escalation_cost)
    return clinical_runs_text(read_clinical_runs(store, [run_id]), escalation_cost=cost)
