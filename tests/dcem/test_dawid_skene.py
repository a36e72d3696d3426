"""Confusions without labels (dcem.calibration.dawid_skene): recovery, labels as seeds,
and the problems that make an estimate unfit (a panel too small, label switching,
agents worse than chance, too few cases) reported rather than used."""
from __future__ import annotations

import numpy as np
import pytest

from common.errors import InputError
from dcem.calibration import dawid_skene
from dcem.calibration.dawid_skene import estimate_without_labels
from dcem.calibration.fitting import estimate_confusion
from dcem.core.panel import Panel, three_level_loss

K = 3


def _one_coin(accuracy: float) -> np.ndarray:
    return np.full((K, K), (1 - accuracy) / (K - 1)) + np.eye(K) * (accuracy - (1 - accuracy) / (K - 1))


def _panel_reports(n: int, confusions: list[np.ndarray], rng: np.random.Generator,
                   prior: tuple[float, ...] = (0.5, 0.3, 0.2)) -> tuple[np.ndarray, np.ndarray]:
    truth = rng.choice(K, n, p=prior)
    reports = np.stack([np.array([rng.choice(K, p=c[y]) for y in truth]) for c in confusions], axis=1)
    return truth, reports


@pytest.mark.parametrize("method, tolerance, prior_tolerance", [("one-coin", 0.04, 0.03), ("dawid-skene", 0.16, 0.06)])
def test_the_matrices_and_prior_of_a_panel_are_recovered_without_labels(method: str, tolerance: float,
                                                                       prior_tolerance: float) -> None:
    """2,000 cases of three one-coin agents (70, 80, 60 % right): the counted matrices of
    the labelled truth are within 0.03 of the true ones; one-coin without labels is as
    close, the full model (27 free entries) within 0.16; a permuted solution would be off
    by 0.5 or more."""
    confusions = [_one_coin(0.7), _one_coin(0.8), _one_coin(0.6)]
    truth, reports = _panel_reports(2000, confusions, np.random.default_rng(0))
    assert np.abs(estimate_confusion(truth, reports, K) - np.stack(confusions)).max() < 0.04  # with labels
    est = estimate_without_labels(reports, K, method=method)
    assert est.usable and est.n_cases == 2000 and est.n_labelled == 0
    assert np.abs(est.confusion - np.stack(confusions)).max() < tolerance
    assert np.abs(est.prior - np.bincount(truth) / 2000).max() < prior_tolerance
    assert np.allclose(est.confusion.sum(axis=2), 1) and (est.confusion > 0).all()
    Panel(("a", "b", "c"), est.confusion, est.prior, three_level_loss(K, (2,), 3.0))  # the mediator accepts it
    # the case posteriors name the truth about as often as the best agent does
    assert (est.posteriors.argmax(axis=1) == truth).mean() > 0.78


def test_labelled_cases_are_fixed_to_their_truth() -> None:
    truth, reports = _panel_reports(300, [_one_coin(0.7), _one_coin(0.75), _one_coin(0.65)],
                                    np.random.default_rng(1))
    seeded = np.where(np.arange(300) < 30, truth, -1)
    for method in ("dawid-skene", "one-coin"):
        est = estimate_without_labels(reports, K, method=method, truth=seeded)
        assert est.n_labelled == 30 and est.usable
        assert (est.posteriors[:30] == np.eye(K)[truth[:30]]).all()


def test_agents_that_agree_on_a_shifted_answer_are_caught_by_the_labels() -> None:
    """Every agent mostly answers the next class: without labels the reports look like an
    accurate panel (one-coin takes no labels inside its EM); thirty labelled cases show the
    classes came out permuted, and the estimate is refused."""
    shift = np.roll(np.eye(K), 1, axis=1) * 0.7 + 0.1
    truth, reports = _panel_reports(400, [shift, shift, shift], np.random.default_rng(2))
    alone = estimate_without_labels(reports, K, method="one-coin")
    assert alone.usable  # nothing in the reports alone can tell
    seeded = estimate_without_labels(reports, K, method="one-coin", truth=np.where(np.arange(400) < 30, truth, -1))
    assert not seeded.usable and any("permuted against the labelled cases" in p for p in seeded.problems)


