"""Confusion-induced posteriors, expected risk and the dangerous plausible miss.

Index conventions: ``C`` has shape (A, K, K) with ``C[a, i, j] = Pr(report j | truth i)``;
``L`` has shape (K, K) with ``L[d, y]`` the loss of deciding d when the truth is y.
Every function accepts any number of leading batch axes ``...`` (cases, rounds).
"""
from __future__ import annotations

import numpy as np

__all__ = [
    "normalise_joint",
    "report_posteriors",
    "soft_report_posteriors",
    "expected_risk",
    "agent_risk",
    "dangerous_miss",
]


def normalise_joint(lik: np.ndarray, prior: np.ndarray) -> np.ndarray:
    """``lik * prior`` normalised over the last axis.

    Where every product underflows to 0 (tiny priors times tiny likelihoods, all
    strictly positive) the row is normalised in log space instead, so the posterior
    stays a distribution; other rows are computed exactly as the plain product.
    """
    joint = lik * prior
    total = joint.sum(axis=-1, keepdims=True)
    if not np.all(total > 0):
        tiny = np.nextafter(0.0, 1.0)  # a likelihood can underflow too (soft reports)
        logs = np.log(np.maximum(lik, tiny)) + np.log(prior)
        stable = np.exp(logs - logs.max(axis=-1, keepdims=True))
        joint = np.where(total > 0, joint, stable)
        total = joint.sum(axis=-1, keepdims=True)
    return joint / total


def report_posteriors(confusion: np.ndarray, prior: np.ndarray, reports: np.ndarray) -> np.ndarray:
    """Posterior over the true label given each agent's reported label (eq. 2).

    ``P[..., a, y] = prior[y] C[a, y, r_a] / sum_y' prior[y'] C[a, y', r_a]``.

    Parameters
    ----------
    confusion : ndarray of shape (A, K, K)
    prior : ndarray of shape (K,)
    reports : int ndarray of shape (..., A)

    Returns
    -------
    ndarray of shape (..., A, K)
    """
    reports = np.asarray(reports, dtype=np.intp)
    n_agents = confusion.shape[0]
    # columns[a, j, y] = C[a, y, j]: the likelihood of report j under each truth y
    columns = np.swapaxes(confusion, 1, 2)
    lik = columns[np.arange(n_agents), reports]  # (..., A, K)
    return normalise_joint(lik, prior)


def soft_report_posteriors(confusion: np.ndarray, prior: np.ndarray, probs: np.ndarray) -> np.ndarray:
    """Posterior when an agent reports a probability vector instead of one label.

    The report is treated as a mixture of label reports:
    ``P[..., a, y] ∝ prior[y] * sum_j C[a, y, j] probs[..., a, j]``.  A one-hot vector
    gives exactly :func:`report_posteriors`.

    Parameters
    ----------
    confusion : ndarray of shape (A, K, K)
    prior : ndarray of shape (K,)
    probs : ndarray of shape (..., A, K), rows summing to 1

    Returns
    -------
    ndarray of shape (..., A, K)
    """
    probs = np.asarray(probs, dtype=float)
    lik = np.einsum("ayj,...aj->...ay", confusion, probs)
    return normalise_joint(lik, prior)


def expected_risk(loss: np.ndarray, dist: np.ndarray) -> np.ndarray:
    """Expected loss of every decision under ``dist`` (eq. 3).

    ``R[..., d] = sum_y L[d, y] dist[..., y]``; returns shape (..., K).
    """
    return dist @ loss.T


def agent_risk(loss: np.ndarray, posteriors: np.ndarray, reports: np.ndarray) -> np.ndarray:
    """Each agent's risk of its own report under its own posterior, ``R_L(ŷ_a; P_a)``.

    posteriors : (..., A, K); reports : int (..., A).  Returns (..., A).
    """
    rows = loss[np.asarray(reports, dtype=np.intp)]  # (..., A, K): L[ŷ_a, y]
    return np.einsum("...ak,...ak->...a", rows, posteriors)


def dangerous_miss(loss: np.ndarray, posteriors: np.ndarray, reports: np.ndarray) -> np.ndarray:
    """The dangerous plausible miss of each agent (eq. 4).

    ``z_a = argmax_{y != ŷ_a} P_a(y) L[ŷ_a, y]``; ties go to the lowest label index
    (``np.argmax`` returns the first maximum).  Returns int array of shape (..., A).
    """
    reports = np.asarray(reports, dtype=np.intp)
    harm = posteriors * loss[reports]
    own = np.expand_dims(reports, -1)
    np.put_along_axis(harm, own, -np.inf, axis=-1)
    return np.argmax(harm, axis=-1)
