"""What a label-free estimate must agree with: the invariances the reports and the
labelled cases allow (:mod:`dcem.calibration.dawid_skene` calls these).

Two agents.  Which of two agents is right when they disagree cannot be told from their
reports alone: any joint table of two agents' reports is reproduced exactly, with the
agents conditionally independent, by "agent 1 is always right" (the truth is agent 1's
report, agent 2's matrix is its reports given agent 1's) and just as well by "agent 2 is
always right".  A model with fewer parameters (one-coin) picks one of the two only
through its assumption that errors are spread evenly, which real agents do not follow
(the shipped views run: agent 1 right on 41 % of the cases, agent 2 on 91 %, and one-coin
put agent 1 first).  So with two agents :func:`check_two_agents` asks for labelled cases
that settle it: cases on which exactly one of the two is right, enough for a two-sided
sign test at :data:`LEVEL` to say which of them is right more often.  The fewest that can
is :data:`MIN_DECISIVE` (6 cases, all for the same agent: p = 2 / 2^6 = 0.031; 5 give
0.063); a split needs more (8 to 1, 15 to 5 ...).

Every estimate (any number of agents) is then checked (each a problem in words):

* :func:`order_problems`: for every pair of agents whose order the labelled cases settle
  by the same sign test, the estimate must rank them the same way (estimated accuracy:
  the expected share of cases an agent gets right, :func:`estimated_accuracy`);
* :func:`agreement_problems`: conditionally independent agents with matrices ``C_a`` and
  prior ``pi`` agree on a case with probability ``sum_y pi[y] sum_j C_a[y, j] C_b[y, j]``;
  the EM's fit (its expected counts, before smoothing, which pulls every matrix toward
  uniform rows and is shared with counted matrices) must reproduce every pair's observed
  agreement rate within the sampling error of a rate over N cases: ``z * sqrt(q (1 - q) /
  N)``, ``q`` the observed rate with one agreement and one disagreement added (so 0 and 1
  still have a spread) and ``z`` the two-sided 5 % normal quantile split over the pairs
  (Bonferroni: 2.39 for three pairs);
* :func:`agreement_order_problems` (three or more agents): under conditional independence
  with errors spread evenly, ``agreement(a, c) - agreement(b, c) = (K - 1) / K * q_c *
  (q_a - q_b)`` with ``q = (K acc - 1) / (K - 1)``, so the agent that agrees with the others
  more often is the more accurate one.  Where that evidence settles a pair (the same sign
  test, over the cases on which one of the two agrees with more of the other agents than
  the other does), the estimate must rank them the same way.  Weaker evidence is not used:
  on the shipped panel of three, the agreement with the third member pointed against the
  labels for the two strong members in 13 of the 20 cells (their errors are not
  independent given the truth), and a rule that used it refused correct estimates.

What is not checked, because the data cannot: the order of two agents that neither the
labelled cases nor the agreement evidence settles.  An estimate may rank such a pair
either way.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from common.errors import InputError

__all__ = ["LEVEL", "MIN_DECISIVE", "agent_names", "agreement_evidence", "agreement_order_problems",
           "agreement_problems", "check_two_agents", "decisive", "estimated_accuracy", "fitted", "order_problems",
           "sign_test"]

LEVEL = 0.05
"""Two-sided level of the sign tests and of the agreement tolerance (over all pairs)."""
MIN_DECISIVE = 6
"""The fewest labelled cases on which exactly one of two agents is right that can settle
which one is right more often at :data:`LEVEL` (all six for the same agent)."""


def agent_names(names: Sequence[str] | None, n_agents: int) -> list[str]:
    """The agents' names for messages: the given ones, else ``agent 1`` ... ``agent A``."""
    if names is None:
        return [f"agent {i + 1}" for i in range(n_agents)]
    if len(names) != n_agents:
        raise InputError("agents", f"{len(names)} agent names for {n_agents} agents")
    return [str(n) for n in names]


def sign_test(wins_a: int, wins_b: int) -> float:
    """Two-sided p-value of ``wins_a`` against ``wins_b`` under equal chances (1 when none)."""
    if wins_a + wins_b == 0:
        return 1.0
    from scipy.stats import binomtest

    return float(binomtest(int(wins_a), int(wins_a + wins_b), 0.5).pvalue)


def decisive(reports: np.ndarray, truth: np.ndarray, a: int, b: int) -> tuple[int, int]:
    """Labelled cases on which agent ``a`` is right and ``b`` wrong, and the other way round."""
    labelled = truth >= 0
    right_a = reports[labelled, a] == truth[labelled]
    right_b = reports[labelled, b] == truth[labelled]
    return int((right_a & ~right_b).sum()), int((right_b & ~right_a).sum())


def check_two_agents(reports: np.ndarray, truth: np.ndarray, names: Sequence[str]) -> None:
    """Refuse a two-agent estimate unless its labelled cases settle which agent is right
    more often when exactly one of them is (see the module docstring)."""
    if reports.shape[1] != 2:
        return
    wins = decisive(reports, truth, 0, 1)
    if sum(wins) >= MIN_DECISIVE and sign_test(*wins) < LEVEL:
        return
    have = (f"this set has {sum(wins)} ({wins[0]} for '{names[0]}', {wins[1]} for '{names[1]}')" if sum(wins)
            else "this set has none")
    raise InputError("agents", "with two agents the reports alone cannot tell which one is right when they disagree "
                     "(\"the first is always right\" and \"the second is always right\" explain them equally well), "
                     "so an estimate without labels could swap which agent is reliable; it needs labelled cases on "
                     "which exactly one of the two is right, enough for a sign test at 5 % to say which: at least "
                     f"{MIN_DECISIVE}, all for the same agent (a split needs more), and {have}. Label such cases "
                     "(they are among the escalated ones), or count a fully labelled set")


