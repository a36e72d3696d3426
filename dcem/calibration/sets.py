"""Calibration sets: labelled (case, agent, report, truth) rows and where they come from.

A :class:`CalibrationSet` holds one row per (case, agent): the agent's reported label
and the case's true label.  From it come the count tables, the smoothed confusion
matrices (:func:`dcem.calibration.fitting.estimate_confusion`, diagonal-biased Laplace with
alpha = 0.5), per-class recall, the prior and a ready :class:`~dcem.core.panel.Panel`.

Sources:

* an uploaded CSV file, :func:`parse_calibration_csv`.  Format: UTF-8, header
  ``case_id,agent,reported_label,true_label`` (any order, case-insensitive, extra
  columns ignored with a warning; ``true_label`` optional or blank for cases without a
  label, which a label-free estimator then covers), one row per (case, agent), one true
  label per case.
  Without an explicit label list the labels are the sorted union of true and reported
  labels.  Full rules in :mod:`dcem.calibration.csv_import` and ``docs/calibration_csv.md``;
* a complete (case, agent) report matrix, :func:`from_matrix`;
* the synthetic world, a stored run and the example file:
  :mod:`dcem.analysis.calibration_sources` (they read the synthetic world and the store,
  which sit above this module).

Rows of different sources combine with :meth:`CalibrationSet.merge` (for example
reviewed cases added to a calibration file).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from dcem.calibration.csv_import import (CSV_COLUMNS, MAX_BYTES, MAX_ROWS, check_table_size, parse_csv_rows,
                                         validate_label_list)
from dcem.calibration.fitting import ALPHA, estimate_prior
from dcem.calibration.label_free_sets import AUTO, ESTIMATORS, choose_estimator, usable_estimate
from dcem.core.panel import Panel
from common.errors import InputError
from common.fields import Instance, Number, Satisfies, check


__all__ = ["CSV_COLUMNS", "CalibrationSet", "parse_calibration_csv", "rows_to_set", "from_matrix",
           "smoothed_confusion", "recall_from_counts"]



def _index_array(value: object, n_max: int, field: str, *, unknown: bool = False) -> np.ndarray:
    """Indices in 0..n_max-1 (or -1 when ``unknown`` is allowed), one per row."""
    arr = np.asarray(value)
    if arr.ndim != 1:
        raise InputError(field, f"expected one entry per row (1-D), got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise InputError(field, f"expected integer indices, got {arr.dtype}")
    low = -1 if unknown else 0
    if arr.size and (arr.min() < low or arr.max() >= n_max):
        raise InputError(field, f"indices must lie in 0..{n_max - 1}" + (" (or -1: no label)" if unknown else ""))
    out = arr.astype(np.int64, copy=True)
    out.setflags(write=False)
    return out


def _agent_names(agents: Sequence[str]) -> tuple[str, ...]:
    out = tuple(agents) if not isinstance(agents, str) else (agents,)
    if not out:
        raise InputError("agents", "at least one agent is required")
    bad = [a for a in out if not isinstance(a, str) or not a.strip()]
    if bad:
        raise InputError("agents", f"agent names must be non-empty strings, got {bad[0]!r}")
    if len(set(out)) != len(out):
        dup = next(a for i, a in enumerate(out) if a in out[:i])
        raise InputError("agents", f"agent {dup!r} is listed twice")
    return out


@dataclass(frozen=True, eq=False)
class CalibrationSet:
    """Labelled calibration rows, one per (case, agent).

    Attributes
    ----------
    labels : tuple of str, length K (at least 2)
    agents : tuple of str, length A (at least 1)
    case_ids : tuple of str, one per row
    truth : int64 (n,), true label index of each row's case (the same on every row of a case)
    agent : int64 (n,), agent index of each row
    report : int64 (n,), reported label index of each row
    source : str, where the rows come from (shown to users)
    estimator : where the confusions and prior come from: ``counts`` (every case labelled)
        or ``dawid-skene`` / ``one-coin`` (EM over every case, ``truth`` -1 where a case has
        no label; :mod:`dcem.calibration.label_free_sets`)

    Validation: at least one row, every index in range, every agent with at least one
    row, no (case, agent) pair twice, one true label per case, and the size caps of
    :func:`dcem.calibration.csv_import.check_table_size` (at most 200 labels, 1,000 agents
    and 4,000,000 agents x labels² table entries), so the (A, K, K) tables stay small.
    """

    labels: tuple[str, ...]
    agents: tuple[str, ...]
    case_ids: tuple[str, ...]
    truth: np.ndarray
    agent: np.ndarray
    report: np.ndarray
    source: str = ""
    estimator: str = "counts"

    def __post_init__(self) -> None:
        labels = validate_label_list(self.labels)
        agents = _agent_names(self.agents)
        check_table_size(len(agents), len(labels))
        case_ids = tuple(self.case_ids) if not isinstance(self.case_ids, str) else (self.case_ids,)
        if not case_ids:
            raise InputError("case_ids", "a calibration set needs at least one row")
        bad = [c for c in case_ids if not isinstance(c, str) or not c.strip()]
        if bad:
            raise InputError("case_ids", f"case ids must be non-empty strings, got {bad[0]!r}")
        k, n = len(labels), len(case_ids)
        if self.estimator not in ESTIMATORS:
            raise InputError("estimator", f"must be one of {', '.join(ESTIMATORS)}, got {self.estimator!r}")
        truth = _index_array(self.truth, k, "truth", unknown=True)
        if self.estimator == "counts" and truth.size and truth.min() < 0:
            raise InputError("truth", f"{int((truth < 0).sum()):,} rows have no true label; counting needs every "
                             "case labelled: choose the estimator dawid-skene or one-coin")
        agent = _index_array(self.agent, len(agents), "agent")
        report = _index_array(self.report, k, "report")
        for field, arr in (("truth", truth), ("agent", agent), ("report", report)):
            if arr.shape[0] != n:
                raise InputError(field, f"has {arr.shape[0]} entries for {n} rows")
        unused = np.flatnonzero(np.bincount(agent, minlength=len(agents)) == 0)
        if unused.size:
            raise InputError("agents", f"agent {agents[int(unused[0])]!r} has no rows")
        frame = pd.DataFrame({"case": case_ids, "agent": agent, "truth": truth})
        dup = frame.duplicated(["case", "agent"])
        if dup.any():
            row = frame[dup].iloc[0]
            raise InputError("case_ids", f"case {row['case']!r} has two rows for agent "
                             f"{agents[int(row['agent'])]!r}; give one row per case and agent")
        n_truth = frame.groupby("case", sort=False)["truth"].nunique()
        if (n_truth > 1).any():
            raise InputError("truth", f"case {n_truth[n_truth > 1].index[0]!r} has rows with "
                             "different true labels; a case has one true label")
        object.__setattr__(self, "labels", labels)
        object.__setattr__(self, "agents", agents)
        object.__setattr__(self, "case_ids", case_ids)
        object.__setattr__(self, "truth", truth)
        object.__setattr__(self, "agent", agent)
        object.__setattr__(self, "report", report)
        object.__setattr__(self, "source", str(self.source))

    # ------------------------------------------------------------ sizes
    @property
    def n_labels(self) -> int:
        return len(self.labels)

    @property
    def n_agents(self) -> int:
        return len(self.agents)

    @property
    def n_rows(self) -> int:
        return len(self.case_ids)

    @property
    def n_cases(self) -> int:
        """Number of distinct cases."""
        return len(set(self.case_ids))

    def _case_truth(self) -> np.ndarray:
        """True label index of each distinct case (first-appearance order), int64 (n_cases,)."""
        first = pd.Index(self.case_ids).duplicated(keep="first")
        return self.truth[~first]

    # ------------------------------------------------------------ tables
    def counts(self) -> np.ndarray:
        """int64 (A, K, K): ``counts[a, i, j]`` = labelled rows where agent a reported j for truth i."""
        k = self.n_labels
        known = self.truth >= 0
        flat = (self.agent[known] * k + self.truth[known]) * k + self.report[known]
        out = np.bincount(flat, minlength=self.n_agents * k * k).astype(np.int64, copy=False)
        return out.reshape(self.n_agents, k, k)

    def confusion(self, alpha: float = ALPHA) -> np.ndarray:
        """Smoothed confusion matrices (A, K, K) from each agent's own rows.

        Same formula as :func:`dcem.calibration.fitting.estimate_confusion`:
        ``C[a, i, j] = (n_aij + alpha (1 + [i = j])) / (n_ai + alpha (K + 1))``.
        When every agent answered every case this equals ``estimate_confusion`` on the
        (cases, agents) report matrix.  Computed by :func:`smoothed_confusion` from
        :meth:`counts` in one pass, not per agent.
        """
        if self.estimator != "counts":
            return usable_estimate(self, alpha).confusion
        return smoothed_confusion(self.counts(), alpha)

    def recall(self) -> np.ndarray:
        """Per-class recall (A, K): share of agent a's rows of truth i that it reported as i.

        NaN for a class on which the agent has no rows (the recall is undefined there).
        """
        return recall_from_counts(self.counts())

    def accuracy(self) -> np.ndarray:
        """Share of correct rows per agent, float (A,)."""
        counts = self.counts()
        totals = counts.sum(axis=(1, 2))
        out = np.full(totals.shape, np.nan)
        np.divide(np.trace(counts, axis1=1, axis2=2), totals, out=out, where=totals > 0)
        return out

    def class_counts(self) -> np.ndarray:
        """int64 (K,): number of distinct cases of each true class (each case counted once)."""
        truth = self._case_truth()
        return np.bincount(truth[truth >= 0], minlength=self.n_labels).astype(np.int64)

    def prior(self, mode: str = "uniform", alpha: float = ALPHA) -> np.ndarray:
        """Prior (K,) by :func:`dcem.calibration.fitting.estimate_prior` over the distinct cases:
        ``"uniform"`` or ``"empirical"`` = ``(n_k + alpha) / (N + alpha K)``; for a label-free
        estimator ``"empirical"`` is the EM's class prior."""
        if self.estimator != "counts" and mode == "empirical":
            return usable_estimate(self, alpha).prior
        truth = self._case_truth()
        return estimate_prior(truth[truth >= 0], self.n_labels, mode, alpha=alpha)

    def to_panel(self, loss: object, *, alpha: float = ALPHA, prior_mode: str = "uniform") -> Panel:
        """A :class:`Panel` with this set's labels, ``confusion(alpha)`` and ``prior(prior_mode)``."""
        return Panel(self.labels, self.confusion(alpha), self.prior(prior_mode, alpha), loss)

    def to_frame(self) -> pd.DataFrame:
        """The rows in the CSV format: columns ``case_id, agent, reported_label, true_label``."""
        labels = np.array(self.labels, dtype=object)
        return pd.DataFrame({
            "case_id": list(self.case_ids),
            "agent": np.array(self.agents, dtype=object)[self.agent],
            "reported_label": labels[self.report],
            "true_label": np.where(self.truth >= 0, labels[np.maximum(self.truth, 0)], ""),
        }, columns=list(CSV_COLUMNS))

    def to_csv(self) -> str:
        """The CSV text of :meth:`to_frame` (``\\n`` line ends), readable by the parser."""
        return str(self.to_frame().to_csv(index=False, lineterminator="\n"))

    def merge(self, other: "CalibrationSet", *, source: str | None = None) -> "CalibrationSet":
        """This set's rows followed by ``other``'s (e.g. reviewed cases).

        Both sets must have the same labels in the same order.  Agents are matched by
        name; agents new in ``other`` are appended.  A (case, agent) pair present in
        both, or a case with different true labels, raises :class:`InputError`.
        """
        check("other", other, Instance(CalibrationSet, msg="expected a CalibrationSet, got {type}"), error=InputError)
        if other.labels != self.labels:
            raise InputError("labels", f"cannot merge sets with different labels: "
                             f"{', '.join(self.labels)} vs {', '.join(other.labels)}")
        agents = self.agents + tuple(a for a in other.agents if a not in self.agents)
        position = {a: i for i, a in enumerate(agents)}
        remap = np.array([position[a] for a in other.agents], dtype=np.int64)
        return CalibrationSet(
            self.labels, agents, self.case_ids + other.case_ids,
            np.concatenate([self.truth, other.truth]),
            np.concatenate([self.agent, remap[other.agent]]),
            np.concatenate([self.report, other.report]),
            source if source is not None else f"{self.source} + {other.source}", estimator=self.estimator)


