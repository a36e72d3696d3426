"""What-if page: it opens on the run's own settings (every delta 0), a change moves the
metrics, parameters a replay cannot use are disabled with the reason, a reset restores
the run's settings, bad input is refused with a message while the last valid results
stay on screen, greyed; a loaded calibration set that fits the run is offered (and moves
the metrics only when used), one that does not fit is named with the reason."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from common.loss import three_level_form
from dcem.calibration.sets import CalibrationSet
from dcem.store.database import Store
from dcem.store.presets import list_presets
from dcem.synthetic.experiment import run_cell
from studio.whatif_view import STALE_NOTE, sweep_caption

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "pages" / "whatif.py")
# the six headline cards unchanged: four shares in percentage points, then the system risk and the risk
# with escalation
UNCHANGED = ["+0.0 points vs original"] * 4 + ["+0.000 vs original"] * 2


def _open(source: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[AppTest, Path]:
    db = tmp_path / "wi.duckdb"
    shutil.copy(source, db)
    monkeypatch.setenv("DCEM_DB", str(db))
    return AppTest.from_file(PAGE, default_timeout=120), db


@pytest.fixture()
def page(run_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[AppTest, Path]:
    return _open(run_db, tmp_path, monkeypatch)


def _table(at: AppTest) -> pd.DataFrame:
    return next(d.value for d in at.dataframe if "current" in d.value.columns)


def _metric(at: AppTest, name: str) -> float:
    return float(_table(at).loc[name, "current"])


def _mix(at: AppTest) -> dict[str, list[float]]:
    chart = next(c for c in at.get("plotly_chart") if "Outcome mix" in c.proto.spec)
    return {trace["name"]: trace["y"] for trace in json.loads(chart.proto.spec)["data"]}


def _assert_untouched(at: AppTest) -> None:
    assert not at.exception and not at.error
    assert [m.delta for m in at.metric] == UNCHANGED
    assert (_table(at)["change"] == 0.0).all()
    mix = _mix(at)
    assert mix["current settings"] == mix["original settings"]
    assert any(i.value.startswith("Nothing changed") for i in at.info)


def test_untouched_page_reproduces_the_run_and_one_slider_moves_a_delta(page: tuple[AppTest, Path]) -> None:
    at = page[0].run()
    _assert_untouched(at)  # the run's cells have different fitted thresholds; each keeps its own
    at.slider(key="wi_eps_safe").set_value(0.0).run()
    assert not at.exception and not at.error
    assert _table(at).loc["certified_rate", "change"] < 0
    assert [m.delta for m in at.metric] != UNCHANGED
    assert any(i.value.startswith("Set for every cell: eps_safe = 0.") and "keeps its own eps_low" in i.value
               for i in at.info)


def test_a_run_stopped_when_decided_is_flagged(clinical_db: Path, tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    at, db = _open(clinical_db, tmp_path, monkeypatch)
    at.run()
    assert not any("stopped each case" in w.value for w in at.warning)
    run = at.selectbox(key="wi_run").value
    with Store(db) as store:
        spec = json.loads(store.con.execute("SELECT spec_json FROM runs WHERE run_id = ?", [run]).fetchone()[0])
        store.con.execute("UPDATE runs SET spec_json = ? WHERE run_id = ?",
                          [json.dumps({**spec, "stop_when_decided": True}), run])
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert not at.exception
    assert any("stopped each case when D-CEM first certified or escalated it" in w.value for w in at.warning)


def test_untouched_clinical_run_shows_no_change(clinical_db: Path, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    at = _open(clinical_db, tmp_path, monkeypatch)[0].run()
    assert at.selectbox(key="wi_run").value != "ui-run"  # the newer, clinical run
    _assert_untouched(at)
    at.radio(key="wi_method").set_value("dcem_noesc").run()
    _assert_untouched(at)


def test_threshold_change_moves_the_metrics(page: tuple[AppTest, Path]) -> None:
    at = page[0].run()
    before = _metric(at, "certified_rate")
    at.slider(key="wi_eps_safe").set_value(0.0).run()
    assert not at.exception
    assert _metric(at, "certified_rate") < before or before == 0.0
    at.slider(key="wi_m_safe").set_value(3.0).run()
    assert _metric(at, "certified_rate") == 0.0  # nothing clears a margin of 3 with these losses
    assert len(at.get("plotly_chart")) == 2


def test_parameters_a_replay_cannot_use_are_disabled_with_the_reason(page: tuple[AppTest, Path]) -> None:
    at = page[0].run()
    assert not any(s.disabled for s in at.slider) and not at.selectbox(key="wi_steer_gate").disabled
    at.radio(key="wi_method").set_value("dcem_noesc").run()
    assert not at.exception and not at.error
    disabled = {s.key for s in at.slider if s.disabled}
    assert disabled == {"wi_delta", "wi_window", "wi_s_asym"}
    assert at.selectbox(key="wi_steer_gate").disabled
    captions = [c.value for c in at.caption]
    assert any(c.startswith("Disabled:") and "never checks the energy descent, so delta" in c for c in captions)
    assert any(c.startswith("Disabled:") and "so steer_gate cannot change an outcome" in c for c in captions)
    assert "delta" not in at.selectbox(key="wi_sweep_param").options
    assert [m.delta for m in at.metric] == UNCHANGED


@pytest.fixture(scope="module")
def one_round_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("one_round") / "one.duckdb"
    cell = run_cell("S1", 0, t_max=1, free_rounds=1, n_train=2000, n_eval=12, ablation=False)
    with Store(path) as store:
        store.ensure_run("one-round", kind="synthetic", spec={"test": True}, config=cell.config, seeds=[0])
        store.save_cell("one-round", cell)
        store.ledger().finish("one-round")
    return path


def test_a_one_round_run_disables_descent_steering_and_the_budget(one_round_db: Path, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    at = _open(one_round_db, tmp_path, monkeypatch)[0].run()
    _assert_untouched(at)
    assert {s.key for s in at.slider if s.disabled} == {"wi_delta", "wi_window", "wi_s_asym"}
    assert at.selectbox(key="wi_steer_gate").disabled
    budget = at.number_input(key="wi_t_max")
    assert budget.disabled and budget.value == 1
    captions = [c.value for c in at.caption]
    assert any(c.startswith("Disabled: The run stored one round, so a replay has no later round") for c in captions)
    assert any(c.startswith("Disabled: The run stored one round: a challenge there") for c in captions)


def test_reset_restores_every_setting_and_the_loss(page: tuple[AppTest, Path]) -> None:
    at = page[0].run()
    eps_safe, loss = at.slider(key="wi_eps_safe").value, np.array(at.session_state["wi_loss"])
    l_high = at.text_input(key="wi_lhigh").value
    assert float(l_high) == three_level_form(loss)[1]  # the field shows the run's own l_high
    at.slider(key="wi_eps_safe").set_value(0.0).run()
    at.slider(key="wi_t_max").set_value(3).run()
    at.text_input(key="wi_lhigh").input("30").run()
    assert _table(at).loc["risk", "change"] != 0.0
    at.button(key="wi_reset").click().run()
    assert at.slider(key="wi_eps_safe").value == eps_safe and at.slider(key="wi_t_max").value == 12
    assert at.text_input(key="wi_lhigh").value == l_high
    np.testing.assert_array_equal(at.session_state["wi_loss"], loss)
    _assert_untouched(at)
    assert any("back to the run's own" in s.value for s in at.success)


def test_l_high_and_the_matrix_never_disagree_and_a_loss_change_is_named(page: tuple[AppTest, Path]) -> None:
    at = page[0].run()
    high, l_high = three_level_form(np.array(at.session_state["wi_loss"]))
    labels = list(at.multiselect(key="wi_high").options)
    assert at.multiselect(key="wi_high").value == [labels[y] for y in high]
    at.text_input(key="wi_lhigh").input(f"{2 * l_high:g}").run()
    assert not at.exception and not at.error
    assert three_level_form(np.array(at.session_state["wi_loss"])) == (high, 2 * l_high)  # no extra button
    note = next(i.value for i in at.info if "Loss matrix set for every cell" in i.value)
    assert f"l_high = {2 * l_high:g}" in note and f"(the run's: high-risk" in note
    assert "Nothing changed" not in note and [m.delta for m in at.metric] != UNCHANGED
    cells = np.array(at.session_state["wi_loss"], dtype=float)
    cells[0, 1] = 0.25  # one cell by hand: the matrix leaves the {0, 1, l_high} form
    at.session_state["wi_loss"] = cells
    at.run()
    assert any("no longer has the {0, 1, l_high} form" in c.value for c in at.caption)
    note = next(i.value for i in at.info if "Loss matrix set for every cell" in i.value)
    assert f"costs 0.25 (was" in note and "entries changed" in note


def test_a_comma_in_the_loss_is_refused_and_the_last_valid_results_stay(page: tuple[AppTest, Path]) -> None:
    at = page[0].run()
    at.slider(key="wi_eps_safe").set_value(0.0).run()
    shown = _table(at)["current"].copy()
    assert all(w.value != STALE_NOTE for w in at.warning)
    cells = np.array(at.session_state["wi_loss"], dtype=object)
    cells[1, 0] = "2,5"  # what a person types; a numeric cell would have read it as 25
    at.session_state["wi_loss"] = cells
    at.run()
    assert not at.exception
    message = " ".join(e.value for e in at.error)
    assert "use a point as the decimal separator" in message
    labels = list(at.multiselect(key="wi_high").options)
    assert f"decision {labels[1]!r}" in message and f"true label {labels[0]!r}" in message
    assert "[1][0]" not in message and "[1, 0]" not in message
    assert any(w.value == STALE_NOTE for w in at.warning)
    pd.testing.assert_series_equal(_table(at)["current"], shown)  # the last valid results, still shown
    assert any(".st-key-wi_results" in m.value and "opacity" in m.value for m in at.markdown)
    assert at.button(key="FormSubmitter:wi_save-Save as preset").disabled


def test_invalid_thresholds_are_refused_naming_the_parameter(page: tuple[AppTest, Path]) -> None:
    at = page[0].run()
    before = _table(at)["current"].copy()
    at.slider(key="wi_eps_low").set_value(0.0).run()
    assert not at.exception
    assert any("Certification threshold eps_safe: must be smaller than eps_low" in e.value for e in at.error)
    assert any(w.value == STALE_NOTE for w in at.warning)
    pd.testing.assert_series_equal(_table(at)["current"], before)
    at.slider(key="wi_eps_low").set_value(9.0).run()  # fixed: the results update and are no longer greyed
    assert not at.error and not at.warning


def test_loss_preset_rescores_and_settings_save_as_a_preset(page: tuple[AppTest, Path]) -> None:
    at, db = page
    at.run()
    risk_before = _metric(at, "risk")
    at.text_input(key="wi_lhigh").input("30").run()
    assert not at.exception
    assert _metric(at, "risk") != risk_before  # the new loss re-scored every case
    next(t for t in at.text_input if t.label == "Preset name").set_value("strict")
    at.button(key="FormSubmitter:wi_save-Save as preset").click().run()
    assert any("Saved preset 'strict'" in s.value for s in at.success)
    with Store(db) as store:
        assert list(list_presets(store)["name"]) == ["strict"]


def test_a_shorter_round_budget_shortens_episodes(page: tuple[AppTest, Path]) -> None:
    at = page[0].run()
    before = _metric(at, "avg_rounds")
    at.slider(key="wi_t_max").set_value(2).run()
    assert not at.exception
    assert _metric(at, "avg_rounds") <= 2.0 < before


# ------------------------------------------------------------------ figures
def _calibration_set(labels: tuple[str, ...] = ("k0", "k1", "k2"), agents: tuple[str, ...] = ("A", "B"),
                     source: str = "flipped.csv") -> CalibrationSet:
    """Agents that report the next label: nothing like the run's own calibration."""
    truth = np.repeat(np.arange(len(labels)), 50)
    n = len(agents)
    return CalibrationSet(labels, agents, tuple(f"c{i}" for i in range(truth.size) for _ in range(n)),
                          np.repeat(truth, n), np.tile(np.arange(n), truth.size),
                          np.repeat((truth + 1) % len(labels), n), source)


