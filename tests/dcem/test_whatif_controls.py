"""The what-if settings model: untouched settings reproduce the run exactly, a moved
parameter applies to every cell while the others stay per cell, and parameters a replay
cannot be moved by are named with the reason."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dcem.analysis.whatif import RunReplay, baseline_metrics, load_run_replay, pair_moves, rescore, sweep
from dcem.analysis.whatif_controls import (PAGE_PARAMETERS, changed_configs, inert_parameters, losses_differ,
                                           per_cell_values, run_settings, scope_note, settings_changes)
from dcem.core.replay import score_reports
from common.errors import ConfigError, InputError
from dcem.store.database import Store

from .small_run import RUN_ID, small_run_file, small_run_store  # noqa: F401


@pytest.fixture()
def replay(small_run_store: Store) -> RunReplay:
    return load_run_replay(small_run_store, RUN_ID)


def test_no_changes_reproduce_the_run_exactly(replay: RunReplay) -> None:
    spread = per_cell_values(replay)
    assert {"eps_safe", "eps_low"} <= set(spread) and "alpha" not in spread  # thresholds are fitted per cell
    reference = run_settings(replay)
    assert list(reference) == list(PAGE_PARAMETERS)
    assert settings_changes(dict(reference), reference) == {}
    got = rescore(replay, changes={})
    assert got.metrics == baseline_metrics(replay)
    pd.testing.assert_frame_equal(got.outcomes, rescore(replay).outcomes)
    # the old page's way (the first cell's configuration for every cell) does not reproduce the run
    assert rescore(replay, config=replay.cells[0].config).metrics != baseline_metrics(replay)


def test_a_changed_parameter_applies_to_every_cell_and_the_rest_stay_per_cell(replay: RunReplay) -> None:
    cfgs = changed_configs(replay, {"m_safe": 0.05})
    assert [c.m_safe for c in cfgs] == [0.05] * len(replay.cells)
    assert [c.eps_safe for c in cfgs] == [cell.config.eps_safe for cell in replay.cells]
    got = rescore(replay, changes={"m_safe": 0.05}).outcomes
    start = 0
    for cell, cfg in zip(replay.cells, cfgs):
        sc = score_reports(cell.panel, np.asarray(cell.reports), cfg)
        assert got["rounds"].iloc[start:start + cell.n_cases].tolist() == sc.outcome_round.tolist()
        start += cell.n_cases
    noesc = _as_noesc(replay)
    assert all(not c.escalation for c in changed_configs(noesc, {"delta": 0.5}))


def _as_noesc(replay: RunReplay) -> RunReplay:
    return RunReplay(replay.run_id, "dcem_noesc", tuple(replay.cells))


def test_an_invalid_change_names_the_parameter_and_the_cell(replay: RunReplay) -> None:
    low = min(c.config.eps_low for c in replay.cells)
    with pytest.raises(ConfigError, match=r"must be smaller than eps_low .*\(cell S\w+/seed \d\)") as info:
        rescore(replay, changes={"eps_safe": low})
    assert info.value.field == "eps_safe"
    with pytest.raises(ConfigError) as info:
        changed_configs(replay, {"eps_sfe": 1.0})
    assert info.value.field == "eps_sfe"
    with pytest.raises(ConfigError):
        settings_changes({"prior": "uniform"}, run_settings(replay))
    with pytest.raises(InputError, match="not both"):
        rescore(replay, config=replay.cells[0].config, changes={})


def test_sweep_with_changes_sets_the_parameter_in_every_cell(replay: RunReplay) -> None:
    table = sweep(replay, parameter="m_safe", values=[0.0, 0.2, 99.0], changes={"alpha": 0.5})
    for _, row in table.iterrows():
        expected = rescore(replay, changes={"alpha": 0.5, "m_safe": row["value"]}).metrics
        assert row["certified_rate"] == expected["certified_rate"]
    low = min(c.config.eps_low for c in replay.cells)
    # eps_low left per cell: a cell whose eps_low is not above the swept eps_safe gets it raised, so the value counts
    assert sweep(replay, parameter="eps_safe", values=[0.0, low], changes={})["valid"].tolist() == [True, True]
    assert pair_moves(replay, {}, "eps_safe", [0.0, low]) == 1
    # eps_low set for every cell: a swept eps_safe at or above it is invalid
    assert sweep(replay, parameter="eps_safe", values=[0.0, low], changes={"eps_low": low})["valid"].tolist() == \
        [True, False]


def test_inert_parameters_and_their_reasons() -> None:
    assert inert_parameters(12, True) == {}
    noesc = inert_parameters(12, False)
    assert set(noesc) == {"delta", "window", "s_asym", "steer_gate"}
    assert "without escalation" in noesc["delta"]
    one = inert_parameters(1, True)
    assert set(one) == {"delta", "window", "s_asym", "steer_gate", "t_max"}
    assert "one round" in one["t_max"]
    values = {"delta": 9.0, "alpha": 2.0}
    assert settings_changes(values, {"delta": 0.2, "alpha": 1.0}, noesc) == {"alpha": 2.0}


def test_scope_note_says_what_is_per_cell(replay: RunReplay) -> None:
    spread = per_cell_values(replay)
    untouched = scope_note({}, spread)
    assert untouched.startswith("Nothing changed") and "eps_safe" in untouched
    moved = scope_note({"eps_safe": 0.5}, spread)
    assert moved.startswith("Set for every cell: eps_safe = 0.5.")
    assert "keeps its own eps_low" in moved and "eps_safe" not in moved.split("keeps its own")[1]
    assert not losses_differ(replay)