def estimated_accuracy(reports: np.ndarray, post: np.ndarray) -> np.ndarray:
    """Each agent's accuracy as the EM estimates it: the expected share of the cases on
    which its report is the true class, ``mean_n P(y_n = r_an)`` (the fitted matrices'
    ``sum_y prior[y] C[a, y, y]`` before smoothing, which would pull every agent toward
    chance by an amount that depends on the class sizes and can reorder near ties)."""
    return post[np.arange(reports.shape[0])[:, None], reports].mean(axis=0)


def fitted(reports: np.ndarray, post: np.ndarray, n_labels: int) -> tuple[np.ndarray, np.ndarray]:
    """The EM's own matrices and prior, before smoothing: expected counts normalised (a
    class with no weight gets a uniform row; its prior is 0, so it changes nothing)."""
    counts = np.einsum("ny,nar->ayr", post, np.eye(n_labels)[reports])
    totals = counts.sum(axis=2, keepdims=True)
    confusion = np.where(totals > 0, counts / np.where(totals > 0, totals, 1.0), 1.0 / n_labels)
    return confusion, post.mean(axis=0)


def order_problems(reports: np.ndarray, truth: np.ndarray, accuracy: np.ndarray,
                   names: Sequence[str]) -> list[str]:
    """Pairs whose order the labelled cases settle (sign test at :data:`LEVEL`) and the
    estimate ranks otherwise."""
    out = []
    for a in range(reports.shape[1]):
        for b in range(a + 1, reports.shape[1]):
            wins = decisive(reports, truth, a, b)
            if sign_test(*wins) >= LEVEL:
                continue
            better, worse = (a, b) if wins[0] > wins[1] else (b, a)
            if accuracy[better] <= accuracy[worse]:
                out.append(f"the estimate ranks '{names[worse]}' (accuracy {accuracy[worse]:.3f}) at or above "
                           f"'{names[better]}' ({accuracy[better]:.3f}), but on the labelled cases where only one "
                           f"of the two is right, '{names[better]}' is right {max(wins)} times and "
                           f"'{names[worse]}' {min(wins)} (sign test p = {sign_test(*wins):.3f})")
    return out


def _agreement(reports: np.ndarray) -> np.ndarray:
    a = reports.shape[1]
    return np.array([[np.sum(reports[:, i] == reports[:, j]) for j in range(a)] for i in range(a)])


def agreement_problems(reports: np.ndarray, post: np.ndarray, n_labels: int, names: Sequence[str]) -> list[str]:
    """Pairs whose observed agreement rate the EM's fit does not reproduce within the
    tolerance of the module docstring."""
    from scipy.stats import norm

    n, a = reports.shape
    pairs = a * (a - 1) // 2
    if pairs == 0:
        return []
    confusion, prior = fitted(reports, post, n_labels)
    implied = np.einsum("y,ayj,byj->ab", prior, confusion, confusion)
    observed = _agreement(reports)
    z = float(norm.ppf(1 - LEVEL / 2 / pairs))
    out = []
    for i in range(a):
        for j in range(i + 1, a):
            q = (observed[i, j] + 1) / (n + 2)
            tolerance = z * np.sqrt(q * (1 - q) / n)
            if abs(implied[i, j] - observed[i, j] / n) > tolerance:
                out.append(f"'{names[i]}' and '{names[j]}' agree on {observed[i, j] / n:.1%} of the cases, but the "
                           f"estimate implies {implied[i, j]:.1%} (tolerance {tolerance:.1%}): the agents do not "
                           "look conditionally independent given the truth, as the model assumes")
    return out


def agreement_evidence(reports: np.ndarray, a: int, b: int) -> tuple[int, int]:
    """Cases on which agent ``a`` agrees with more of the other agents than ``b`` does, and
    the other way round (none with two agents)."""
    others = [c for c in range(reports.shape[1]) if c not in (a, b)]
    score = sum(((reports[:, a] == reports[:, c]).astype(int) - (reports[:, b] == reports[:, c]) for c in others),
                np.zeros(reports.shape[0], dtype=int))
    return int((score > 0).sum()), int((score < 0).sum())


def agreement_order_problems(reports: np.ndarray, accuracy: np.ndarray, names: Sequence[str]) -> list[str]:
    """Three or more agents: pairs the estimate ranks against an order their agreement with
    the other agents settles (see the module docstring)."""
    out = []
    for i in range(reports.shape[1]):
        for j in range(i + 1, reports.shape[1]):
            more = agreement_evidence(reports, i, j)
            if sign_test(*more) >= LEVEL:
                continue
            better, worse = (i, j) if more[0] > more[1] else (j, i)
            if accuracy[better] <= accuracy[worse]:
                out.append(f"the estimate ranks '{names[worse]}' (accuracy {accuracy[worse]:.3f}) at or above "
                           f"'{names[better]}' ({accuracy[better]:.3f}), but '{names[better]}' agrees with more of "
                           f"the other agents on {max(more)} cases and '{names[worse]}' on {min(more)} (sign test "
                           f"p = {sign_test(*more):.3f}), which for conditionally independent agents means "
                           f"'{names[better]}' is the more accurate")
    return out