def _tradeoff_curve(at: AppTest) -> tuple[object, object]:
    """The swept curve's x and y values (as the figure encodes them)."""
    chart = next(c for c in at.get("plotly_chart") if "swept" in c.proto.spec)
    trace = next(t for t in json.loads(chart.proto.spec)["data"] if t["name"].endswith("swept"))
    return trace["x"], trace["y"]


def test_a_matching_set_is_offered_and_moves_the_metrics_only_when_on(page: tuple[AppTest, Path]) -> None:
    at = page[0]
    at.session_state["calib_set"] = _calibration_set()
    at.run()
    toggle = at.toggle(key="wi_calib")
    assert toggle.label == "Use the loaded calibration set (flipped.csv)" and not toggle.value
    _assert_untouched(at)  # offered, not used: every delta stays 0
    at.selectbox(key="wi_sweep_param").set_value("t_max").run()
    curve = _tradeoff_curve(at)
    toggle.set_value(True).run()
    assert not at.exception and not at.error
    assert _tradeoff_curve(at) != curve  # the sweep is the calibrated run's, not the memoised own one
    assert (_table(at)["change"] != 0.0).any()
    assert [m.delta for m in at.metric] != UNCHANGED
    assert any("come from the loaded calibration set (flipped.csv)" in i.value for i in at.info)
    assert any("smoothed as the run's own were (0.5 added to each count" in c.value for c in at.caption)
    assert not any("alpha" in c.value for c in at.caption if "smoothed" in c.value)  # one alpha on the page
    at.toggle(key="wi_calib").set_value(False).run()
    _assert_untouched(at)
    assert _tradeoff_curve(at) == curve
    at.toggle(key="wi_calib").set_value(True).run()
    at.button(key="wi_reset").click().run()  # the run's own calibration again
    assert not at.toggle(key="wi_calib").value
    _assert_untouched(at)


