"""The ``clinical`` kind of run (:mod:`common.run_kinds`): D-CEM over a panel of clinical
agents on a dataset's cases (``python -m dcem_clinical run``), with its call log."""
from __future__ import annotations

from pathlib import Path

from common.run_kinds import RunKind, register
from dcem.analysis.run_kind import DCEM_TABLES, describe_grid, load_dcem_export
from dcem.store.database import Store
from dcem.store.merge_checks import DCEM_CHECKS
from runtime.merge_checks import call_log_checks

__all__ = ["CLINICAL"]


def _open(path: Path) -> Store:
    """The store with the D-CEM tables and the call log (a clinical run's calls go with it)."""
    from runtime.call_log import CallLog

    store = Store(path)
    CallLog(store)  # creates or upgrades llm_calls
    return store


def _report(path: Path, run_id: str) -> str:
    from dcem_clinical.report.run_report import clinical_report_text

    with Store(path, read_only=True) as store:
        return clinical_report_text(store, run_id)


CLINICAL = register(RunKind(
    "clinical", "D-CEM over a panel of clinical agents on a dataset's cases", "Overview",
    (*DCEM_TABLES, "llm_calls"), _open, lambda: (*DCEM_CHECKS, *call_log_checks(("runs", "sag_runs"))), _report,
    describe=describe_grid, imports={"dcem-run-export/1": load_dcem_export}))
