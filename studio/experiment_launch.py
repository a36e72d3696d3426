"""The Experiments page's launch: a run with a progress bar and a Stop button, recorded in
the session so an interrupted launch is reported on the next page run.

Streamlit interrupts a running script when the person presses Stop (or any other
control): the next element update raises inside the progress callback, between two
stored cells.  So the launch writes its progress to the session after each cell, before
touching the page; a launch that never reached its end is, on any later run, one that
was stopped (:func:`studio.views.launch_form.launch_message`).  Its stored cells stay,
and launching the same settings resumes it: the run id is a hash of every setting of the
form, so changed settings are a new run, and a stored run of that id with other settings
is refused with the field that differs, before anything is written.
"""
from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from studio.views.launch_form import LaunchForm, LaunchProgress, cells_text, launch_message
from common.errors import ProjectError
from common.resume import ResumeRefused
from dcem.calibration.risk_control import RiskTarget
from dcem.store.database import Store
from dcem.synthetic import spec as synthetic_spec
from dcem_clinical.spec import ClinicalSpec
from runtime.backends import BackendError
from studio.executor_choice import executor_for
from studio.risk_inputs import RiskKeys, risk_target_inputs
from studio.views import session_keys as keys
from studio.widgets import set_current_run
from studio.views.session_keys import EXP_LAUNCH as LAUNCH, EXP_ACTIVE as ACTIVE, EXP_PENDING as PENDING

__all__ = ["LAUNCH", "PENDING", "launch", "clinical_progress", "launch_spec", "show_last_launch", "show_cell_count", "queue_launch",
           "run_pending", "settle_launch"]

# Streamlit's own header Stop ends the script without a rerun, which would leave the page
# half drawn and say nothing; during a launch the page's Stop button is the one way to stop
_ONE_STOP = "<style>[data-testid='stStatusWidget'] [data-testid='stBaseButton-header'] {display: none;}</style>"


class _Running:
    """A launch in progress: ``stop`` asks it to stop before its next cell; ``left`` is set
    once its thread has left the launch (finished, stopped or failed)."""

    def __init__(self, progress: LaunchProgress) -> None:
        self.stop, self.left = threading.Event(), threading.Event()
        self.progress = progress  # the last record, read by the next page run (not via the session's copy)


def settle_launch(timeout: float = 900.0) -> None:
    """Call first on every page run.  A control pressed during a launch starts a new page
    run while the old one is still computing its cell (Streamlit stops the old run only at
    its next screen update); this waits for it to store that cell and leave, so the page
    then counts the cells truly stored."""
    running = st.session_state.get(ACTIVE)
    if isinstance(running, _Running) and not running.left.is_set():
        running.stop.set()
        with st.spinner("Stopping the launch after the cell being computed ..."):
            running.left.wait(timeout)
    if isinstance(running, _Running):
        _record(running.progress)  # the old run's last record, which its own session writes may not carry


def _record(progress: LaunchProgress) -> None:
    st.session_state[LAUNCH] = progress
    if progress.done:
        set_current_run(progress.run_id)


def queue_launch(spec: synthetic_spec.SyntheticSpec | ClinicalSpec, executor: str = "process") -> None:
    """Run was pressed: the launch starts once the whole page is drawn (:func:`run_pending`);
    ``executor``: where its cells run (:mod:`studio.executor_choice`)."""
    st.session_state[PENDING] = (spec, executor)


def run_pending(db: Store, slot: DeltaGenerator) -> None:
    """The launch Run asked for, in ``slot`` (the rest of the page stays on screen while it
    runs); when it ends, the page is drawn again on the new run with the outcome."""
    pending = st.session_state.pop(PENDING, None)
    if not isinstance(pending, tuple) or not isinstance(pending[0], (synthetic_spec.SyntheticSpec, ClinicalSpec)):
        return
    with slot:
        launch(db, pending[0], executor=pending[1])
    st.rerun()


def _cells(spec: synthetic_spec.SyntheticSpec | ClinicalSpec) -> int:
    return len(spec.scenarios) * len(spec.seeds)


def _run(db: Store, spec: synthetic_spec.SyntheticSpec | ClinicalSpec, progress: Any, cancel: Any, where: Any) -> Any:
    """The run itself: synthetic cells report cells; a clinical run reports agent turns,
    which :func:`clinical_progress` turns into cells for the record."""
    if isinstance(spec, synthetic_spec.SyntheticSpec):
        return synthetic_spec.run_synthetic(db, spec, progress=progress, cancel=cancel, executor=where)
    from dcem_clinical.run import run_clinical

    return run_clinical(db, spec, progress=clinical_progress(spec, progress), cancel=cancel, executor=where)


