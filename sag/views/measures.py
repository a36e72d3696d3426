"""What a view group is measured by (``docs/group_views.md``): pure functions of answers.

Every row is one way of answering the same items: a member alone (its round-0 answer),
the members' majority vote, D-CEM's pool of the members (confusions fitted on other
items), the group, references.  For each: accuracy with its 95 % Wilson interval, each
class's recall, the most frequent answer and its share, and the paired difference to the
group with its bootstrap interval.  Beside them: chance and the best single letter, the
answer changes the debate caused, the counterfactual divergence rate on twins beside the
rate two independent answers would reach, and the cost against one single answer.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from common.intervals import paired_bootstrap, wilson_interval

__all__ = ["AnswerRow", "answer_row", "vote_letters", "pooled_letters", "Changes", "answer_changes", "cdr",
           "chance_cdr", "zero_recall_words"]


@dataclass(frozen=True)
class AnswerRow:
    """One way of answering ``n`` items, measured (see the module docstring)."""

    name: str
    n: int
    n_correct: int
    low: float
    high: float
    recall: tuple[float, ...]
    top_answer: str
    top_share: float
    diff: float | None = None
    diff_low: float | None = None
    diff_high: float | None = None
    answered: int | None = None

    @property
    def accuracy(self) -> float:
        return self.n_correct / self.n if self.n else float("nan")


def answer_row(name: str, answers: Sequence[str], truth: Sequence[str], labels: Sequence[str], *,
               group: Sequence[str] | None = None, rng: np.random.Generator | None = None) -> AnswerRow:
    """Measure ``answers`` against ``truth`` (letters; any other answer, ESCALATE or REFUSE,
    counts as not right); ``group``: the group's answers on the same items, for the paired
    difference (this row minus the group)."""
    a, y = np.asarray(answers, dtype=object), np.asarray(truth, dtype=object)
    if a.shape != y.shape or a.ndim != 1 or a.size == 0:
        raise ValueError("answers and truth must be two equally long, non-empty lists")
    right = a == y
    recall = tuple(float(right[y == label].mean()) if (y == label).any() else float("nan") for label in labels)
    values, counts = np.unique(a.astype(str), return_counts=True)
    top = int(counts.argmax())
    low, high = wilson_interval(int(right.sum()), int(a.size))
    answered = int(np.isin(a, list(labels)).sum())
    if group is None:
        return AnswerRow(name, int(a.size), int(right.sum()), low, high, recall, str(values[top]),
                         float(counts[top] / a.size), answered=answered)
    group_right = np.asarray(group, dtype=object) == y
    diff, d_low, d_high = paired_bootstrap(group_right, right, rng or np.random.default_rng(0))
    return AnswerRow(name, int(a.size), int(right.sum()), low, high, recall, str(values[top]),
                     float(counts[top] / a.size), diff, d_low, d_high, answered)


def vote_letters(letters: np.ndarray, probs: np.ndarray, labels: Sequence[str]) -> list[str]:
    """The plurality of each item's answers: ``letters`` (A, n) label indices, ``probs``
    (A, n, K); a tie goes to the tied label with the most summed probability, then the
    earliest (the rule of :func:`sag.debate.decide.plurality`)."""
    a, n, k = probs.shape
    counts = np.zeros((n, k))
    np.add.at(counts, (np.tile(np.arange(n), a), letters.reshape(-1)), 1)
    mass = probs.sum(axis=0)
    score = np.where(counts == counts.max(axis=1, keepdims=True), mass + 1e-12, -np.inf)
    return [labels[int(i)] for i in score.argmax(axis=1)]


def pooled_letters(cal_letters: np.ndarray, cal_truth: np.ndarray, letters: np.ndarray,
                   labels: Sequence[str]) -> list[str]:
    """D-CEM's pool of the members' answers (eqs. 2, 5-8 of seed 003): each member's
    confusion matrix is counted on the calibration items (``cal_letters`` (A, m) against
    ``cal_truth`` (m,), smoothed), its answer becomes a posterior, the posteriors are
    log-pooled with reliability weights and the decision is the pooled belief's most
    probable label under 0/1 loss.  ``letters`` (A, n) are the answers to pool."""
    from dcem.calibration.fitting import estimate_confusion, estimate_prior
    from dcem.core.config import MediatorConfig
    from dcem.core.panel import Panel
    from dcem.core.state import assess_reports

    k = len(labels)
    confusion = estimate_confusion(cal_truth, cal_letters.T, k)
    panel = Panel(tuple(labels), confusion, estimate_prior(cal_truth, k, "uniform"), 1.0 - np.eye(k))
    state = assess_reports(panel, letters.T, MediatorConfig(prior="uniform"))
    return [labels[int(i)] for i in state.decision]


@dataclass(frozen=True)
class Changes:
    """One agent's answer changes from one round to the next, over items."""

    agent: str
    wrong_to_right: int
    right_to_wrong: int
    wrong_to_wrong: int
    kept: int


def answer_changes(agent: str, before: Sequence[str], after: Sequence[str], truth: Sequence[str]) -> Changes:
    b, a, y = (np.asarray(x, dtype=object) for x in (before, after, truth))
    moved = b != a
    return Changes(agent, int((moved & (b != y) & (a == y)).sum()), int((moved & (b == y) & (a != y)).sum()),
                   int((moved & (b != y) & (a != y)).sum()), int((~moved).sum()))


def cdr(base: Mapping[str, str], twins: Mapping[str, str]) -> tuple[float, int]:
    """Counterfactual divergence rate (seed 004, eq. 9): the share of twins (``<id>~kind``
    -> answer) whose answer differs from their case's (``base``: id -> answer); with the
    number of twins compared."""
    pairs = [(base[t.partition("~")[0]], answer) for t, answer in twins.items() if t.partition("~")[0] in base]
    if not pairs:
        return float("nan"), 0
    return float(np.mean([x != y for x, y in pairs])), len(pairs)


def chance_cdr(answers: Sequence[str]) -> float:
    """The CDR two independent answers drawn from ``answers``' own distribution would give:
    1 - sum of squared answer shares (what a group that ignores the patient would score)."""
    _, counts = np.unique(np.asarray(answers, dtype=str), return_counts=True)
    shares = counts / counts.sum()
    return float(1.0 - (shares ** 2).sum())


def zero_recall_words(row: AnswerRow, names: Sequence[str]) -> list[str]:
    """"never diagnoses Myocarditis" for each class with items and recall 0."""
    return [f"never diagnoses {name}" for name, r in zip(names, row.recall) if r == 0.0]
