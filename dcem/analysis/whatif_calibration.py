"""Re-score a stored run with the confusion matrices (and prior) of a calibration set.

The what-if page can swap the calibration a run was scored with for a loaded
:class:`~dcem.calibration.sets.CalibrationSet`: every cell's panel gets the set's smoothed
confusion matrices, estimated exactly as the run's own cells were (the diagonal-biased
Laplace smoothing of :func:`dcem.calibration.fitting.estimate_confusion` with
``alpha = ALPHA = 0.5``; the cells do not record another alpha, synthetic and clinical
cells both use this one), and a cell whose configuration has ``prior="empirical"`` gets
the set's empirical prior (:func:`dcem.calibration.fitting.estimate_prior`, same alpha);
a ``"uniform"`` cell keeps its uniform prior.  Each cell keeps its loss, its fitted
thresholds and its recorded reports.  A set built from the run's own calibration data
(:func:`dcem.analysis.calibration_sources.synthetic_calibration_set` with the cell's scenario, seed
and ``n_train``) therefore reproduces that cell exactly.

A set fits a run when it has the run's labels (in the same order, or the same names in
another order: matched by name) and as many agents as every cell of the run; the set's
agents are matched to the run's agents by position.  :func:`calibration_match` says why
a set does not fit (the labels that differ, the agent counts) and :func:`with_calibration`
refuses such a set with that reason.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from dcem.analysis.run_replay import ReplayCell, RunReplay
from dcem.calibration.fitting import ALPHA
from dcem.calibration.sets import CalibrationSet
from dcem.core.panel import Panel
from common.errors import InputError

__all__ = ["CalibrationMatch", "MAX_LISTED", "calibration_match", "set_panel_arrays", "with_calibration",
           "own_replay"]

MAX_LISTED = 20
"""Labels listed by name in a refusal before the rest are counted."""


@dataclass(frozen=True)
class CalibrationMatch:
    """Whether a calibration set fits a run.

    order : for each of the run's labels, the index of the same label in the set (None
        when the set does not fit); reason : why it does not fit ('' when it does);
    notes : what the matching did (labels matched by name, agents matched by position).
    """

    order: tuple[int, ...] | None
    reason: str = ""
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.order is not None


def _listed(names: Sequence[str]) -> str:
    shown = ", ".join(names[:MAX_LISTED])
    return shown + (f" and {len(names) - MAX_LISTED} more" if len(names) > MAX_LISTED else "")


def _run_shape(replay: RunReplay) -> tuple[tuple[str, ...] | None, int | None, str]:
    """The run's labels and agents per cell, or a reason when its cells differ."""
    labels = {c.panel.labels for c in replay.cells}
    agents = {c.panel.n_agents for c in replay.cells}
    if len(labels) > 1:
        return None, None, "the run's cells have different label sets, so one set cannot replace them all"
    if len(agents) > 1:
        return None, None, (f"the run's cells have different numbers of agents ({', '.join(map(str, sorted(agents)))}),"
                            " so one set cannot replace them all")
    return labels.pop(), agents.pop(), ""


def _label_reason(run_labels: tuple[str, ...], set_labels: tuple[str, ...]) -> str:
    only_set = [lab for lab in set_labels if lab not in run_labels]
    only_run = [lab for lab in run_labels if lab not in set_labels]
    extra = ([f"only in the set: {_listed(only_set)}"] if only_set else []) + \
        ([f"only in the run: {_listed(only_run)}"] if only_run else [])
    text = f"the labels differ: the set has {_listed(set_labels)}; the run has {_listed(run_labels)}"
    return text + (f" ({'; '.join(extra)})" if extra else "")


def calibration_match(replay: RunReplay, calib: object) -> CalibrationMatch:
    """Whether ``calib`` fits ``replay``: the same labels (any order; matched by name) and
    as many agents as each cell; else the reason, naming the labels or the agent counts."""
    if not isinstance(calib, CalibrationSet):
        return CalibrationMatch(None, f"expected a calibration set, got {type(calib).__name__}")
    run_labels, n_agents, reason = _run_shape(replay)
    if run_labels is None or n_agents is None:
        return CalibrationMatch(None, reason)
    reasons = []
    if set(calib.labels) != set(run_labels):
        reasons.append(_label_reason(run_labels, calib.labels))
    if calib.n_agents != n_agents:
        reasons.append(f"the set has {calib.n_agents} agent{'s' * (calib.n_agents != 1)} "
                       f"({_listed(calib.agents)}); the run has {n_agents} agent{'s' * (n_agents != 1)} per cell")
    if reasons:
        return CalibrationMatch(None, "; ".join(reasons) + ".")
    notes = []
    if calib.labels != run_labels:
        notes.append(f"The set lists the labels in another order ({_listed(calib.labels)}); they are matched to "
                     f"the run's ({_listed(run_labels)}) by name.")
    pairs = ", ".join(f"{name} as agent {a + 1}" for a, name in enumerate(calib.agents[:MAX_LISTED]))
    notes.append(f"The set's agents are matched to the run's by position: {pairs}.")
    return CalibrationMatch(tuple(calib.labels.index(lab) for lab in run_labels), "", tuple(notes))


def set_panel_arrays(calib: CalibrationSet, order: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """The set's smoothed confusion matrices (A, K, K) and empirical prior (K,), both with
    ``alpha = ALPHA`` (the run's estimator) and put into the run's label order ``order``."""
    index = np.asarray(order, dtype=np.intp)
    confusion = calib.confusion(ALPHA)[:, index][:, :, index]
    return confusion, calib.prior("empirical", ALPHA)[index]


def _calibrated_cell(cell: ReplayCell, confusion: np.ndarray, empirical: np.ndarray) -> ReplayCell:
    prior = empirical if cell.config.prior == "empirical" else cell.panel.prior
    panel = Panel(cell.panel.labels, confusion, prior, cell.panel.loss)
    return dataclasses.replace(cell, panel=panel)


def own_replay(replay: RunReplay) -> RunReplay:
    """The run's own replay: ``replay`` itself, or the one a calibrated replay came from."""
    return replay if replay.base is None else replay.base


def with_calibration(replay: RunReplay, calib: CalibrationSet) -> RunReplay:
    """``replay`` with every cell's panel estimated from ``calib`` (confusions; the prior of
    the cells with ``prior="empirical"``); configurations, losses and reports unchanged.

    The result's ``calibration`` is the set's source and its ``base`` the run's own replay
    (so results can be compared with the run's).  A set that does not fit
    (:func:`calibration_match`) raises :class:`InputError` with the reason.
    """
    own = own_replay(replay)
    match = calibration_match(own, calib)
    if match.order is None:
        raise InputError("calibration set", f"the set cannot re-score run {own.run_id!r}: {match.reason}")
    assert isinstance(calib, CalibrationSet)
    confusion, empirical = set_panel_arrays(calib, match.order)
    cells = tuple(_calibrated_cell(cell, confusion, empirical) for cell in own.cells)
    return RunReplay(own.run_id, own.method, cells, calibration=calib.source or "the loaded set", base=own)
