"""The rule-guided generator of Appendix D.1 / Table 2."""
from __future__ import annotations

import numpy as np
import pytest

from common.errors import InputError
from dcem.synthetic.generator import (
    GROUND_TRUTH_RULES,
    LABELS,
    SyntheticData,
    generate,
    rule_activations,
    synthetic_loss,
)


@pytest.fixture(scope="module")
def data() -> SyntheticData:
    return generate(5000, np.random.default_rng(11))


def test_every_sample_satisfies_the_validity_rule(data: SyntheticData) -> None:
    rules = [r for r, _ in GROUND_TRUTH_RULES]
    phi = rule_activations(data.features, rules)
    consequent = np.array([r.consequent for r in rules])
    own = phi & (consequent[None, :] == data.labels[:, None])
    other = phi & (consequent[None, :] != data.labels[:, None])
    assert own.any(axis=1).all()
    assert not other.any()
    np.testing.assert_array_equal(phi, data.fired)


def test_shapes_types_and_rare_high_cost_class(data: SyntheticData) -> None:
    assert data.features.shape == (5000, 10) and data.features.dtype == np.int8
    assert set(np.unique(data.features)) <= {0, 1}
    rates = np.bincount(data.labels, minlength=3) / len(data)
    assert rates[0] < 0.3 and rates[0] < rates[1] and rates[0] < rates[2]
    assert 0.15 < rates[0]  # rare but present: about 21%
    assert LABELS == ("k0", "k1", "k2")


def test_fired_rule_ids_are_one_based_table_ids(data: SyntheticData) -> None:
    i = int(np.flatnonzero(data.labels == 0)[0])
    ids = data.fired_rule_ids(i)
    assert ids and set(ids) <= {1, 2}


def test_table2_rules_and_names() -> None:
    names = [r.name() for r, _ in GROUND_TRUTH_RULES]
    assert names[0] == "k0 <- x0 & x1 & !x2 & x3"
    assert names[1] == "k0 <- x3 & x4 & x7 & !x9"
    assert [w for _, w in GROUND_TRUTH_RULES] == [1.5, 1.5, 1.4, 1.6, 1.7, 1.3]


def test_same_rng_same_data_and_n_is_respected() -> None:
    a = generate(300, np.random.default_rng(3))
    b = generate(300, np.random.default_rng(3))
    np.testing.assert_array_equal(a.features, b.features)
    assert len(generate(0, np.random.default_rng(0))) == 0
    with pytest.raises(InputError):
        generate(-1, np.random.default_rng(0))


def test_loss_is_the_table4_three_level_loss() -> None:
    loss = synthetic_loss()
    np.testing.assert_array_equal(loss, [[0, 1, 1], [3, 0, 1], [3, 1, 0]])
