"""One (scenario, seed) cell end to end: determinism, matching, isolation, behaviour."""
from __future__ import annotations

import numpy as np
import pytest

from dcem.core.replay import score_reports
from dcem.core.results import METHODS, ScenarioResult
from common.errors import InputError
from dcem.synthetic.experiment import ABLATION_XI, CHECKPOINTS, run_cell

SMALL = {"n_train": 4000, "n_eval": 60}


@pytest.fixture(scope="module")
def cell() -> ScenarioResult:
    return run_cell("S2", 3, **SMALL)


def test_result_layout(cell: ScenarioResult) -> None:
    assert tuple(cell.methods) == METHODS
    assert cell.case_ids[0] == "S2-s3-000" and len(cell.case_ids) == 60
    assert cell.features.shape == (60, 10) and cell.truth.shape == (60,)
    assert cell.methods["dcem"].reports.shape == (60, 12, 2)
    assert cell.methods["free"].reports.shape == (60, 22, 2)
    assert cell.methods["single"].reports.shape == (60, 1, 2)
    assert len(cell.ablation) == len(ABLATION_XI) * len(CHECKPOINTS)
    row = cell.ablation[0]
    assert {"xi", "horizon", "A1", "A2", "risk", "sa_hr", "escalation_rate"} <= set(row)
    assert cell.info["threshold_fit"]["n_cases"] == 800
    assert cell.config.escalation is True


def test_round_one_reports_are_matched_across_methods(cell: ScenarioResult) -> None:
    first = cell.methods["dcem"].reports[:, 0]
    for run in cell.methods.values():
        np.testing.assert_array_equal(run.reports[:, 0], first)


def test_single_baseline_uses_calibration_best_agent(cell: ScenarioResult) -> None:
    best = int(np.argmax(cell.info["calibration_accuracy"]))
    np.testing.assert_array_equal(cell.methods["single"].outcome_decision,
                                  cell.methods["dcem"].reports[:, 0, best])


def test_mediated_runs_replay_to_the_same_outcome(cell: ScenarioResult) -> None:
    for method, esc in (("dcem", True), ("dcem_noesc", False)):
        run = cell.methods[method]
        sc = score_reports(cell.panel, run.reports, cell.config.with_changes(escalation=esc))
        np.testing.assert_array_equal(sc.outcome_action, run.outcome_action)
        np.testing.assert_array_equal(sc.outcome_decision, run.outcome_decision)
        np.testing.assert_array_equal(sc.outcome_round, run.outcome_round)
    assert (cell.methods["dcem_noesc"].outcome_action != 3).all()


def test_same_seed_identical_other_seed_different(cell: ScenarioResult) -> None:
    again = run_cell("S2", 3, **SMALL)
    for m in METHODS:
        np.testing.assert_array_equal(again.methods[m].reports, cell.methods[m].reports)
        assert again.methods[m].metrics == cell.methods[m].metrics
    assert again.ablation == cell.ablation and again.config == cell.config
    other = run_cell("S2", 4, **SMALL, ablation=False)
    assert not np.array_equal(other.truth, cell.truth)
    assert not np.array_equal(other.methods["dcem"].reports, cell.methods["dcem"].reports)


def test_scenarios_share_cases_and_eval_size_does_not_touch_calibration(cell: ScenarioResult) -> None:
    s3b = run_cell("S3b", 3, **SMALL, ablation=False)
    np.testing.assert_array_equal(s3b.features, cell.features)
    np.testing.assert_array_equal(s3b.truth, cell.truth)
    fewer = run_cell("S2", 3, n_train=4000, n_eval=25, ablation=False)
    assert fewer.config == cell.config  # thresholds never see evaluation cases
    np.testing.assert_array_equal(fewer.panel.confusion, cell.panel.confusion)
    np.testing.assert_array_equal(fewer.truth, cell.truth[:25])


def test_bad_arguments() -> None:
    with pytest.raises(InputError):
        run_cell("S9", 0)
    with pytest.raises(InputError):
        run_cell("S1", -1)


def test_correctable_scenarios_certify_while_shared_bias_s3b_escalates() -> None:
    """Seeds 0-9, measured: in the specification's world S2 certifies 0.91 of cases and
    S3b escalates 1.00, certifying none; in the sharpened world S1 certifies 0.86, S2
    0.98 and S3b escalates 0.69."""
    def mean(scen: str, key: str, sharpness: float) -> float:
        return float(np.mean([run_cell(scen, seed, ablation=False, sharpness=sharpness).methods["dcem"].metrics[key]
                              for seed in (0, 1)]))
    assert mean("S2", "certified_rate", 1.0) > 0.6
    assert mean("S3b", "escalation_rate", 1.0) > 0.8
    assert mean("S3b", "certified_rate", 1.0) == 0.0
    assert mean("S3b", "escalation_rate", 1.0) > mean("S2", "escalation_rate", 1.0) + 0.5
    assert mean("S1", "certified_rate", 3.0) > 0.6
    assert mean("S3b", "escalation_rate", 3.0) > mean("S1", "escalation_rate", 3.0) + 0.4
