"""The MAP world: agents report the label of largest score (App. B.7), ties at random."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from dcem.analysis.synthetic_markdown import world_label
from common.errors import ConfigError, InputError
from dcem.store.database import Store
from dcem.synthetic.experiment import run_cell
from dcem.synthetic.rule_agents import RuleAgents, map_reports, scenario
from dcem.synthetic.generator import generate
from dcem.synthetic.spec import SyntheticSpec, run_synthetic


def test_map_reports_take_the_top_label_and_break_ties_at_random() -> None:
    scores = np.array([[0.0, 2.0, 1.0], [0.0, 0.0, 0.0]])
    rng = np.random.default_rng(0)
    draws = np.array([map_reports(scores, rng) for _ in range(300)])
    assert (draws[:, 0] == 1).all()
    counts = np.bincount(draws[:, 1], minlength=3)
    assert (counts > 60).all()  # an all-zero row is a three-way tie, not label 0


def test_map_agents_report_their_mode() -> None:
    data = generate(400, np.random.default_rng(1))
    agents = RuleAgents(scenario("S2"), data.features, np.random.default_rng(2), reports="map")
    said = agents.report(1)
    scores = agents.scores()
    top = scores.max(axis=-1)
    assert (np.take_along_axis(scores, said[..., None], axis=-1)[..., 0] == top).all()
    with pytest.raises(InputError):
        RuleAgents(scenario("S2"), data.features, np.random.default_rng(2), reports="mode")


def test_the_map_world_runs_records_itself_and_keeps_earlier_run_ids(tmp_path: Path) -> None:
    sampled = SyntheticSpec(scenarios=("S2",), seeds=(0,), n_train=600, n_eval=40, ablation=False, t_max=4,
                            free_rounds=4)
    mapped = SyntheticSpec(**{**sampled.__dict__, "reports": "map"})
    assert "reports" not in sampled.to_dict() and mapped.to_dict()["reports"] == "map"
    assert mapped.run_id() != sampled.run_id()
    with pytest.raises(ConfigError):
        SyntheticSpec(reports="mode")
    with Store(tmp_path / "s.duckdb") as store:
        summary = run_synthetic(store, mapped)
        assert summary.complete
    cell = run_cell("S2", 0, n_train=600, n_eval=40, ablation=False, t_max=4, free_rounds=4, reports="map")
    again = run_cell("S2", 0, n_train=600, n_eval=40, ablation=False, t_max=4, free_rounds=4, reports="map")
    assert cell.info["reports"] == "map"
    assert np.array_equal(cell.methods["dcem"].outcome_decision, again.methods["dcem"].outcome_decision)
    assert "MAP reports" in world_label({"reports": "map"})
