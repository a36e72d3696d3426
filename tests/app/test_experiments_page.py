"""Experiments page: results views, launching a run, comparing runs, downloads."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from dcem.store.database import Store
from studio.experiment_charts import comparison_figure, round_curve_figure
from studio.experiment_tables import DIFFERENCE

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "pages" / "experiments.py")


def test_results_views_and_metric_switch(run_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DCEM_DB", str(run_db))
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not at.exception
    charts = at.get("plotly_chart")
    assert len(charts) == 3  # Fig. 3 bars and the two Fig. 2 curves
    first = charts[0].proto.spec
    at.selectbox(key="exp_metric").set_value("escalation_rate").run()
    assert at.get("plotly_chart")[0].proto.spec != first
    assert len(at.get("download_button")) == 2
    assert any("Pick a different run" in c.value for c in at.caption)


def _copy(run_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> Path:
    db = tmp_path / name
    shutil.copy(run_db, db)
    monkeypatch.setenv("DCEM_DB", str(db))
    return db


def _run_count(db: Path) -> int:
    with Store(db) as store:
        return len(store.runs())


def test_launch_a_run_then_compare(run_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = _copy(run_db, tmp_path, monkeypatch, "copy.duckdb")
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    at.multiselect(key="exp_scen").set_value(["S1"]).run()
    at.text_input(key="exp_seeds").input("1").run()
    at.text_input(key="exp_t").input("6").run()
    at.radio(key="exp_world").set_value("sharpened").run()
    at.radio(key="exp_comp").set_value("blend").run()
    assert any(c.value.startswith("1 cell: 1 scenario × 1 seed.") for c in at.caption)
    at.button(key="exp_run").click().run()
    assert not at.exception
    assert any("1 cell computed, 0 already stored" in s.value for s in at.success)
    with Store(db) as store:
        assert len(store.runs()) == 2
        new_run = store.latest_run()
        spec = json.loads(store.con.execute("SELECT spec_json FROM runs ORDER BY created_at DESC LIMIT 1").fetchone()[0])
    assert spec["sharpness"] == 3.0 and spec["compliance"] == "blend" and spec["t_max"] == 6  # what was shown
    assert at.session_state["current_run"] == new_run
    assert at.selectbox(key="exp_view_run").value == new_run  # the new run is shown at once
    at.selectbox(key="exp_other").set_value("ui-run").run()
    assert not at.exception
    assert any(c.value.startswith("1 cell: 1 scenario × 1 seed; all already stored") for c in at.caption)
    assert any("cases changed outcome" in m.value for m in at.markdown)
    deltas = next(d.value for d in at.dataframe if DIFFERENCE in d.value.columns)
    assert "dcem" not in set(deltas["method"]) and "D-CEM" in set(deltas["method"])  # words, not code names
    assert "Escalated" in set(deltas["metric"]) and "escalation_rate" not in set(deltas["metric"])
    assert set(deltas.loc[deltas["metric"] == "Escalated", "unit"]) == {"% of cases"}
    changed = next(d.value for d in at.dataframe if "case" in d.value.columns)
    assert f"outcome in {new_run}" in changed.columns
    assert set(changed[f"outcome in {new_run}"]) <= {"decided", "escalated to a human"}
    assert at.selectbox(key="exp_metric").format_func("escalation_rate") == "Escalated"


def test_a_learn_then_test_launch_stores_its_target_and_promise(run_db: Path, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    db = _copy(run_db, tmp_path, monkeypatch, "ltt.duckdb")
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    assert at.radio(key="exp_fit").value == "eq1"  # eq. (1) unless asked
    at.multiselect(key="exp_scen").set_value(["S1"]).run()
    at.text_input(key="exp_seeds").input("1").run()
    at.radio(key="exp_fit").set_value("ltt").run()
    at.selectbox(key="exp_risk").set_value("system_risk").run()
    at.number_input(key="exp_risk_alpha").set_value(0.3).run()
    assert not at.exception and not at.error
    at.button(key="exp_run").click().run()
    assert not at.exception and any("1 cell computed" in s.value for s in at.success)
    with Store(db) as store:
        run_id = store.latest_run()
        spec = json.loads(store.con.execute("SELECT spec_json FROM runs WHERE run_id = ?", [run_id]).fetchone()[0])
        info = json.loads(store.con.execute("SELECT info_json FROM cells WHERE run_id = ?", [run_id]).fetchone()[0])
    assert spec["risk_target"]["risk"] == "system_risk" and spec["risk_target"]["alpha"] == 0.3
    assert info["threshold_fit"]["method"] == "ltt" and "at most 0.3" in info["threshold_fit"]["statement"]


def test_charts_title_their_axes_and_keep_legends_above() -> None:
    table = pd.DataFrame({"scenario": ["S1", "S1"], "method": ["dcem", "pool"], "metric": ["accuracy"] * 2,
                          "mean": [0.5, 0.4], "std": [0.1, 0.1]})
    fig = comparison_figure(table, "accuracy")
    assert fig.layout.title.text == "Accuracy" and fig.layout.yaxis.title.text == "Accuracy (% of cases)"
    assert fig.layout.yaxis.tickformat == ".0%" and fig.layout.legend.y > 1
    assert [t.name for t in fig.data] == ["D-CEM", "Fixed log pool"]
    curves = pd.DataFrame({"scenario": ["S1", "S1"], "round": [1, 2], "energy": [2.0, 1.0], "energy_std": [0.1, 0.1]})
    curve = round_curve_figure(curves, "energy", "D-CEM energy per round")
    assert curve.layout.yaxis.title.text == "energy" and curve.layout.xaxis.title.text == "round"
    assert curve.layout.legend.y > 1 and curve.layout.legend.yanchor == "bottom"  # clear of the round title
    assert curve.layout.yaxis.range is None  # energy: the data's range
    shares = pd.DataFrame({"scenario": ["S1"] * 2, "round": [1, 2], "accuracy": [0.8, 0.8], "accuracy_std": [0.0] * 2})
    assert tuple(round_curve_figure(shares, "accuracy", "t").layout.yaxis.range) == (0.0, 1.02)  # never past 100 %


def test_the_cell_count_follows_the_fields(run_db: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DCEM_DB", str(run_db))
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert any(c.value.startswith("12 cells: 4 scenarios × 3 seeds.") for c in at.caption)
    at.multiselect(key="exp_scen").set_value(["S1", "S2"]).run()
    at.text_input(key="exp_seeds").input("5").run()
    at.checkbox(key="exp_abl").check().run()
    assert any(c.value.startswith("10 cells: 2 scenarios × 5 seeds.") and "not cells" in c.value
               for c in at.caption)


@pytest.mark.parametrize(("key", "typed", "words"), [
    ("exp_seeds", "abc", "Seeds: “abc” is not a whole number: enter a whole number from 1 to 50."),
    ("exp_seeds", "2,5", "Seeds: “2,5” is not a whole number (no commas or decimal points)"),
    ("exp_seeds", "0", "Seeds must be from 1 to 50; got 0."),
    ("exp_t", "31", "Round budget T must be from 2 to 30; got 31."),
])
def test_an_invalid_field_blocks_run(run_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     key: str, typed: str, words: str) -> None:
    db = _copy(run_db, tmp_path, monkeypatch, "invalid.duckdb")
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    at.multiselect(key="exp_scen").set_value(["S1"]).run()
    at.text_input(key=key).input(typed).run()
    assert not at.exception
    assert any(e.value.startswith(words) for e in at.error), [e.value for e in at.error]
    assert at.button(key="exp_run").disabled
    assert not at.success and _run_count(db) == 1


def test_bad_launch_settings_are_refused(run_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = _copy(run_db, tmp_path, monkeypatch, "copy2.duckdb")
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    at.multiselect(key="exp_scen").set_value([]).run()
    assert at.button(key="exp_run").disabled and not at.exception
    assert any("choose at least one scenario" in e.value for e in at.error)
    assert _run_count(db) == 1


def test_stop_keeps_the_page_and_says_how_far_the_run_got(run_db: Path, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Streamlit interrupts a launch inside the progress callback when a control is
    pressed; here the interruption comes after the first of two cells."""
    from streamlit.runtime.scriptrunner_utils.exceptions import RerunException
    from streamlit.runtime.scriptrunner_utils.script_requests import RerunData

    import dcem.synthetic.spec as spec_module

    db = _copy(run_db, tmp_path, monkeypatch, "stop.duckdb")
    real = spec_module.run_synthetic

    def interrupted(store, spec, *, progress, **kw):  # type: ignore[no-untyped-def]
        def tick(done: int, total: int, label: str) -> None:
            progress(done, total, label)
            if done == 1:
                raise RerunException(RerunData())  # what pressing Stop (any control) does
        return real(store, spec, progress=tick, **kw)

    monkeypatch.setattr(spec_module, "run_synthetic", interrupted)
    at = AppTest.from_file(PAGE, default_timeout=120).run()
    at.multiselect(key="exp_scen").set_value(["S1"]).run()
    at.text_input(key="exp_seeds").input("2").run()
    at.text_input(key="exp_t").input("6").run()
    at.button(key="exp_run").click().run()  # interrupted, then rerun as the pressed control asks
    assert not at.exception
    assert [w.value for w in at.warning] == ["Stopped after 1 of 2 cells — run again to resume."]
    with Store(db) as store:
        stopped = store.latest_run()
        assert len(store.done_cells(stopped)) == 1
    assert at.selectbox(key="exp_view_run").value == stopped and len(at.get("plotly_chart")) == 3
    assert any("1 already stored, Run computes 1" in c.value for c in at.caption)
    monkeypatch.setattr(spec_module, "run_synthetic", real)
    at.button(key="exp_run").click().run()
    assert not at.exception and not at.warning
    assert any(f"Run {stopped}: 1 cell computed, 1 already stored." == s.value for s in at.success)
    with Store(db) as store:
        assert len(store.done_cells(stopped)) == 2 and len(store.runs()) == 2


