"""Confusion matrices and the class prior without truth labels: Dawid-Skene EM.

D-CEM needs each agent's confusion matrix ``C[a, y, r] = P(report r | truth y)`` and a
prior.  With a labelled CAL split they are counted (:func:`dcem.calibration.fitting.
estimate_confusion`).  Without labels, Dawid and Skene (1979) estimate both from the
agents' reports alone by EM: the truth of each case is a hidden class, the agents
report independently given it.  ``crowd-kit`` runs the EM (:class:`crowdkit.aggregation.
DawidSkene`, a full matrix per agent, or :class:`~crowdkit.aggregation.OneCoinDawidSkene`,
one accuracy per agent with errors spread evenly, for small panels); the few labelled
cases a team has are fixed to their truth (semi-supervised: inside the EM for the full
model, in the final counts for one-coin, whose crowd-kit fit takes no labels).

From the EM's case posteriors ``P(y_n = y)`` the matrices are then smoothed exactly as
labelled counts are (diagonal-biased Laplace, alpha = 0.5, over expected counts
``sum_n P(y_n = y) 1[r_an = r]``), so the two sources differ only in where the truth
comes from, and every row is strictly positive as the mediator requires.

What is refused before the EM (:class:`InputError`):

* a panel too small to identify full matrices: with fewer than three agents the
  Dawid-Skene model is not identified (two agents' joint reports have fewer free cells
  than the model has parameters), so ``dawid-skene`` is refused there; ``one-coin`` needs
  two agents;
* two agents whose labelled cases do not settle which of them is right when they
  disagree (the reports alone cannot: :func:`dcem.calibration.label_free_checks.
  check_two_agents`; at least :data:`~dcem.calibration.label_free_checks.MIN_DECISIVE`
  labelled cases on which exactly one of them is right).

What is detected and reported, not silently used (:attr:`LabelFreeEstimate.problems`):

* an estimate that disagrees with the invariances the data allow
  (:mod:`dcem.calibration.label_free_checks`): a ranking of two agents that the labelled
  cases contradict, a pair's observed agreement rate the fit does not reproduce, and with
  three or more agents a ranking against the agents' agreement with the others;
* label switching: EM can converge to a solution whose classes are permuted.  The
  estimate's most likely classes are matched to the labelled cases (at least K of them;
  what the model says from their reports alone) or, without enough labels, to the panel's
  majority vote; a best matching other than the identity means the classes came out
  permuted;
* agents estimated worse than chance on average (the mean diagonal of their matrices
  below 1 / K), which is what a switched or degenerate solution looks like;
* too few cases (fewer than :data:`MIN_CASES`).

The problems are judged on the matrices smoothed with the standard alpha (0.5) whatever
``alpha`` the estimate is returned with, so a set usable at one smoothing is usable at
every one.

:meth:`LabelFreeEstimate.usable` is False when any problem was found; a calibration set
built on such an estimate is refused with the problems named.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from common.errors import InputError
from dcem.calibration import label_free_checks as checks
from dcem.calibration.fitting import ALPHA

__all__ = ["LABEL_FREE_METHODS", "MIN_CASES", "MAX_REPORT_ENTRIES", "MAX_ONE_COIN_CELLS", "LabelFreeEstimate",
           "estimate_without_labels"]

LABEL_FREE_METHODS = ("dawid-skene", "one-coin")
MIN_CASES = 10
MAX_REPORT_ENTRIES = 5_000_000
"""Reports x labels an estimate may take.  crowd-kit's EM holds and updates tables of that
size; at the calibration file's own caps it took up to 110 s and 1.4 GB here, and at this
limit about 6 to 15 s and 0.4 GB (BENCHMARKS.md, "Confusions without labels")."""
MAX_ONE_COIN_CELLS = 400_000
"""Agents x labels² for one-coin, whose crowd-kit fit slows with it (83 s at 1,000 agents
and 63 labels, 14 s at 10 agents and 200 labels)."""
_MIN_AGENTS = {"dawid-skene": 3, "one-coin": 2}


@dataclass(frozen=True)
class LabelFreeEstimate:
    """confusion : (A, K, K) smoothed, rows sum to 1; prior : (K,); posteriors : (N, K) the
    EM's class probabilities per case (labelled cases fixed to their truth); method ;
    n_cases, n_labelled ; problems : what makes the estimate unfit for use, in words."""

    confusion: np.ndarray
    prior: np.ndarray
    posteriors: np.ndarray
    method: str
    n_cases: int
    n_labelled: int
    problems: tuple[str, ...]

    @property
    def usable(self) -> bool:
        return not self.problems


def _check(reports: object, n_labels: int, truth: object | None, method: str) -> tuple[np.ndarray, np.ndarray]:
    if method not in LABEL_FREE_METHODS:
        raise InputError("method", f"must be one of {', '.join(LABEL_FREE_METHODS)}, got {method!r}")
    r = np.asarray(reports)
    if r.ndim != 2 or r.shape[0] < 1 or r.shape[1] < 1 or not np.issubdtype(r.dtype, np.integer):
        raise InputError("reports", f"expected integer reports of shape (cases, agents), got {r.dtype} {r.shape}")
    if n_labels < 2 or r.min() < 0 or r.max() >= n_labels:
        raise InputError("reports", f"reports must lie in 0..{n_labels - 1} (K = {n_labels} >= 2)")
    y = np.full(r.shape[0], -1, dtype=np.int64) if truth is None else np.asarray(truth)
    if y.shape != (r.shape[0],) or not np.issubdtype(y.dtype, np.integer) or y.min(initial=0) < -1 \
            or y.max(initial=-1) >= n_labels:
        raise InputError("truth", f"expected one label in 0..{n_labels - 1} or -1 (unknown) per case")
    return r.astype(np.int64), y.astype(np.int64)


def _check_size(n: int, a: int, k: int, method: str) -> None:
    """Refuse an estimate beyond :data:`MAX_REPORT_ENTRIES` (or, for one-coin,
    :data:`MAX_ONE_COIN_CELLS`) before the EM starts."""
    entries = n * a * k
    if entries > MAX_REPORT_ENTRIES:
        raise InputError("reports", f"a label-free estimate of {n * a:,} reports over {k} labels needs "
                         f"{entries:,} report x label entries; the limit is {MAX_REPORT_ENTRIES:,} (beyond it the "
                         "estimate takes minutes and gigabytes): use fewer cases or labels, or count labelled cases")
    if method == "one-coin" and a * k * k > MAX_ONE_COIN_CELLS:
        raise InputError("reports", f"one-coin over {a:,} agents and {k} labels needs {a * k * k:,} agent x label² "
                         f"entries; the limit is {MAX_ONE_COIN_CELLS:,} (beyond it the estimate takes minutes): use "
                         "dawid-skene, fewer agents or fewer labels")


def _em_posteriors(reports: np.ndarray, truth: np.ndarray, n_labels: int, method: str) -> np.ndarray:
    """crowd-kit's EM; the case posteriors as an (N, K) array in class order."""
    import pandas as pd
    from crowdkit.aggregation import DawidSkene, OneCoinDawidSkene

    n, a = reports.shape
    frame = pd.DataFrame({"task": np.repeat(np.arange(n), a), "worker": np.tile(np.arange(a), n),
                          "label": reports.ravel()})
    known = pd.Series(truth[truth >= 0], index=np.flatnonzero(truth >= 0))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if method == "dawid-skene":
            probas = DawidSkene(n_iter=200, tol=1e-6).fit_predict_proba(frame, known if len(known) else None)
        else:
            probas = OneCoinDawidSkene(n_iter=200, tol=1e-6).fit_predict_proba(frame)
    post = np.zeros((n, n_labels))
    for label in probas.columns:
        post[probas.index.to_numpy(), int(label)] = probas[label].to_numpy()
    post[truth >= 0] = np.eye(n_labels)[truth[truth >= 0]]  # labelled cases are their truth
    missing = post.sum(axis=1) <= 0
    post[missing] = 1.0 / n_labels
    return post / post.sum(axis=1, keepdims=True)


