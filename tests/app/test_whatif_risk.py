"""The what-if page's "Thresholds with a guarantee": each cell's LTT choice on half its
stored cases, measured on the other half, beside the run's own thresholds; the section
refuses D-CEM without escalation and bad input with a message."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from common.errors import InputError
from dcem.analysis.run_replay import load_run_replay
from dcem.analysis.whatif_risk import cells_worst_first, guarantee_counts, pooled_risk_control, risk_control_cells
from dcem.calibration.risk_control import RiskTarget, config_outcomes, mediator_states
from dcem.store.database import Store
from studio.views.risk_view import cell_curve, cell_label, risk_summary, risk_table

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "whatif.py")


@pytest.fixture()
def page(run_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AppTest:
    db = tmp_path / "wi.duckdb"
    shutil.copy(run_db, db)
    monkeypatch.setenv("DCEM_DB", str(db))
    return AppTest.from_file(PAGE, default_timeout=120)


def test_the_section_computes_only_when_asked_and_then_shows_every_cell(page: AppTest) -> None:
    at = page.run()
    assert not at.exception and at.toggle(key="wi_risk_on").value is False
    assert not any("cells found a setting" in i.value for i in at.info)
    at.toggle(key="wi_risk_on").set_value(True).run()
    at.selectbox(key="wi_risk").set_value("system_risk").run()
    at.number_input(key="wi_risk_alpha").set_value(0.6).run()
    assert not at.exception and not at.error
    summary = next(i.value for i in at.info if "cells found a setting" in i.value)
    assert "of 2 cells" in summary and "at most 0.6" in summary
    table = next(d.value for d in at.dataframe if "test_rate" in d.value.columns)
    assert sorted(table["cell"].tolist()) == ["S1 / seed 0", "S3b / seed 0"] and (table["split"] == "12 / 12").all()
    assert not table.isna().any().any() and "None" not in table.to_numpy().astype(str)
    chart = next(c for c in at.get("plotly_chart") if "passed the test" in c.proto.spec)
    names = [t["name"] for t in json.loads(chart.proto.spec)["data"]]
    assert "run's thresholds, TEST half" in names
    assert any("With probability at least 90.0%" in c.value or "No setting" in c.value for c in at.caption)


def test_a_conditional_rate_takes_bonferroni_and_no_escalation_is_refused(page: AppTest) -> None:
    at = page.run()
    at.toggle(key="wi_risk_on").set_value(True).run()
    at.selectbox(key="wi_risk").set_value("harmful_among_decided").run()
    assert at.radio(key="wi_risk_fwer").disabled and not at.exception and not at.error
    at.radio(key="wi_method").set_value("dcem_noesc").run()
    assert any("pick the method D-CEM" in i.value for i in at.info) and not at.exception


def test_each_cell_is_split_the_same_way_every_time_and_own_rates_replay(run_db: Path) -> None:
    with Store(run_db, read_only=True) as store:
        replay = load_run_replay(store, "ui-run")
        noesc = load_run_replay(store, "ui-run", "dcem_noesc")
    target = RiskTarget(risk="system_risk", alpha=0.6)
    first, again = risk_control_cells(replay, target), risk_control_cells(replay, target)
    assert [(c.test_rate, c.own_rate, c.fit.chosen_lambda) for c in first] == \
        [(c.test_rate, c.own_rate, c.fit.chosen_lambda) for c in again]
    other = risk_control_cells(replay, target, seed=1)
    assert [c.own_rate for c in other] != [c.own_rate for c in first] or \
        [c.fit.report["cal_rate"] for c in other] != [c.fit.report["cal_rate"] for c in first]
    cell, data = first[0], replay.cells[0]
    assert cell.n_cal + cell.n_test == len(data.truth)
    # the TEST half is the second half of the cell's seeded permutation, scored as the whole cell would be
    states = mediator_states(data.panel, data.reports, data.probabilities, data.config)
    decided, _, loss = config_outcomes(data.panel, states, np.asarray(data.truth), data.high_risk, data.config)
    n = len(data.truth)
    test = np.sort(np.random.default_rng([0, 0]).permutation(n)[n // 2:])
    assert cell.own_decided == pytest.approx(decided[test].mean()) and cell.own_rate == pytest.approx(loss[test].mean())
    pooled = pooled_risk_control(first)
    assert pooled["cells"] == 2 and 0 <= pooled["test_decided"] <= 1
    assert risk_table(first).shape[0] == 2 and "of 2 cells" in risk_summary(first, target)
    curve = cell_curve(cell)
    assert len(curve["rate"]) == len(target.lambdas) and curve["own"] == (cell.own_decided, cell.own_rate)
    with pytest.raises(InputError) as info:
        risk_control_cells(noesc, target)
    assert info.value.field == "method"


def test_the_guarantee_inputs_do_not_share_the_policys_names_and_shares_read_in_percent(page: AppTest) -> None:
    at = page.run()
    policy = {s.label for s in at.slider}
    assert {"alpha", "delta"} <= policy  # the mediator's energy weight and required descent
    at.toggle(key="wi_risk_on").set_value(True).run()
    labels = [n.label for n in at.number_input]
    assert "Rate bound (% of cases)" in labels and "Chance the bound fails (%)" in labels
    assert not any(label.split()[0] in ("alpha", "delta") for label in labels)
    at.number_input(key="wi_risk_alpha_pct").set_value(0.1).run()  # a bound no level can be shown to keep
    assert not at.exception and not at.error
    summary = next(i.value for i in at.info if "cells found a setting" in i.value)
    assert "at most 0.1% with probability at least 90.0%" in summary and "rate of 0." not in summary
    table = next(d.value for d in at.dataframe if "test_rate" in d.value.columns)
    assert set(table["level"]) == {"none passed"} and set(table["guarantee"]) == {"no: all escalated"}
    assert all(v.endswith("%") for v in table["test_rate"]) and "None" not in table.to_numpy().astype(str)
    assert any(c.value.startswith("No setting could be shown to keep") and "at most 0.1%" in c.value
               for c in at.caption)


def test_cells_are_reported_one_by_one_worst_first_and_those_where_nothing_passed_apart(run_db: Path) -> None:
    """Issue 51, item 6: the promise is per cell, so the section orders the cells where a
    level passed by their TEST rate, worst first, counts those above the bound, and keeps
    the cells where nothing passed (every case escalated) apart instead of pooling them."""
    with Store(run_db, read_only=True) as store:
        replay = load_run_replay(store, "ui-run")
    for alpha in (0.6, 0.9, 0.001):
        target = RiskTarget(risk="system_risk", alpha=alpha)
        cells = risk_control_cells(replay, target)
        ordered = cells_worst_first(cells)
        assert sorted(map(id, ordered)) == sorted(map(id, cells))
        passed = [c.fit.guaranteed for c in ordered]
        assert passed == sorted(passed, reverse=True)  # every passed cell before every cell where none passed
        rates = [c.test_rate for c in ordered if c.fit.guaranteed]
        assert rates == sorted(rates, reverse=True)
        counts = guarantee_counts(cells, target)
        assert counts["passed"] + counts["none_passed"] == counts["cells"] == len(cells)
        assert counts["above"] == sum(c.fit.guaranteed and c.test_rate > alpha for c in cells)
        table = risk_table(cells)
        assert table["cell"].tolist() == [cell_label(c) for c in ordered]
        assert (table["above"] == "none passed").sum() == counts["none_passed"]
        summary = risk_summary(cells, target)
        assert summary.startswith(f"{counts['passed']} of {len(cells)} cells found a setting")
        assert ("every case is escalated, so their rate of 0 shows nothing" in summary) == bool(counts["none_passed"])
        assert ("The promise is per cell" in summary) == bool(counts["passed"])
    assert guarantee_counts(risk_control_cells(replay, RiskTarget(risk="system_risk", alpha=0.001)),
                            RiskTarget(risk="system_risk", alpha=0.001))["worst"] is None