def smoothed_confusion(counts: np.ndarray, alpha: float = ALPHA) -> np.ndarray:
    """Smoothed confusion matrices (A, K, K) from count tables (A, K, K) (the formula of
    :meth:`CalibrationSet.confusion`); one float table the size of ``counts``."""
    k = counts.shape[-1]
    check("alpha", alpha, Number(0, closed="neither", numpy=True), Satisfies(lambda a: np.isfinite(a * (k + 1.0))),
          msg="smoothing must be a finite number > 0, got {value!r}", error=InputError)
    out = counts.astype(float)
    denominator = out.sum(axis=2, keepdims=True) + alpha * (k + 1)
    out += alpha
    diagonal = np.arange(k)
    out[:, diagonal, diagonal] += alpha
    out /= denominator
    return out


def recall_from_counts(counts: np.ndarray) -> np.ndarray:
    """Per-class recall (A, K) from count tables (A, K, K); NaN where a class has no rows."""
    totals = counts.sum(axis=2)
    diag = np.diagonal(counts, axis1=1, axis2=2).astype(float)
    out = np.full(totals.shape, np.nan)
    np.divide(diag, totals, out=out, where=totals > 0)
    return out


def parse_calibration_csv(data: bytes | str, *, labels: Sequence[str] | None = None,
                          max_bytes: int = MAX_BYTES, max_rows: int = MAX_ROWS,
                          source: str = "uploaded CSV", estimator: str = AUTO) -> tuple[CalibrationSet, list[str]]:
    """Read a calibration CSV (format: :mod:`dcem.calibration.csv_import`).

    Returns the set and a list of warnings; raises :class:`InputError` with a
    user-readable message (line number, column, label or limit) for invalid input.
    Cases without a true label need a label-free ``estimator`` (:data:`AUTO` picks one,
    :func:`~dcem.calibration.label_free_sets.choose_estimator`); the estimate is made
    once here, so a file whose estimate has problems is refused with them named.
    """
    parsed = parse_csv_rows(data, labels=labels, max_bytes=max_bytes, max_rows=max_rows)
    unlabelled = parsed.truth < 0
    chosen = choose_estimator(estimator, len(parsed.agents), bool(unlabelled.any()))
    cset = CalibrationSet(parsed.labels, parsed.agents, parsed.case_ids, parsed.truth,
                          parsed.agent, parsed.report, source, estimator=chosen)
    warnings = list(parsed.warnings)
    if chosen != "counts":
        usable_estimate(cset, ALPHA)
        n_without = len(set(np.asarray(parsed.case_ids, dtype=object)[unlabelled].tolist()))
        warnings.append(f"{n_without:,} of {cset.n_cases:,} cases have no true label: the confusions and the "
                        f"prior are estimated from the agents' reports ({chosen}), not counted")
    return cset, warnings


