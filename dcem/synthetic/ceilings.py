"""Accuracy and risk ceilings of the synthetic world: what any mediator could reach.

A mediator that sees only some information about a case (for example the two agents'
reports of one round) cannot do better than the Bayes decision given that information.
In a finite sample the Bayes decision is the decision table "for every value of the
information, the most frequent truth" (accuracy) or "the decision with the least total
loss" (risk).  This module measures that table on freshly generated cases for three
levels of information about the two unsteered agents of a scenario:

``one_round``
    One round of both agents' sampled reports ``(y1, y2)``: 9 groups.  This is what an
    unsteered mediator that decides from one round's report pair can reach; it depends
    on the agents' ``sharpness``.
``map_pair``
    The MAP labels of both agents' report distributions (argmax of each probability
    vector, ties to the lowest label index): what infinitely many rounds of unsteered
    sampling reveal about each agent's mode.  Independent of ``sharpness`` (the softmax
    is monotone, and scaling the scores does not move the argmax).
``posteriors``
    Both agents' full probability vectors.  Cases are grouped by the exact pair of
    distributions, identified by each agent's scores relative to its maximum
    (``s - max(s)``, divided by the sharpness and rounded to 9 decimals).  Softmax is
    invariant to shifting the scores, so this key is exactly "the pair of
    distributions", and it is the same partition for every sharpness.

Only ``posteriors`` bounds the others as a theorem: a round's reports are a random
draw from the two distributions, so ``one_round <= posteriors``, and the MAP pair is a
function of the distributions, so ``map_pair <= posteriors``.  ``map_pair`` does NOT
bound ``one_round``: where an agent's top labels tie, the MAP (lowest index) discards
what a sampled report shows.  At sharpness 1 and 3 the measured order is still
``one_round <= map_pair`` for accuracy in every scenario (narrowly in S2 at 3: 0.863
vs 0.864), and at sharpness 5 and above S2's one-round accuracy exceeds its MAP-pair
ceiling; for risk S2's one-round ceiling (0.146) is already below its MAP-pair ceiling
(0.182) at sharpness 3.

:func:`multi_round_ceilings` adds the ceiling given T unsteered rounds (each agent's
label counts), which bounds any decision taken within T unsteered rounds, whatever the
stopping rule; it grows from ``one_round`` (T = 1) towards ``posteriors``.

Each ceiling is reported twice: as accuracy (the decision maximises the count of the
truth in the group) and as minimal expected diagnostic cost under the synthetic loss
:func:`dcem.synthetic.generator.synthetic_loss` (the decision ``d`` minimises
``sum_y L[d, y] count(group, y)``; R_L in the paper is loss-weighted, so the risk
ceiling is the relevant bound for it).  Lower risk is better.

Held-out estimate.  A decision table fitted and scored on the same cases is optimistic
(with many small groups it memorises noise).  The reported values are cross-fitted: the
cases are split at random into two halves, the table fitted on one half decides the
cases of the other and vice versa, and accuracy/risk are averaged over all cases.  A
group never seen in the fitting half gets the decision that is best for the fitting
half as a whole.  The in-sample values are kept alongside (``*_in_sample``).

The ceiling given the full features ``x`` is trivially 1.0 accuracy and 0.0 risk: on the
kept samples of the generator the label is a deterministic function of ``x`` (the only
label with a fired ground-truth rule; see :mod:`dcem.synthetic.generator`), so every
ceiling here measures what the agents' reports lose, not noise in the world.

Randomness comes only from the explicit ``numpy.random.Generator``: first the cases,
then the split, then one round of reports.  With the same seed the cases and the split
are therefore the same for every sharpness, and ``map_pair`` and ``posteriors`` are
identical across sharpness values.
"""
from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from common.errors import InputError
from common.fields import Instance, Number, Whole, check
from dcem.synthetic.generator import generate, synthetic_loss
from dcem.synthetic.rule_agents import SCENARIO_NAMES, RuleAgents
from dcem.synthetic.rule_agents import scenario as build_scenario

__all__ = [
    "MAX_ROUNDS",
    "MIN_CASES",
    "Ceilings",
    "RoundCeilings",
    "accuracy_ceilings",
    "best_decision_accuracy",
    "cross_fitted_accuracy",
    "multi_round_ceilings",
]

log = logging.getLogger(__name__)

MIN_CASES = 1000
"""Fewest cases :func:`accuracy_ceilings` accepts (smaller samples are mostly noise)."""

_KEY_DECIMALS = 9


