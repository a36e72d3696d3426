"""What a label-free estimate must agree with (dcem.calibration.label_free_checks): two
agents need labelled cases that settle which one is right, and every estimate must keep
the order the labels settle, reproduce the agents' agreement rates and, with three or
more agents, the order their agreement with the others settles."""
from __future__ import annotations

import numpy as np
import pytest

from common.errors import InputError
from dcem.calibration import dawid_skene
from dcem.calibration import label_free_checks as checks
from dcem.calibration.dawid_skene import estimate_without_labels

K = 3


def _reports(n: int, accuracies: tuple[float, ...], seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Agents right with the given probabilities, errors spread evenly over the other classes."""
    rng = np.random.default_rng(seed)
    truth = rng.choice(K, n, p=(0.5, 0.3, 0.2))
    reports = np.stack([np.where(rng.random(n) < acc, truth, (truth + rng.integers(1, K, n)) % K)
                        for acc in accuracies], axis=1)
    return truth, reports


def test_six_decisive_cases_for_one_agent_is_the_fewest_a_sign_test_at_5_percent_accepts() -> None:
    assert checks.MIN_DECISIVE == 6 and checks.LEVEL == 0.05
    assert checks.sign_test(6, 0) < checks.LEVEL <= checks.sign_test(5, 0)
    assert checks.sign_test(6, 1) >= checks.LEVEL and checks.sign_test(8, 1) < checks.LEVEL  # a split needs more
    assert checks.sign_test(0, 0) == 1.0


def test_two_agents_without_settling_labels_are_refused_before_the_em_with_the_number_needed(
        monkeypatch: pytest.MonkeyPatch) -> None:
    truth, reports = _reports(200, (0.4, 0.9), seed=1)
    monkeypatch.setattr(dawid_skene, "_em_posteriors", lambda *a: pytest.fail("the EM ran"))
    with pytest.raises(InputError) as info:
        estimate_without_labels(reports, K, method="one-coin", agents=("complaint", "history"))
    text = str(info.value)
    assert info.value.field == "agents" and "cannot tell which one is right when they disagree" in text
    assert "at least 6, all for the same agent" in text and "this set has none" in text
    # five labelled cases where only 'history' is right are one short; a split of 6 to 1 does not settle it
    decisive = np.flatnonzero((reports[:, 1] == truth) & (reports[:, 0] != truth))
    seeded = np.full(200, -1)
    seeded[decisive[:5]] = truth[decisive[:5]]
    with pytest.raises(InputError, match=r"this set has 5 \(0 for 'complaint', 5 for 'history'\)"):
        estimate_without_labels(reports, K, method="one-coin", truth=seeded, agents=("complaint", "history"))
    other = np.flatnonzero((reports[:, 0] == truth) & (reports[:, 1] != truth))[0]
    seeded[decisive[5]], seeded[other] = truth[decisive[5]], truth[other]
    with pytest.raises(InputError, match=r"this set has 7 \(1 for 'complaint', 6 for 'history'\)"):
        estimate_without_labels(reports, K, method="one-coin", truth=seeded, agents=("complaint", "history"))


def test_two_agents_whose_labels_settle_the_order_are_estimated_and_ranked_as_the_labels_say() -> None:
    truth, reports = _reports(400, (0.6, 0.9), seed=2)
    seeded = np.where(np.arange(400) < 60, truth, -1)  # 60 labelled cases, enough decisive ones
    assert checks.sign_test(*checks.decisive(reports, seeded, 0, 1)) < checks.LEVEL
    est = estimate_without_labels(reports, K, method="one-coin", truth=seeded)
    assert est.usable, est.problems
    accuracy = checks.estimated_accuracy(reports, est.posteriors)
    assert accuracy[1] > accuracy[0]


def test_an_estimate_that_ranks_against_the_labels_is_refused_with_the_counts() -> None:
    """An EM that took agent 1's report for the truth (the two-agent failure of the issue):
    the labelled cases, where agent 2 is right far more often, refuse it."""
    truth, reports = _reports(300, (0.45, 0.9), seed=3)
    seeded = np.where(np.arange(300) < 40, truth, -1)
    post = np.eye(K)[reports[:, 0]].astype(float)
    post[seeded >= 0] = np.eye(K)[truth[seeded >= 0]]
    confusion, prior = dawid_skene._smoothed(reports, post, K, 0.5)
    problems = dawid_skene._problems(reports, seeded, post, confusion, prior, names=("a", "b"))
    ranked = [p for p in problems if p.startswith("the estimate ranks 'a'")]
    wins = checks.decisive(reports, seeded, 0, 1)
    assert wins[1] > wins[0] and len(ranked) == 1
    assert f"'b' is right {wins[1]} times and 'a' {wins[0]} (sign test p = " in ranked[0]


def test_an_estimate_that_does_not_reproduce_the_agreement_rates_is_refused() -> None:
    """Posteriors that ignore the reports (every case equally likely every class) fit
    matrices under which agents agree only by chance; these agree on most cases."""
    truth, reports = _reports(300, (0.85, 0.8, 0.75), seed=4)
    post = np.full((300, K), 1.0 / K)
    problems = checks.agreement_problems(reports, post, K, ["a", "b", "c"])
    assert len(problems) == 3 and all("the agents do not look conditionally independent" in p for p in problems)
    observed = np.mean(reports[:, 0] == reports[:, 1])
    assert f"agree on {observed:.1%} of the cases" in problems[0]
    est = estimate_without_labels(reports, K, method="dawid-skene")
    assert est.usable and not checks.agreement_problems(reports, est.posteriors, K, ["a", "b", "c"])


def test_the_agreement_tolerance_is_a_bonferroni_normal_bound_on_a_rate() -> None:
    """Three pairs: z = 2.39; a fit off by just more than z standard errors is refused, just
    less is not."""
    truth, reports = _reports(400, (0.9, 0.7, 0.6), seed=5)
    est = estimate_without_labels(reports, K, method="dawid-skene")
    confusion, prior = checks.fitted(reports, est.posteriors, K)
    implied = float(np.einsum("y,yj,yj->", prior, confusion[0], confusion[1]))
    observed = float(np.mean(reports[:, 0] == reports[:, 1]))
    q = (observed * 400 + 1) / 402
    assert abs(implied - observed) < 2.394 * np.sqrt(q * (1 - q) / 400)
    assert not checks.agreement_problems(reports, est.posteriors, K, ["a", "b", "c"])


def test_an_estimate_ranked_against_a_settled_agreement_order_is_refused() -> None:
    """Three agents, the first clearly the best: it agrees with the others on many more
    cases than the third does.  Swapping their posteriors' roles ranks the third first."""
    truth, reports = _reports(400, (0.9, 0.7, 0.5), seed=6)
    more = checks.agreement_evidence(reports, 0, 2)
    assert more[0] > more[1] and checks.sign_test(*more) < checks.LEVEL
    post = np.eye(K)[reports[:, 2]].astype(float)  # "the third is always right"
    accuracy = checks.estimated_accuracy(reports, post)
    assert accuracy[2] > accuracy[0]
    problems = checks.agreement_order_problems(reports, accuracy, ["a", "b", "c"])
    assert any(p.startswith("the estimate ranks 'c'") and "'a' agrees with more of the other agents" in p
               for p in problems)
    assert not checks.agreement_order_problems(reports, checks.estimated_accuracy(reports, np.eye(K)[truth]),
                                               ["a", "b", "c"])


def test_two_agents_have_no_agreement_evidence() -> None:
    _, reports = _reports(100, (0.9, 0.5), seed=7)
    assert checks.agreement_evidence(reports, 0, 1) == (0, 0)
    assert not checks.agreement_order_problems(reports, np.array([0.1, 0.9]), ["a", "b"])


def test_names_must_match_the_agents() -> None:
    with pytest.raises(InputError, match="2 agent names for 3 agents"):
        estimate_without_labels(np.zeros((12, 3), dtype=int), K, agents=("a", "b"))
    assert checks.agent_names(None, 2) == ["agent 1", "agent 2"]