def test_a_set_that_does_not_fit_says_why_and_offers_nothing(page: tuple[AppTest, Path]) -> None:
    at = page[0]
    at.session_state["calib_set"] = _calibration_set(("k0", "k1", "flu"), ("A", "B", "C"), "other.csv")
    at.run()
    assert not at.exception and not at.error
    assert [t.key for t in at.toggle] == ["wi_risk_on"]  # no calibration toggle offered (only risk control's)
    warning = " ".join(w.value for w in at.warning)
    assert warning.startswith("The loaded calibration set (other.csv) cannot re-score this run: the labels differ: "
                              "the set has k0, k1, flu; the run has k0, k1, k2 (only in the set: flu; only in "
                              "the run: k2); the set has 3 agents (A, B, C); the run has 2 agents per cell.")
    _assert_untouched(at)


def test_an_eps_sweep_covers_the_whole_slider_range_keeping_each_cells_order(run_db: Path) -> None:
    from dcem.analysis.whatif import PAIR_GAP, load_run_replay, pair_moves, sweep, sweep_grid

    with Store(run_db, read_only=True) as store:
        replay = load_run_replay(store, "ui-run")
    lowest_low = min(c.config.eps_low for c in replay.cells)
    grid = sweep_grid(replay, "eps_safe", {}, 0.0, 10.0)
    assert grid[0] == 0.0 and grid[-1] == 10.0  # not stopped below the lowest eps_low of the cells
    assert pair_moves(replay, {}, "eps_safe", grid) == int((grid >= lowest_low).sum()) > 0
    curve = sweep(replay, parameter="eps_safe", values=grid, changes={})
    assert curve["valid"].all()
    assert pair_moves(replay, {"eps_low": 9.0}, "eps_safe", grid) == 0  # a chosen eps_low is not moved
    low = sweep_grid(replay, "eps_low", {}, 0.0, 10.0)
    assert low[0] > 0.0 and low[0] <= min(c.config.eps_safe for c in replay.cells) + PAIR_GAP
    text = sweep_caption(curve, "eps_safe", "harmful_consensus", moved=pair_moves(replay, {}, "eps_safe", grid))
    assert "eps_low is not on the right side of eps_safe; there it is raised to just above" in text