def _smoothed(reports: np.ndarray, post: np.ndarray, n_labels: int, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    n, a = reports.shape
    onehot = np.eye(n_labels)[reports]  # (N, A, K)
    counts = np.einsum("ny,nar->ayr", post, onehot)  # expected counts of (truth y, report r) per agent
    bias = alpha * (1.0 + np.eye(n_labels))
    confusion = (counts + bias) / (counts.sum(axis=2, keepdims=True) + alpha * (n_labels + 1))
    prior = (post.sum(axis=0) + alpha) / (n + alpha * n_labels)
    return confusion, prior


def _switched(reference: np.ndarray, estimate: np.ndarray, n_labels: int) -> bool:
    """Whether the best one-to-one matching of the estimate's classes to ``reference``
    (by agreement) is not the identity."""
    from scipy.optimize import linear_sum_assignment

    table = np.zeros((n_labels, n_labels))
    np.add.at(table, (estimate, reference), 1.0)
    rows, cols = linear_sum_assignment(-table)
    best = table[rows, cols].sum()
    return bool(best > np.trace(table) + 1e-9)


def _em_estimate_of_labelled(reports: np.ndarray, confusion: np.ndarray, prior: np.ndarray,
                             labelled: np.ndarray) -> np.ndarray:
    """What the estimated model (smoothed, so every entry is positive) says about the
    labelled cases from their reports alone (their posteriors are fixed to the truth, so
    they cannot be compared directly)."""
    log = np.log(prior)[None, :] + sum(np.log(confusion[a][:, reports[labelled, a]]).T
                                       for a in range(reports.shape[1]))
    return np.asarray(log.argmax(axis=1))


def _problems(reports: np.ndarray, truth: np.ndarray, post: np.ndarray, confusion: np.ndarray,
              prior: np.ndarray, names: Sequence[str] | None = None) -> list[str]:
    n, a = reports.shape
    k = post.shape[1]
    names = checks.agent_names(names, a)
    out = []
    if n < MIN_CASES:
        out.append(f"only {n} cases: at least {MIN_CASES} are needed to estimate matrices without labels")
    estimate = post.argmax(axis=1)
    unlabelled = truth < 0
    if (~unlabelled).sum() >= k:  # enough labels: they are the reference (the majority may be wrong)
        if _switched(truth[~unlabelled], _em_estimate_of_labelled(reports, confusion, prior, ~unlabelled), k):
            out.append("the estimated classes look permuted against the labelled cases (label switching)")
    else:
        majority = np.array([np.bincount(row, minlength=k).argmax() for row in reports])
        if _switched(majority, estimate, k):
            out.append("the estimated classes look permuted against the panel's majority vote (label switching)")
    diag = np.trace(confusion, axis1=1, axis2=2) / k
    worse = [i for i in range(a) if diag[i] < 1.0 / k]
    if worse:
        out.append(f"agent(s) {', '.join(repr(names[i]) for i in worse)} come out worse than chance "
                   f"(mean diagonal below 1/{k}): a switched or degenerate solution")
    accuracy = checks.estimated_accuracy(reports, post)
    out += checks.order_problems(reports, truth, accuracy, names)
    out += checks.agreement_problems(reports, post, k, names)
    out += checks.agreement_order_problems(reports, accuracy, names)
    return out


def estimate_without_labels(reports: object, n_labels: int, *, method: str = "dawid-skene",
                            truth: object | None = None, alpha: float = ALPHA,
                            agents: Sequence[str] | None = None) -> LabelFreeEstimate:
    """Confusions and prior from round-1 reports (N, A) of N cases, without labels or
    seeded with some (``truth``: a label per case, -1 where unknown); ``agents`` names the
    columns in messages (default ``agent 1`` ...); see the module docstring.  A panel too
    small for ``method``, or two agents whose labelled cases do not settle which one is
    right when they disagree, raises :class:`InputError`."""
    r, y = _check(reports, n_labels, truth, method)
    names = checks.agent_names(agents, r.shape[1])
    _check_size(r.shape[0], r.shape[1], n_labels, method)
    need = _MIN_AGENTS[method]
    if r.shape[1] < need:
        other = " use one-coin, one accuracy per agent" if method == "dawid-skene" else ""
        raise InputError("agents", f"{method} cannot identify the agents' matrices from {r.shape[1]} agent(s): "
                         f"it needs at least {need};{other}".rstrip(";"))
    checks.check_two_agents(r, y, names)
    post = _em_posteriors(r, y, n_labels, method)
    confusion, prior = _smoothed(r, post, n_labels, alpha)
    # judged at the standard smoothing, so whether an estimate is usable does not depend on
    # the alpha it is shown with
    judged = (confusion, prior) if alpha == ALPHA else _smoothed(r, post, n_labels, ALPHA)
    problems = tuple(_problems(r, y, post, *judged, names=names))
    for arr in (confusion, prior, post):
        arr.setflags(write=False)
    return LabelFreeEstimate(confusion, prior, post, method, int(r.shape[0]), int((y >= 0).sum()), problems)