def _check_groups(group_ids: np.ndarray, truth: np.ndarray, loss: np.ndarray
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Validate and densify ``(group_ids, truth, loss)``; returns dense ids and the group count."""
    g = np.asarray(group_ids)
    y = np.asarray(truth)
    L = np.asarray(loss, dtype=float)
    if L.ndim != 2 or L.shape[0] != L.shape[1] or L.shape[0] < 1:
        raise InputError("loss", f"must be a square (K, K) matrix, got shape {L.shape}")
    if not np.all(np.isfinite(L)):
        raise InputError("loss", "must be finite")
    if g.ndim != 1 or y.ndim != 1 or g.shape != y.shape:
        raise InputError("group_ids", f"group_ids and truth must be 1-d of equal length, "
                         f"got {g.shape} and {y.shape}")
    if g.size == 0:
        raise InputError("truth", "need at least one case")
    if not (np.issubdtype(y.dtype, np.integer) and y.min() >= 0 and y.max() < L.shape[0]):
        raise InputError("truth", f"must be integer labels in [0, {L.shape[0]})")
    _, dense = np.unique(g, return_inverse=True)
    dense = dense.reshape(-1)
    return dense, y.astype(np.intp), L, int(dense.max()) + 1


def _counts(dense: np.ndarray, y: np.ndarray, n_groups: int, k: int) -> np.ndarray:
    """``counts[g, y]``: number of cases of group g with truth y, shape (G, K)."""
    return np.bincount(dense * k + y, minlength=n_groups * k).reshape(n_groups, k).astype(float)


def _decisions(counts: np.ndarray, L: np.ndarray, fallback: np.ndarray | None = None
               ) -> tuple[np.ndarray, np.ndarray]:
    """Accuracy-optimal and risk-optimal decision per group (ties to the lowest index).

    Rows of ``counts`` that are all zero take the decisions computed from ``fallback``
    (a (K,) count vector) when it is given.
    """
    acc_dec = np.argmax(counts, axis=1)
    risk_dec = np.argmin(counts @ L.T, axis=1)  # [g, d] = sum_y L[d, y] counts[g, y]
    if fallback is not None:
        empty = counts.sum(axis=1) == 0
        acc_dec[empty] = int(np.argmax(fallback))
        risk_dec[empty] = int(np.argmin(L @ fallback))
    return acc_dec, risk_dec


def best_decision_accuracy(group_ids: np.ndarray, truth: np.ndarray, loss: np.ndarray
                           ) -> tuple[float, float]:
    """In-sample accuracy and risk of the best decision that depends only on the group.

    Parameters
    ----------
    group_ids : (n,) array of any hashable-by-value dtype; cases with equal ids share
        the decision
    truth : (n,) int labels in ``[0, K)``
    loss : (K, K) loss ``L[d, y]`` of deciding d when the truth is y

    Returns
    -------
    (accuracy, risk) : ``sum_g max_y count(g, y) / n`` and
        ``sum_g min_d sum_y L[d, y] count(g, y) / n``.
    """
    dense, y, L, n_groups = _check_groups(group_ids, truth, loss)
    counts = _counts(dense, y, n_groups, L.shape[0])
    n = float(y.size)
    accuracy = counts.max(axis=1).sum() / n
    risk = (counts @ L.T).min(axis=1).sum() / n
    return float(accuracy), float(risk)


def cross_fitted_accuracy(group_ids: np.ndarray, truth: np.ndarray, loss: np.ndarray,
                          fold: np.ndarray) -> tuple[float, float]:
    """Held-out accuracy and risk of the group decision table, two-fold cross-fitted.

    Parameters
    ----------
    group_ids, truth, loss : as in :func:`best_decision_accuracy`
    fold : (n,) bool; the table fitted on the cases with ``fold`` False decides the cases
        with ``fold`` True and vice versa.  Both folds must be non-empty.  A group absent
        from the fitting fold gets the decision that is best for the whole fitting fold.

    Returns
    -------
    (accuracy, risk) averaged over all n cases (each scored by the table it did not fit).
    """
    dense, y, L, n_groups = _check_groups(group_ids, truth, loss)
    f = np.asarray(fold)
    if f.shape != y.shape or f.dtype != bool:
        raise InputError("fold", f"must be a bool array of shape {y.shape}")
    if f.all() or not f.any():
        raise InputError("fold", "both folds must hold at least one case")
    k = L.shape[0]
    correct = 0.0
    cost = 0.0
    for scored in (f, ~f):
        fit = ~scored
        counts = _counts(dense[fit], y[fit], n_groups, k)
        acc_dec, risk_dec = _decisions(counts, L, fallback=counts.sum(axis=0))
        g, t = dense[scored], y[scored]
        correct += float(np.sum(acc_dec[g] == t))
        cost += float(np.sum(L[risk_dec[g], t]))
    return correct / y.size, cost / y.size


@dataclass(frozen=True)
class Ceilings:
    """Ceilings of one scenario's unsteered agents (see the module docstring).

    Accuracies (higher is better) and risks (expected synthetic loss, lower is better),
    held-out (cross-fitted) unless the name ends in ``_in_sample``.

    Attributes
    ----------
    scenario : str; n : int, number of generated cases; sharpness : float
    one_round, map_pair, posteriors : held-out accuracy ceilings
    one_round_risk, map_pair_risk, posteriors_risk : held-out minimal risks
    *_in_sample : the same fitted and scored on all n cases
    groups_one_round, groups_map_pair, groups_posteriors : number of distinct groups seen
    """

    scenario: str
    n: int
    sharpness: float
    one_round: float
    map_pair: float
    posteriors: float
    one_round_risk: float
    map_pair_risk: float
    posteriors_risk: float
    one_round_in_sample: float
    map_pair_in_sample: float
    posteriors_in_sample: float
    one_round_risk_in_sample: float
    map_pair_risk_in_sample: float
    posteriors_risk_in_sample: float
    groups_one_round: int
    groups_map_pair: int
    groups_posteriors: int

    def to_dict(self) -> dict[str, object]:
        """Plain-Python dict of every field (JSON-serialisable)."""
        return asdict(self)


def _validate(scenario_name: str, n: int, sharpness: float) -> tuple[int, float]:
    if scenario_name not in SCENARIO_NAMES:
        raise InputError("scenario", f"unknown scenario {scenario_name!r} "
                         f"(known: {', '.join(SCENARIO_NAMES)})")
    check("n", n, Whole(numpy=True, msg="must be an integer number of cases, got {value!r}"),
          Whole(MIN_CASES, numpy=True, msg="need at least {low} cases for a usable ceiling, got {value}"), error=InputError)
    check("sharpness", sharpness, Number(numpy=True, msg="must be a positive number, got {value!r}"),
          Number(0, closed="neither", finite=True, numpy=True, msg="must be a positive finite number, got {value}"),
          error=InputError)
    return int(n), float(sharpness)


def _row_ids(rows: np.ndarray) -> np.ndarray:
    """Dense id per distinct row of a 2-d array."""
    _, ids = np.unique(rows, axis=0, return_inverse=True)
    return ids.reshape(-1)


def _setup(scenario: str, n: int, rng: np.random.Generator, sharpness: float
           ) -> tuple[np.ndarray, np.ndarray, RuleAgents]:
    """Validate, then draw (in this order) the cases, the two-fold split and the agents.

    Returns (truth (n,), fold bool (n,), unsteered agents on the cases).  No report has
    been drawn yet, so the first ``agents.report`` call is the same round-1 draw in
    :func:`accuracy_ceilings` and :func:`multi_round_ceilings`.
    """
    n, sharpness = _validate(scenario, n, sharpness)
    check("rng", rng, Instance(np.random.Generator, msg="must be a numpy.random.Generator, got {type}"), error=InputError)
    scen = build_scenario(scenario)
    data = generate(n, rng)
    fold = np.zeros(n, dtype=bool)
    fold[rng.permutation(n)[: n // 2]] = True
    # kappa = 0: every round an independent redraw (no peer exchange), so label counts
    # are sufficient statistics in multi_round_ceilings
    return data.labels, fold, RuleAgents(scen, data.features, rng, sharpness=sharpness, kappa=0.0)


def accuracy_ceilings(scenario: str, *, n: int, rng: np.random.Generator,
                      sharpness: float) -> Ceilings:
    """Measure the one-round, MAP-pair and posterior ceilings of a scenario.

    Parameters
    ----------
    scenario : one of :data:`dcem.synthetic.rule_agents.SCENARIO_NAMES`
    n : number of cases to generate (at least :data:`MIN_CASES`)
    rng : the only source of randomness (cases, then the two-fold split, then one
        round of reports)
    sharpness : inverse temperature of the agents' softmax (passed to
        :class:`~dcem.synthetic.rule_agents.RuleAgents`)

    Returns
    -------
    Ceilings
    """
    truth, fold, agents = _setup(scenario, n, rng, sharpness)
    n, sharpness = int(n), float(sharpness)
    reports = np.asarray(agents.report(1))  # (n, A): one unsteered round
    k = len(agents.labels)
    s = np.asarray(agents.scores(), dtype=float)  # (n, A, K) = sharpness * raw scores
    rel = np.round((s - s.max(axis=-1, keepdims=True)) / sharpness, _KEY_DECIMALS) + 0.0
    map_labels = np.argmax(rel, axis=-1)  # argmax of each probability vector, ties lowest
    a = reports.shape[1]
    weights = k ** np.arange(a - 1, -1, -1)
    groups = {
        "one_round": reports @ weights,
        "map_pair": map_labels @ weights,
        "posteriors": _row_ids(rel.reshape(n, -1)),
    }
    loss = synthetic_loss()
    values: dict[str, float | int] = {}
    for name, ids in groups.items():
        acc, risk = cross_fitted_accuracy(ids, truth, loss, fold)
        acc_in, risk_in = best_decision_accuracy(ids, truth, loss)
        values[name] = acc
        values[f"{name}_risk"] = risk
        values[f"{name}_in_sample"] = acc_in
        values[f"{name}_risk_in_sample"] = risk_in
        values[f"groups_{name}"] = int(np.unique(ids).size)
    log.debug("ceilings %s (sharpness %g, n %d): %s", scenario, sharpness, n, values)
    return Ceilings(scenario=scenario, n=n, sharpness=sharpness, **values)  # type: ignore[arg-type]


@dataclass(frozen=True)
class RoundCeilings:
    """Ceilings given T unsteered rounds of both agents' reports, for several T.

    Attributes
    ----------
    scenario : str; n : int; sharpness : float
    rounds : the horizons T, increasing
    accuracy, risk : held-out (cross-fitted) ceilings, one per T
    accuracy_in_sample, risk_in_sample : the same fitted and scored on all cases
    """

    scenario: str
    n: int
    sharpness: float
    rounds: tuple[int, ...]
    accuracy: tuple[float, ...]
    risk: tuple[float, ...]
    accuracy_in_sample: tuple[float, ...]
    risk_in_sample: tuple[float, ...]

    def to_dict(self) -> dict[str, object]:
        """Plain-Python dict of every field (tuples become lists; JSON-serialisable)."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}