def test_the_risk_with_escalation_stands_beside_system_risk(page: tuple[AppTest, Path]) -> None:
    """Issue 51, item 5: the headline cards, the metrics table and the per-scenario table carry
    the risk with escalation beside the escalation-free system risk, at the session's cost."""
    from studio.views.session_keys import ESCALATION_COST

    at = page[0].run()
    assert [m.label for m in at.metric][-2:] == ["System risk (escalation free)", "Risk with escalation at 0.5"]
    at.slider(key="wi_eps_safe").set_value(0.0).run()
    assert not at.exception and not at.error
    table = _table(at)
    assert table.loc["charged_risk", "metric"] == "Risk with escalation at 0.5"
    expected = table.loc["system_risk", "current"] + 0.5 * table.loc["escalation_rate", "current"] / 100
    assert table.loc["charged_risk", "current"] == pytest.approx(expected)
    assert table.loc["escalation_rate", "current"] > 0  # so the charge shows
    scenarios = next(d for d in at.dataframe if "n_cases" in d.value.columns)
    order = list(scenarios.value.columns)
    assert order[order.index("system_risk") + 1] == "charged_risk"
    assert json.loads(scenarios.proto.columns)["charged_risk"]["label"] == "Risk with escalation at 0.5"
    at.session_state[ESCALATION_COST] = 2.0  # as the Overview's or the Experiments page's input sets it
    at.run()
    table = _table(at)
    assert table.loc["charged_risk", "metric"] == "Risk with escalation at 2"
    expected = table.loc["system_risk", "current"] + 2.0 * table.loc["escalation_rate", "current"] / 100
    assert table.loc["charged_risk", "current"] == pytest.approx(expected)
