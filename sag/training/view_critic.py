"""The central critic of a view group's debate stage (the SAG seed's CTDE, Eq. 6).

After round 1 the group's answer comes from what its reasoning agents then say.  The
critic knows what no agent knows, the right answer, and sees every agent's round-1
answer.  The value of a joint answer ``a`` is

    Q(S, a) = [a_i right] (+1 / -1)  +  w_group x [the plurality of a right] (+1 / -1)

for agent i: its own answer, and the group's, the plurality of the reasoning agents
(ties to the tied letter with the most summed probability).  Eq. 6's counterfactual holds
the others' answers fixed and varies agent i's letter over every option, so an agent earns
for being right, and earns more where its answer decides the group's.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

__all__ = ["plurality_letters", "PluralityCritic"]


def plurality_letters(joint: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """The plurality letter of each question: ``joint`` (N, B) letters, ``probs`` (N, B, K);
    a tie goes to the tied letter with the most probability summed over the voters, then
    the earliest."""
    n, b, k = probs.shape
    counts = np.zeros((b, k))
    np.add.at(counts, (np.repeat(np.arange(b)[None, :], n, axis=0), joint), 1)
    top = counts.max(axis=1, keepdims=True)
    mass = probs.sum(axis=0)
    score = np.where(counts == top, mass, -np.inf)
    return score.argmax(axis=1)


class PluralityCritic:
    """Q(S, [a', a_-i]) for every agent and letter (see the module docstring); ``right`` is
    the right letter of every question row."""

    def __init__(self, right: np.ndarray, group_weight: float = 1.0) -> None:
        self.right, self.group_weight = np.asarray(right), float(group_weight)

    def __call__(self, rows: Sequence[int], joint: np.ndarray, probs: np.ndarray) -> np.ndarray:
        n, b, k = probs.shape
        y = self.right[np.asarray(rows)]
        out = np.zeros((n, b, k))
        for i in range(n):
            for letter in range(k):
                alt_joint = joint.copy()
                alt_joint[i] = letter
                alt_probs = probs.copy()
                alt_probs[i] = np.eye(k)[letter]
                own = np.where(letter == y, 1.0, -1.0)
                group = np.where(plurality_letters(alt_joint, alt_probs) == y, 1.0, -1.0)
                out[i, :, letter] = own + self.group_weight * group
        return out