def test_the_risk_with_escalation_stands_beside_system_risk(run_db: Path, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 51, item 5: the chart's metric list and the run comparison carry the risk with
    escalation charged at the page's stated cost, named apart from the escalation-free one."""
    from tests.dcem.test_store import fake_result

    db = _copy(run_db, tmp_path, monkeypatch, "charged.duckdb")
    with Store(db) as store:
        result = fake_result()
        store.ensure_run("other-run", kind="synthetic", spec={}, config=result.config, seeds=[0])
        store.save_cell("other-run", result)
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not at.exception
    select = at.selectbox(key="exp_metric")
    assert select.options.index("Risk with escalation at 0.5") == select.options.index("System risk (escalation free)") + 1
    select.set_value("charged_risk").run()
    assert "Risk with escalation at 0.5" in at.get("plotly_chart")[0].proto.spec
    at.selectbox(key="exp_view_run").set_value("ui-run").run()
    at.selectbox(key="exp_other").set_value("other-run").run()
    assert not at.exception
    deltas = next(d.value for d in at.dataframe if DIFFERENCE in d.value.columns)
    assert {"System risk (escalation free)", "Risk with escalation at 0.5"} <= set(deltas["metric"])
    at.number_input(key="exp_escalation_cost").set_value(1.0).run()
    assert not at.exception
    deltas = next(d.value for d in at.dataframe if DIFFERENCE in d.value.columns)
    charged = deltas[deltas["metric"] == "Risk with escalation at 1"].set_index(["scenario", "method"])
    free = deltas[deltas["metric"] == "System risk (escalation free)"].set_index(["scenario", "method"])
    escalated = deltas[deltas["metric"] == "Escalated"].set_index(["scenario", "method"])
    assert len(charged) == len(free) > 0
    assert ((charged["ui-run"] - free["ui-run"] - escalated["ui-run"] / 100).abs() < 1e-9).all()
    assert "Risk with escalation at 1" in at.get("plotly_chart")[0].proto.spec
