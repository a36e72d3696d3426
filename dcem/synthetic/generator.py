"""The rule-guided synthetic diagnostic world (Appendix D.1, Table 2).

Ten binary features ``x0..x9`` are drawn independently as Bernoulli(0.5).  Six
ground-truth rules, two per label, fire on conjunctions of (possibly negated) features.
Label ``k0`` is the rare, high-cost class governed by the longer rules; ``k1`` and
``k2`` are common classes with shorter rules.

Label sampling.  For a feature vector ``x`` the score of label ``k`` is
``s_k(x) = sum_{r in R_k} w_r phi_r(x)`` (the weights of the fired rules of ``k``).  The
specification writes ``softmax(sigmoid^{-1}(s))``; the logit of a number above 1 is
undefined and the rule scores reach 3.2, so we read it as ``k ~ softmax(s)`` over the
raw scores.  A drawn pair ``(x, k)`` is kept only when at least one rule of ``k`` fires
and no rule of any other label fires (rejection sampling in vectorised batches).  A
consequence worth knowing: on the kept samples the label is a deterministic function of
``x`` (the only label with a fired rule), and the softmax only shapes the class rates.

The loss is the three-level loss of Appendix E with ``k0`` high-cost and
``l_high = 3`` (Table 4).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

import numpy as np

from dcem.core.panel import three_level_loss
from common.errors import InputError
from common.fields import Whole, check

__all__ = [
    "N_FEATURES", "LABELS", "HIGH_RISK", "L_HIGH", "Rule", "GROUND_TRUTH_RULES",
    "SyntheticData", "rule_activations", "rule_scores", "synthetic_loss", "generate",
]

log = logging.getLogger(__name__)

N_FEATURES = 10
LABELS = ("k0", "k1", "k2")
HIGH_RISK: tuple[int, ...] = (0,)
L_HIGH = 3.0


@dataclass(frozen=True)
class Rule:
    """``consequent <- AND_{i in positive} x_i AND_{j in negative} NOT x_j``.

    Attributes
    ----------
    consequent : int, label index
    positive, negative : tuples of feature indices (sorted, disjoint)
    """

    consequent: int
    positive: tuple[int, ...]
    negative: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        pos, neg = tuple(sorted(self.positive)), tuple(sorted(self.negative))
        if set(pos) & set(neg):
            raise InputError("rule", f"feature used both plain and negated: {set(pos) & set(neg)}")
        if not pos and not neg:
            raise InputError("rule", "a rule needs at least one condition")
        object.__setattr__(self, "positive", pos)
        object.__setattr__(self, "negative", neg)

    @property
    def antecedent(self) -> tuple[tuple[int, ...], tuple[int, ...]]:
        return (self.positive, self.negative)

    def name(self, labels: tuple[str, ...] = LABELS) -> str:
        """Readable form, e.g. ``"k0 <- x3 & x4 & x7 & !x9"`` (features in index order)."""
        terms = sorted([(i, f"x{i}") for i in self.positive] + [(j, f"!x{j}") for j in self.negative])
        return f"{labels[self.consequent]} <- " + " & ".join(t for _, t in terms)


# Table 2: (rule, weight); rule ids 1..6 are the positions + 1.
GROUND_TRUTH_RULES: tuple[tuple[Rule, float], ...] = (
    (Rule(0, (0, 1, 3), (2,)), 1.5),
    (Rule(0, (3, 4, 7), (9,)), 1.5),
    (Rule(1, (3, 4, 5)), 1.4),
    (Rule(1, (6, 7, 9)), 1.6),
    (Rule(2, (1, 3, 4)), 1.7),
    (Rule(2, (4, 7, 9)), 1.3),
)


def rule_activations(features: np.ndarray, rules: tuple[Rule, ...] | list[Rule]) -> np.ndarray:
    """``phi[n, r] = 1`` iff rule r fires on case n.

    features : int ndarray of shape (N, d) with 0/1 entries.  Returns bool (N, R).
    """
    x = np.asarray(features).astype(bool)
    out = np.empty((x.shape[0], len(rules)), dtype=bool)
    for r, rule in enumerate(rules):
        fired = np.ones(x.shape[0], dtype=bool)
        for i in rule.positive:
            fired &= x[:, i]
        for j in rule.negative:
            fired &= ~x[:, j]
        out[:, r] = fired
    return out


def rule_scores(phi: np.ndarray, weights: np.ndarray, consequent: np.ndarray, n_labels: int) -> np.ndarray:
    """Class scores ``s[..., k] = sum_r w[..., r] phi[..., r] [consequent_r = k]`` (B.7).

    phi : (N, R) bool/0-1; weights : (R,) or broadcastable to (N, ..., R) with the case
    axis first; consequent : int (R,).  Returns (N, ..., K).
    """
    onehot = np.eye(n_labels)[np.asarray(consequent, dtype=np.intp)]  # (R, K)
    w = np.asarray(weights, dtype=float)
    p = np.asarray(phi, dtype=float)
    if w.ndim <= 1:
        return (p * w) @ onehot
    # weights (N, ..., R): broadcast phi over the middle axes
    p = p.reshape(p.shape[0], *([1] * (w.ndim - 2)), p.shape[1])
    return (w * p) @ onehot


def synthetic_loss() -> np.ndarray:
    """Loss ``L[d, y]`` of shape (3, 3): 0 diagonal, 3 for missing k0, 1 otherwise."""
    return three_level_loss(len(LABELS), list(HIGH_RISK), L_HIGH)


@dataclass(frozen=True, eq=False)
class SyntheticData:
    """Valid samples of the generator.

    Attributes
    ----------
    features : int8 ndarray of shape (n, 10)
    labels : int64 ndarray of shape (n,), indices into :data:`LABELS`
    fired : bool ndarray of shape (n, 6); ``fired[i, r]`` is True when ground-truth
        rule ``r + 1`` of Table 2 fires on sample i.
    """

    features: np.ndarray
    labels: np.ndarray
    fired: np.ndarray

    def __len__(self) -> int:
        return int(self.labels.shape[0])

    def fired_rule_ids(self, i: int) -> tuple[int, ...]:
        """1-based ids (Table 2) of the ground-truth rules fired on sample i."""
        return tuple(int(r) + 1 for r in np.flatnonzero(self.fired[i]))

    def subset(self, index: slice | np.ndarray) -> "SyntheticData":
        return SyntheticData(self.features[index], self.labels[index], self.fired[index])


def _validate_n(n: int) -> int:
    return int(check("n", n, Whole(0, numpy=True, msg="must be a non-negative integer, got {value!r}"), error=InputError))


def generate(n: int, rng: np.random.Generator, *, batch: int | None = None,
             max_batches: int = 10_000) -> SyntheticData:
    """Draw ``n`` valid samples by vectorised rejection sampling.

    Each batch draws features (B, 10), samples a label from ``softmax(s(x))`` with the
    Gumbel-max trick and keeps the rows where the label's rules fire and no other
    label's rule does.  Rows on which rules of two or more labels fire (or none) can
    never be kept, so labels are only drawn for the other rows; the kept samples have
    the same distribution as drawing a label for every row.  Batches repeat until ``n`` samples are kept; the first ``n`` kept
    rows (in draw order) are returned.

    Parameters
    ----------
    n : int, number of valid samples wanted
    rng : numpy Generator, the only source of randomness
    batch : rows drawn per batch (default ``max(4 n, 1024)``)
    """
    n = _validate_n(n)
    rules = tuple(r for r, _ in GROUND_TRUTH_RULES)
    weights = np.array([w for _, w in GROUND_TRUTH_RULES])
    consequent = np.array([r.consequent for r in rules])
    k = len(LABELS)
    onehot = np.eye(k, dtype=np.int8)[consequent]  # (R, K)
    size = batch or max(9 * n, 1024)
    feats, labels, fired = [], [], []
    kept = drawn = 0
    for _ in range(max_batches):
        if kept >= n:
            break
        x = rng.integers(0, 2, size=(size, N_FEATURES), dtype=np.int8)
        phi = rule_activations(x, rules)
        per_label = (phi.astype(np.int8) @ onehot) > 0  # (B, K): label has a fired rule
        # Only rows where exactly one label has fired rules can ever be valid; sample a
        # label for those rows only and keep them when it is that label.
        single = np.flatnonzero(per_label.sum(axis=1) == 1)
        scores = phi[single].astype(float) @ (onehot * weights[:, None])
        label = np.argmax(scores + rng.gumbel(size=scores.shape), axis=1)
        ok = per_label[single, label]
        rows = single[ok]
        feats.append(x[rows])
        labels.append(label[ok])
        fired.append(phi[rows])
        kept += int(rows.size)
        drawn += size
    if kept < n:
        raise InputError("n", f"only {kept} valid samples after {max_batches} batches")
    log.debug("synthetic generator kept %d of %d draws (%.1f%%)", kept, drawn, 100.0 * kept / max(drawn, 1))
    if not feats:  # n == 0
        return SyntheticData(np.zeros((0, N_FEATURES), dtype=np.int8), np.zeros(0, dtype=np.int64),
                             np.zeros((0, len(rules)), dtype=bool))
    return SyntheticData(np.concatenate(feats)[:n], np.concatenate(labels)[:n].astype(np.int64),
                         np.concatenate(fired)[:n])