def clinical_progress(spec: ClinicalSpec, progress: Any) -> Any:
    """A clinical run's progress (agent turns done, turns in all) as the launch's (cells
    done, cells in all, label): a cell counts once its turns are all done."""
    from dcem_clinical.run import turns_in_cell

    per_cell = turns_in_cell(spec)

    def turns(done: int, total: int, label: str) -> None:
        cells = max(1, round(total / per_cell))
        progress(min(done // per_cell, cells), cells, f"{done:,} of {total:,} agent turns")

    return turns


def _check_clinical(spec: ClinicalSpec) -> None:
    """What the command line checks before a clinical run starts: the members' models and
    adapters, and (a case file) every case against each LLM member's context."""
    from clinical.datasets import load_dataset
    from dcem_clinical.case_lengths import check_case_lengths
    from dcem_clinical.run import check_members

    check_members(spec)
    if spec.case_file is not None:
        check_case_lengths(load_dataset(spec.dataset), spec.agents, spec.scenarios, spec.n_ctx)


def launch(db: Store, spec: synthetic_spec.SyntheticSpec | ClinicalSpec, *, executor: str = "process") -> None:
    """Run ``spec`` into ``db`` with a progress bar and a Stop button, recording its
    progress in the session after every cell."""
    run_id = spec.run_id()
    running = st.session_state[ACTIVE] = _Running(LaunchProgress(run_id, 0, _cells(spec)))
    _record(running.progress)
    st.markdown(_ONE_STOP, unsafe_allow_html=True)
    bar = st.progress(0.0, text="starting")
    st.button("Stop", key="exp_stop", help="Stops after the cell being computed; every finished cell stays stored.")

    start: list[int] = []  # cells stored before this launch: the first report's count

    def progress(done: int, total: int, label: str) -> None:
        start.append(done)
        running.progress = LaunchProgress(run_id, done, total, min(start[0], done))
        _record(running.progress)
        bar.progress(min(done / total, 1.0), text=f"{done} of {total} cells ({label})")  # Stop raises here

    try:
        if isinstance(spec, ClinicalSpec):
            _check_clinical(spec)
        with executor_for(executor) as where:
            summary = _run(db, spec, progress, running.stop.is_set, where)
    except ResumeRefused as exc:  # the store holds this run id with other settings: nothing was written
        running.progress = replace(running.progress, refused=str(exc))
        _record(running.progress)
        return
    except (ProjectError, BackendError) as exc:  # a member that will not load, a case too long ...
        running.progress = replace(running.progress, failed=str(exc))
        _record(running.progress)
        return
    finally:
        running.left.set()
    if summary.complete:  # else stopped between cells: the last record counts the stored cells
        running.progress = running.progress.completed(computed=summary.computed, skipped=summary.skipped,
                                                      total=summary.total)
        _record(running.progress)


_FITS = {"eq1": "Fitted by eq. (1) (average cost)", "ltt": "Learn-then-Test (a guarantee)"}


def threshold_choice() -> tuple[bool, RiskTarget | None]:
    """How the run's thresholds are chosen on each cell's tuning cases: ``(ok, target)``,
    target None for eq. (1); ok False while the Learn-then-Test inputs are refused."""
    fit = st.radio("Thresholds", list(_FITS), format_func=_FITS.get, horizontal=True, key=keys.EXP_FIT,
                   help="eq. (1) minimises the costed objective on the tuning cases. Learn-then-Test decides "
                        "only below the energy level that keeps the chosen rate at most alpha with probability "
                        "1 - delta (see the Glossary); where no level passes, the cell escalates every case.")
    if fit == "eq1":
        return True, None
    target = risk_target_inputs(RiskKeys(keys.EXP_RISK, keys.EXP_RISK_ALPHA, keys.EXP_RISK_DELTA,
                                         keys.EXP_RISK_FWER), alpha=0.05)
    return target is not None, target


def show_last_launch() -> None:
    """The last launch's outcome: finished (cells computed) or stopped after N of M cells."""
    progress = st.session_state.get(LAUNCH)
    if not isinstance(progress, LaunchProgress):
        return
    kind, text = launch_message(progress)
    {"success": st.success, "warning": st.warning}.get(kind, st.error)(text)


def launch_spec(form: LaunchForm, *, xi: float, ablation: bool, world: str, compliance: str,
                risk_target: RiskTarget | None = None) -> synthetic_spec.SyntheticSpec | None:
    """The run the form describes, or None while a field is invalid (its message shown
    under the field by the page; a setting the spec refuses is shown here)."""
    if not form.ok:
        return None
    try:
        return form.spec(xi=xi, ablation=ablation, world=world, compliance=compliance, risk_target=risk_target)
    except ProjectError as exc:
        st.error(str(exc))
        return None


def show_cell_count(db: Store, form: LaunchForm, spec: synthetic_spec.SyntheticSpec | None, ablation: bool) -> None:
    """How many cells Run computes, counting cells of the same settings already stored."""
    stored = 0
    if spec is not None:
        stored = len(db.done_cells(spec.run_id()) & {(s, k) for s in spec.scenarios for k in spec.seeds})
    st.caption(cells_text(form, stored=stored, ablation=ablation))
