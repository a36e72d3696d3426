"""Every kind of run is named by one spec protocol (common.work.Spec): a frozen dataclass,
checked when made, whose run id hashes its dict: the same spec names the same run, a
changed field names another, and a bad field is refused naming it."""
from __future__ import annotations

import dataclasses

import pytest

from common.errors import ConfigError
from common.work import Spec
from dcem.core.config import MediatorConfig
from dcem.synthetic.spec import SyntheticSpec
from dcem_clinical.spec import ClinicalSpec
from sag.group.config import preset
from sag.evaluation.suite import SuiteSpec
from sag.runs.run import SagRunSpec

CLINICAL = dict(dataset="ddxplus8", scenarios=("S1",), seeds=(0,), n_cal=8, n_test=4, agents=("a", "b"),
                base_config=MediatorConfig(prior="empirical", t_max=3))
CASES = [
    (SyntheticSpec, dict(seeds=(0, 1)), "seeds", (0, 2), "seeds", (-1,)),
    (ClinicalSpec, CLINICAL, "n_test", 5, "n_test", 0),
    (SagRunSpec, dict(benchmark="medqa", cfg=preset("sag-6"), n_items=3, seed=1), "seed", 2, "items", 0),
    (SuiteSpec, dict(suite="accuracy", n_items=3), "n_items", 4, "items", 0),
]


@pytest.mark.parametrize("cls, fields, name, other, bad_name, bad", CASES, ids=[c[0].__name__ for c in CASES])
def test_each_spec_is_frozen_checked_and_hashed_to_its_run_id(cls: type, fields: dict, name: str, other: object,
                                                              bad_name: str, bad: object) -> None:
    spec = cls(**fields)
    assert isinstance(spec, Spec) and dataclasses.is_dataclass(spec)
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(spec, name, other)
    assert spec.run_id() == cls(**fields).run_id() and isinstance(spec.to_dict(), dict)
    assert cls(**{**fields, name: other}).run_id() != spec.run_id()
    with pytest.raises(ConfigError) as caught:
        cls(**{**fields, ("n_items" if bad_name == "items" else bad_name): bad})
    assert caught.value.field == bad_name