def test_a_permuted_solution_and_agents_worse_than_chance_are_named() -> None:
    rng = np.random.default_rng(3)
    truth, reports = _panel_reports(200, [_one_coin(0.8)] * 3, rng)
    post = np.eye(K)[(truth + 1) % K]  # an EM that came out with its classes rotated
    confusion, prior = dawid_skene._smoothed(reports, post, K, 0.5)
    problems = dawid_skene._problems(reports, np.full(200, -1), post, confusion, prior)
    assert any("permuted against the panel's majority vote" in p for p in problems)
    assert any("worse than chance" in p for p in problems)


def test_a_panel_too_small_or_too_few_cases_are_refused_or_reported() -> None:
    truth, reports = _panel_reports(60, [_one_coin(0.8)] * 3, np.random.default_rng(4))
    with pytest.raises(InputError) as info:
        estimate_without_labels(reports[:, :2], K, method="dawid-skene")
    assert info.value.field == "agents" and "use one-coin" in str(info.value)
    with pytest.raises(InputError) as info:  # two agents, no labels: which one is right is not identified
        estimate_without_labels(reports[:, :2], K, method="one-coin")
    assert info.value.field == "agents" and "at least 6, all for the same agent" in str(info.value)
    with pytest.raises(InputError):
        estimate_without_labels(reports[:, :1], K, method="one-coin")
    few = estimate_without_labels(reports[:6], K, method="one-coin")
    assert not few.usable and any("only 6 cases" in p for p in few.problems)


@pytest.mark.parametrize("kwargs, field", [
    ({"method": "em"}, "method"),
    ({"reports": np.zeros((5, 3))}, "reports"),
    ({"reports": np.zeros(5, dtype=int)}, "reports"),
    ({"reports": np.full((5, 3), 3)}, "reports"),
    ({"truth": np.zeros(4, dtype=int)}, "truth"),
    ({"truth": np.full(12, 3)}, "truth"),
    ({"truth": np.full(12, -2)}, "truth"),
])
def test_bad_input_names_its_field(kwargs: dict[str, object], field: str) -> None:
    args = {"reports": np.zeros((12, 3), dtype=int), "n_labels": K, **kwargs}
    with pytest.raises(InputError) as info:
        estimate_without_labels(**args)  # type: ignore[arg-type]
    assert info.value.field == field


def test_whether_an_estimate_is_usable_does_not_depend_on_the_smoothing_it_is_shown_with() -> None:
    """The fuzz test's find: near-chance agents whose estimate was 'worse than chance' at
    alpha 0.5 but not at 2, when the problems were judged on the shown smoothing."""
    rng = np.random.default_rng(7)
    n = int(rng.integers(15, 40))
    truth = rng.integers(0, 3, n)
    accuracy = rng.uniform(0.2, 0.6, 4)
    reports = np.stack([np.where(rng.random(n) < acc, truth, rng.integers(0, 3, n)) for acc in accuracy], axis=1)
    seeded = np.r_[truth[:3], np.full(n - 3, -1)]
    problems = {alpha: estimate_without_labels(reports, 3, truth=seeded, alpha=alpha).problems
                for alpha in (0.01, 0.25, 0.5, 2.0, 10.0)}
    assert len(set(problems.values())) == 1 and problems[0.5]
    shown = estimate_without_labels(reports, 3, truth=seeded, alpha=2.0)
    assert not np.allclose(shown.confusion, estimate_without_labels(reports, 3, truth=seeded).confusion)


def test_an_estimate_too_large_to_finish_soon_is_refused_before_the_em() -> None:
    """At the calibration file's caps crowd-kit took up to 110 s and 1.4 GB; such sizes are
    refused at once, with the numbers and what to change."""
    many = np.zeros((12_501, 2), dtype=np.int64)  # 25,002 reports x 200 labels
    with pytest.raises(InputError) as info:
        estimate_without_labels(many, 200, method="one-coin")
    assert info.value.field == "reports" and "5,000,400 report x label entries; the limit is 5,000,000" in str(info.value)
    wide = np.zeros((20, 11), dtype=np.int64)  # 11 agents x 200² = 440,000
    with pytest.raises(InputError, match="one-coin over 11 agents and 200 labels needs 440,000") as info:
        estimate_without_labels(wide, 200, method="one-coin")
    assert "use dawid-skene" in str(info.value)
    assert dawid_skene.MAX_REPORT_ENTRIES == 5_000_000 and dawid_skene.MAX_ONE_COIN_CELLS == 400_000