def rows_to_set(rows: pd.DataFrame, labels: Sequence[str], source: str) -> CalibrationSet:
    """A set from a frame with the CSV columns, over a fixed label list.

    Unlike :func:`parse_calibration_csv` with explicit labels, classes without rows are
    allowed, so a few reviewed cases can be merged into a larger set over the same labels.
    """
    missing = [c for c in CSV_COLUMNS if c not in rows.columns]
    if missing:
        raise InputError("rows", f"missing columns: {', '.join(missing)}")
    labs = validate_label_list(labels)
    index = {lab: i for i, lab in enumerate(labs)}
    for column in ("reported_label", "true_label"):
        unknown = sorted(set(rows[column]) - set(index))
        if unknown:
            raise InputError(column, f"label {unknown[0]!r} is not one of {', '.join(labs)}")
    agents = tuple(sorted(set(rows["agent"])))
    agent_index = {a: i for i, a in enumerate(agents)}
    return CalibrationSet(labs, agents, tuple(str(c) for c in rows["case_id"]),
                          np.array([index[v] for v in rows["true_label"]], dtype=np.int64),
                          np.array([agent_index[v] for v in rows["agent"]], dtype=np.int64),
                          np.array([index[v] for v in rows["reported_label"]], dtype=np.int64), source)


def _agent_labels(n_agents: int) -> tuple[str, ...]:
    return tuple(f"agent {a + 1}" for a in range(n_agents))


def from_matrix(case_ids: Sequence[str], truth: np.ndarray, reports: np.ndarray,
                labels: tuple[str, ...], source: str, estimator: str = "counts") -> CalibrationSet:
    """Rows case-major from a complete (N, A) report matrix (``truth`` -1: no label)."""
    n, n_agents = reports.shape
    return CalibrationSet(labels, _agent_labels(n_agents),
                          tuple(c for c in case_ids for _ in range(n_agents)),
                          np.repeat(np.asarray(truth, dtype=np.int64), n_agents),
                          np.tile(np.arange(n_agents, dtype=np.int64), n),
                          np.asarray(reports, dtype=np.int64).reshape(-1), source, estimator=estimator)
