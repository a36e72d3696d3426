"""Rule agents (B.7) and the scenarios of Table 3."""
from __future__ import annotations

import numpy as np
import pytest

from common.errors import InputError
from dcem.synthetic.generator import generate
from dcem.synthetic.rule_agents import SCENARIO_NAMES, RuleAgents, sample_reports, scenario


def weight_of(name: str, scen_name: str) -> list[float]:
    scen = scenario(scen_name)
    r = scen.rule_names.index(name)
    return scen.weights[:, r].tolist()


def test_table3_spot_checks() -> None:
    assert weight_of("k0 <- x3 & x4", "S1") == [1.3, 0.0]
    assert weight_of("k0 <- x0 & x1 & !x2 & x3", "S1") == [0.0, 1.5]
    assert weight_of("k1 <- x6 & x7 & x9", "S3b") == [1.6, 0.0]
    assert weight_of("k2 <- x1 & x3", "S3b") == [1.5, 1.1]  # held by both: one coordinate
    assert weight_of("k2 <- x1 & x3", "S3a") == [1.3, 1.0]
    assert weight_of("k2 <- x4 & x7 & x9", "S2") == [0.0, 1.7]


def test_s2_agent2_keeps_both_copies_of_its_duplicate_rule() -> None:
    assert weight_of("k2 <- x1 & x3", "S2") == [0.0, 1.2]
    assert weight_of("k2 <- x1 & x3 (#2)", "S2") == [0.0, 1.3]


def test_rule_counts_match_table3() -> None:
    counts = {s: scenario(s).held.sum(axis=1).tolist() for s in SCENARIO_NAMES}
    assert counts == {"S1": [5, 4], "S2": [5, 5], "S3a": [5, 5], "S3b": [4, 4]}
    assert len(scenario("S3b").rules) == 5  # three rules shared by both agents
    with pytest.raises(InputError):
        scenario("S4")


def test_sampling_frequencies_match_the_softmax() -> None:
    data = generate(50, np.random.default_rng(0))
    probe = RuleAgents(scenario("S3a"), data.features, np.random.default_rng(0)).probabilities()
    i = int(np.argmax(probe.max(axis=2).min(axis=1)))  # a case where both agents lean
    n = 40000
    feats = np.repeat(data.features[i:i + 1], n, axis=0)
    agents = RuleAgents(scenario("S3a"), feats, np.random.default_rng(5))
    probs = agents.probabilities()[0]  # (A, K), same for every copy
    assert probs.max() > 0.5
    freq = np.stack([np.bincount(agents.report(1)[:, a], minlength=3) / n for a in range(2)])
    np.testing.assert_allclose(freq, probs, atol=0.012)


def test_gumbel_sampler_on_fixed_scores() -> None:
    scores = np.tile(np.log([0.6, 0.3, 0.1]), (60000, 1))
    freq = np.bincount(sample_reports(scores, np.random.default_rng(1)), minlength=3) / 60000
    np.testing.assert_allclose(freq, [0.6, 0.3, 0.1], atol=0.01)


def test_weights_are_copied_per_case() -> None:
    data = generate(4, np.random.default_rng(0))
    agents = RuleAgents(scenario("S1"), data.features, np.random.default_rng(0))
    assert agents.weights.shape == (4, 2, len(scenario("S1").rules))
    agents.weights[0, 0] += 1.0
    assert not np.allclose(agents.weights[0], agents.weights[1])
    assert scenario("S1").weights[0].tolist() == agents.weights[1, 0].tolist()