MAX_ROUNDS = 1000
"""Largest horizon :func:`multi_round_ceilings` accepts."""


def multi_round_ceilings(scenario: str, *, rounds: Sequence[int], n: int,
                         rng: np.random.Generator, sharpness: float) -> RoundCeilings:
    """Best decision given the reports of T unsteered, independent rounds (kappa = 0).

    Without peer exchange, unsteered rounds are independent draws given the case's two distributions, so each
    agent's label counts over the T rounds are a sufficient statistic; cases are grouped
    by the pair of count vectors.  Any decision made after at most T unsteered rounds
    (including one taken at a history-dependent stopping round) is a function of these
    reports and is bounded by this ceiling.  With ``T = 1`` it equals
    :attr:`Ceilings.one_round` for the same seed (the same cases, split and round-1
    draw); as T grows it tends to :attr:`Ceilings.posteriors`.

    Parameters
    ----------
    scenario, n, rng, sharpness : as in :func:`accuracy_ceilings`
    rounds : horizons T (positive integers up to :data:`MAX_ROUNDS`; sorted, duplicates
        dropped)
    """
    try:
        horizons = sorted({int(t) for t in rounds})
    except (TypeError, ValueError):
        raise InputError("rounds", f"must be a sequence of integers, got {rounds!r}") from None
    if not horizons or horizons[0] < 1 or horizons[-1] > MAX_ROUNDS:
        raise InputError("rounds", f"need at least one horizon, each in [1, {MAX_ROUNDS}], "
                         f"got {list(rounds)!r}")
    truth, fold, agents = _setup(scenario, n, rng, sharpness)
    n = int(n)
    a, k = agents.n_agents, len(agents.labels)
    counts = np.zeros((n, a, k), dtype=np.int32)
    rows, cols = np.arange(n)[:, None], np.arange(a)[None, :]
    loss = synthetic_loss()
    acc, risk, acc_in, risk_in = [], [], [], []
    for t in range(1, horizons[-1] + 1):
        counts[rows, cols, np.asarray(agents.report(t))] += 1
        if t in horizons:
            ids = _row_ids(counts.reshape(n, -1))
            held = cross_fitted_accuracy(ids, truth, loss, fold)
            fitted = best_decision_accuracy(ids, truth, loss)
            acc.append(held[0])
            risk.append(held[1])
            acc_in.append(fitted[0])
            risk_in.append(fitted[1])
    return RoundCeilings(scenario, n, float(sharpness), tuple(horizons), tuple(acc), tuple(risk),
                         tuple(acc_in), tuple(risk_in))
