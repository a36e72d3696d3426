"""Statistical (non-LLM) classifiers for the clinical panel, fit on a seed's CAL split only.

Three kinds, each a scikit-learn pipeline over one text document per case:

- ``nb-evidence`` (DDXPlus-8): Bernoulli naive Bayes over the bag of the patient's
  evidence codes (each answered code, and for a multi-valued answer also its question
  code);
- ``lr-evidence`` (DDXPlus-8): logistic regression over the same bag;
- ``tfidf-lr`` (both datasets): TF-IDF of the words of the case text and a logistic
  regression (C = 10).

The vectoriser and the classifier see the CAL documents only.  :func:`fit_stat_model`
also returns out-of-fold probability vectors for the CAL cases themselves (stratified
folds drawn from an explicit ``numpy.random.Generator``): a model that answered its own
training cases would look perfect on CAL and the mediator's confusion matrix, estimated
from CAL answers, would trust it blindly.  Every vector is finite, positive and sums to
one over the dataset's labels in label order: the classifier's vector (classes it never
saw get 0) is mixed with the uniform vector, weight :data:`SMOOTHING`.  Fitting and
prediction run on one BLAS/OpenMP thread: the models are tiny, and several threads
fighting over shared cores made a fit 50 times slower.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
from threadpoolctl import threadpool_limits

from common.errors import ConfigError
from common.fields import Instance, check

__all__ = ["STAT_KINDS", "SMOOTHING", "N_FOLDS", "FittedStat", "fit_stat_model", "fold_assignment",
           "distinguishing_features"]

STAT_KINDS: dict[str, tuple[str, ...]] = {  # kind -> datasets it can read
    "nb-evidence": ("ddxplus8",),
    "lr-evidence": ("ddxplus8",),
    "tfidf-lr": ("ddxplus8", "medqa-tri"),
}
SMOOTHING = 0.02  # weight of the uniform vector mixed into every answer
N_FOLDS = 5
RANDOM_STATE = 0


def _pipeline(kind: str) -> Any:
    from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.naive_bayes import BernoulliNB
    from sklearn.pipeline import make_pipeline

    if kind == "nb-evidence":
        return make_pipeline(CountVectorizer(token_pattern=r"\S+", lowercase=False, binary=True),
                             BernoulliNB(alpha=1.0))
    if kind == "lr-evidence":
        return make_pipeline(CountVectorizer(token_pattern=r"\S+", lowercase=False, binary=True),
                             LogisticRegression(C=1.0, max_iter=2000, random_state=RANDOM_STATE))
    if kind == "tfidf-lr":
        return make_pipeline(TfidfVectorizer(sublinear_tf=True),
                             LogisticRegression(C=10.0, max_iter=2000, random_state=RANDOM_STATE))
    raise ConfigError("agents", f"unknown statistical agent kind {kind!r} (known: {', '.join(STAT_KINDS)})")


def _smooth(probs: np.ndarray, n_labels: int) -> np.ndarray:
    """Mix with the uniform vector and renormalise: finite, positive, rows sum to one."""
    probs = np.nan_to_num(np.asarray(probs, dtype=float), nan=0.0, posinf=0.0, neginf=0.0).clip(min=0.0)
    totals = probs.sum(axis=-1, keepdims=True)
    probs = np.where(totals > 0, probs / np.where(totals > 0, totals, 1.0), 1.0 / n_labels)
    out = (1.0 - SMOOTHING) * probs + SMOOTHING / n_labels
    return out / out.sum(axis=-1, keepdims=True)


class _Fitted:
    """One fitted pipeline, or the training base rates when fewer than two classes were seen."""

    def __init__(self, kind: str, docs: Sequence[str], y: np.ndarray, n_labels: int) -> None:
        self.n_labels = n_labels
        self.base = np.bincount(y, minlength=n_labels).astype(float) if len(y) else np.ones(n_labels)
        self.model: Any = None
        if len(set(y.tolist())) >= 2:
            with threadpool_limits(limits=1):
                self.model = _pipeline(kind).fit(list(docs), y)

    def predict(self, docs: Sequence[str]) -> np.ndarray:
        if not docs:
            return np.zeros((0, self.n_labels))
        if self.model is None:
            return _smooth(np.tile(self.base, (len(docs), 1)), self.n_labels)
        full = np.zeros((len(docs), self.n_labels))
        with threadpool_limits(limits=1):
            full[:, self.model.classes_] = self.model.predict_proba(list(docs))
        return _smooth(full, self.n_labels)


def fold_assignment(y: np.ndarray, n_folds: int, rng: np.random.Generator) -> np.ndarray:
    """Stratified fold index per case: each class shuffled by ``rng`` and dealt round-robin."""
    folds = np.zeros(len(y), dtype=np.int64)
    offset = 0
    for label in np.unique(y):
        members = np.flatnonzero(y == label)
        members = members[rng.permutation(len(members))]
        folds[members] = (np.arange(len(members)) + offset) % n_folds
        offset += len(members)
    return folds


@dataclass(frozen=True, eq=False)
class FittedStat:
    """A statistical classifier fit on CAL: ``predict`` for other cases, ``oof`` for CAL itself.

    oof : out-of-fold vectors (n_cal, K) of the CAL cases, in ``fit_ids`` order;
    oof_accuracy : their accuracy; fit_sha256 names the fit (kind, labels, CAL documents
    and labels, library version) and keys the call log, so two fits never share an answer.
    """

    kind: str
    n_labels: int
    fit_ids: tuple[str, ...]
    oof: np.ndarray
    oof_accuracy: float
    fit_sha256: str
    full: _Fitted

    def predict(self, docs: Sequence[str]) -> np.ndarray:
        """Probability vectors (n, K) of the model fit on every CAL case."""
        return self.full.predict(docs)


def _fit_hash(kind: str, n_labels: int, ids: Sequence[str], docs: Sequence[str], y: np.ndarray) -> str:
    import sklearn

    blob = json.dumps({"kind": kind, "n_labels": n_labels, "ids": list(ids), "docs": list(docs),
                       "y": [int(v) for v in y], "sklearn": sklearn.__version__, "smoothing": SMOOTHING,
                       "folds": N_FOLDS}, sort_keys=True)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def fit_stat_model(kind: str, ids: Sequence[str], docs: Sequence[str], y: Sequence[int], n_labels: int,
                   rng: np.random.Generator) -> FittedStat:
    """Fit ``kind`` on the CAL cases (``ids``, ``docs``, labels ``y``) and their out-of-fold answers.

    ``rng`` draws the folds; the classifiers themselves are deterministic.
    """
    if kind not in STAT_KINDS:
        raise ConfigError("agents", f"unknown statistical agent kind {kind!r} (known: {', '.join(STAT_KINDS)})")
    check("rng", rng, Instance(np.random.Generator, msg="pass a numpy.random.Generator"))
    labels = np.asarray(y, dtype=np.int64)
    if len(ids) != len(docs) or len(docs) != len(labels) or not len(labels):
        raise ConfigError("cases", "need one document and one label per CAL case, and at least one case")
    if labels.min() < 0 or labels.max() >= n_labels:
        raise ConfigError("cases", f"CAL labels must lie in 0..{n_labels - 1}")
    folds = fold_assignment(labels, min(N_FOLDS, len(labels)), rng)
    oof = np.full((len(labels), n_labels), 1.0 / n_labels)
    for f in np.unique(folds):
        train, held = folds != f, folds == f
        if train.any():
            model = _Fitted(kind, [d for d, t in zip(docs, train) if t], labels[train], n_labels)
            oof[held] = model.predict([d for d, h in zip(docs, held) if h])
    full = _Fitted(kind, docs, labels, n_labels)
    acc = float(np.mean(np.argmax(oof, axis=1) == labels))
    return FittedStat(kind, n_labels, tuple(ids), oof, acc, _fit_hash(kind, n_labels, ids, docs, labels), full)


def _feature_weights(model: Any, alternative: int, current: int) -> np.ndarray | None:
    """Per feature, how much its presence favours ``alternative`` over ``current`` (None
    when the model never saw one of the two labels)."""
    clf = model.steps[-1][1]
    rows = {int(c): i for i, c in enumerate(clf.classes_)}
    if alternative not in rows or current not in rows:
        return None
    alt, cur = rows[alternative], rows[current]
    if hasattr(clf, "feature_log_prob_"):  # naive Bayes: log P(feature | label)
        return np.asarray(clf.feature_log_prob_[alt] - clf.feature_log_prob_[cur], dtype=float)
    coef = clf.coef_
    if coef.shape[0] == 1:  # a binary logistic regression keeps one row: class 1 against class 0
        sign = 1.0 if alt == 1 else -1.0
        return sign * np.asarray(coef[0], dtype=float)
    return np.asarray(coef[alt] - coef[cur], dtype=float)


def distinguishing_features(fitted: FittedStat, doc: str, current: int, alternative: int,
                            k: int) -> list[tuple[str, float]]:
    """The ``k`` features of ``doc`` (evidence codes or words) that most separate
    ``alternative`` from ``current`` in the model fit on CAL (eq. 18's top-k), each with its
    contribution to the log-odds of ``alternative`` against ``current`` (negative: it
    favours ``current``), the largest magnitude first."""
    model = fitted.full.model
    if model is None or k <= 0:
        return []
    weights = _feature_weights(model, alternative, current)
    if weights is None:
        return []
    vectorizer = model.steps[0][1]
    with threadpool_limits(limits=1):
        x = vectorizer.transform([doc]).tocoo()
    names = vectorizer.get_feature_names_out()
    scored = sorted(((str(names[j]), float(weights[j] * v)) for j, v in zip(x.col, x.data) if weights[j] * v != 0),
                    key=lambda t: (-abs(t[1]), t[0]))
    return scored[:k]
