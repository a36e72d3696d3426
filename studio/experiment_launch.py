"""The Experiments page's launch: a run with a progress bar and a Stop button, recorded in
the session so an interrupted launch is reported on the next page run.

Streamlit interrupts a running script when the person presses Stop (or any other
control): the next element update raises inside the progress callback, between two
stored cells.  So the launch writes its progress to the session after each cell, before
touching the page; a launch that never reached its end is, on any later run, one that
was stopped (:func:`dcem.analysis.launch_form.launch_message`).  Its stored cells stay,
and launching the same settings resumes it.
"""
from __future__ import annotations

import streamlit as st

from dcem.analysis.launch_form import LaunchForm, LaunchProgress, cells_text, launch_message
from dcem.errors import DcemError
from dcem.store.database import Store
from dcem.synthetic import spec as synthetic_spec
from studio.widgets import set_current_run

__all__ = ["LAUNCH", "launch", "launch_spec", "show_last_launch", "show_cell_count"]

LAUNCH = "exp_launch"  # session key: the last launch's LaunchProgress


def _record(progress: LaunchProgress) -> None:
    st.session_state[LAUNCH] = progress
    if progress.done:
        set_current_run(progress.run_id)


def launch(db: Store, spec: synthetic_spec.SyntheticSpec) -> None:
    """Run ``spec`` into ``db`` with a progress bar and a Stop button, recording its
    progress in the session after every cell."""
    run_id = spec.run_id()
    _record(LaunchProgress(run_id, 0, len(spec.scenarios) * len(spec.seeds)))
    bar = st.progress(0.0, text="starting")
    st.button("Stop", key="exp_stop")

    start: list[int] = []  # cells stored before this launch: the first report's count

    def progress(done: int, total: int, label: str) -> None:
        start.append(done)
        _record(LaunchProgress(run_id, done, total, start[0]))
        bar.progress(done / total, text=f"{done} of {total} cells ({label})")  # Stop raises here

    summary = synthetic_spec.run_synthetic(db, spec, progress=progress)
    _record(st.session_state[LAUNCH].completed(computed=summary.computed, skipped=summary.skipped,
                                               total=summary.total))


def show_last_launch() -> None:
    """The last launch's outcome: finished (cells computed) or stopped after N of M cells."""
    progress = st.session_state.get(LAUNCH)
    if not isinstance(progress, LaunchProgress):
        return
    kind, text = launch_message(progress)
    (st.success if kind == "success" else st.warning)(text)


def launch_spec(form: LaunchForm, *, xi: float, ablation: bool, world: str,
                compliance: str) -> synthetic_spec.SyntheticSpec | None:
    """The run the form describes, or None while a field is invalid (its message shown
    under the field by the page; a setting the spec refuses is shown here)."""
    if not form.ok:
        return None
    try:
        return form.spec(xi=xi, ablation=ablation, world=world, compliance=compliance)
    except DcemError as exc:
        st.error(str(exc))
        return None


def show_cell_count(db: Store, form: LaunchForm, spec: synthetic_spec.SyntheticSpec | None, ablation: bool) -> None:
    """How many cells Run computes, counting cells of the same settings already stored."""
    stored = 0
    if spec is not None:
        stored = len(db.done_cells(spec.run_id()) & {(s, k) for s in spec.scenarios for k in spec.seeds})
    st.caption(cells_text(form, stored=stored, ablation=ablation))
