"""What-if page, the loss above the results (issue 51, item 12): l_high typed as text is
read strictly (``abc`` refused, the last valid value kept), the high-risk classes are the
page's own and survive l_high = 1, Reset also empties the loss editor the browser keeps
cells in, and a changed loss says that the run's thresholds were fitted under another
loss and offers thresholds refitted for it."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from common.loss import three_level_form, three_level_loss
from studio.views.loss_input import parse_l_high, three_level_fields
from studio.whatif_refit import STALE_THRESHOLDS

PAGE = str(Path(__file__).resolve().parents[2] / "pages" / "whatif.py")


@pytest.fixture()
def page(run_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AppTest:
    db = tmp_path / "wi.duckdb"
    shutil.copy(run_db, db)
    monkeypatch.setenv("DCEM_DB", str(db))
    return AppTest.from_file(PAGE, default_timeout=120)


def _loss(at: AppTest) -> np.ndarray:
    return np.array(at.session_state["wi_loss"], dtype=float)


def _metric(at: AppTest, name: str) -> float:
    return float(next(d.value for d in at.dataframe if "current" in d.value.columns).loc[name, "current"])


def _editor_id(at: AppTest) -> str:
    return next(d.proto.id for d in at.dataframe if "wi_loss_editor" in d.proto.id)


def _browser_run(at: AppTest, typed: dict[str, dict[str, dict[str, str]]]) -> AppTest:
    """One script run as a browser asks for it: every widget's value, plus the cells typed
    into a loss editor (``typed``: the editor's element id -> its edited rows), sent for as
    long as an editor of that id is on the page -- a browser keeps a keyed table editor's
    cells while the editor's key and columns stay the same, whatever the server forgot."""
    states = at._tree.get_widget_states()
    shown = {d.proto.id for d in at.dataframe}
    for element_id, rows in typed.items():
        if element_id in shown:
            state = states.widgets.add()
            state.id = element_id
            state.string_value = json.dumps({"edited_rows": rows, "added_rows": [], "deleted_rows": []})
    return at._run(states)


def test_text_typed_into_l_high_is_refused_and_the_last_value_stays(page: AppTest) -> None:
    at = page.run()
    loss, kept = _loss(at), at.text_input(key="wi_lhigh").value
    for typed in ("abc", "", "1e999", "-2", "2,5"):
        at.text_input(key="wi_lhigh").input(typed).run()
        assert not at.exception
        message = " ".join(e.value for e in at.error)
        assert message.startswith("l_high: ") and message.endswith(f"It stays {kept}."), (typed, message)
        assert at.text_input(key="wi_lhigh").value == kept  # the field shows the value in force
        np.testing.assert_array_equal(_loss(at), loss)  # a high-risk miss never became free
    at.text_input(key="wi_lhigh").input("abc").run()
    assert any("'abc' is not a number" in e.value for e in at.error)
    at.text_input(key="wi_lhigh").input(" 7.5 ").run()
    assert not at.error and at.text_input(key="wi_lhigh").value == "7.5"
    assert three_level_form(_loss(at))[1] == 7.5


def test_the_high_risk_classes_survive_l_high_1_and_50_then_applies(page: AppTest) -> None:
    at = page.run()
    high = at.multiselect(key="wi_high").value
    labels = list(at.multiselect(key="wi_high").options)
    assert high, "the run's matrix names high-risk classes"
    at.text_input(key="wi_lhigh").input("1").run()
    assert not at.exception and not at.error
    assert at.multiselect(key="wi_high").value == high  # kept, though every miss now costs 1
    assert (_loss(at)[~np.eye(len(labels), dtype=bool)] == 1.0).all()
    risk_at_1 = _metric(at, "risk")
    at.text_input(key="wi_lhigh").input("50").run()
    assert not at.exception and not at.error
    assert at.text_input(key="wi_lhigh").value == "50"
    want = three_level_loss(len(labels), [labels.index(h) for h in high], 50.0)
    np.testing.assert_array_equal(_loss(at), want)  # the field and the matrix agree
    assert _metric(at, "risk") != risk_at_1
    note = next(i.value for i in at.info if "Loss matrix set for every cell" in i.value)
    assert "at l_high = 50" in note
    at.multiselect(key="wi_high").set_value([]).run()
    assert any("l_high changes nothing" in c.value for c in at.caption)


def test_reset_empties_the_loss_editor_the_browser_keeps_cells_in(page: AppTest) -> None:
    at = page.run()
    labels = list(at.multiselect(key="wi_high").options)
    typed = {_editor_id(at): {"0": {labels[1]: "1e999"}}}
    _browser_run(at, typed)
    assert any("'1e999' is too large" in e.value for e in at.error)
    at.button(key="wi_reset").click()
    _browser_run(at, typed)
    assert not at.exception and not at.error
    assert any("back to the run's own" in s.value for s in at.success)
    assert _editor_id(at) not in typed  # a new editor: the browser drops the typed cells
    at.text_input(key="wi_lhigh").input("4")
    _browser_run(at, typed)  # the next change: the bad cell does not come back
    assert not at.exception and not at.error
    assert three_level_form(_loss(at))[1] == 4.0


def test_a_changed_loss_says_the_thresholds_were_fitted_for_another_and_offers_a_refit(page: AppTest) -> None:
    at = page.run()
    assert STALE_THRESHOLDS not in [w.value for w in at.warning]
    assert not [t for t in at.toggle if t.key == "wi_refit"]
    at.text_input(key="wi_lhigh").input("30").run()
    assert STALE_THRESHOLDS in [w.value for w in at.warning]
    toggle = at.toggle(key="wi_refit")
    assert toggle.label == "Refit the thresholds for this loss" and not toggle.value
    escalated = _metric(at, "escalation_rate")
    toggle.set_value(True).run()
    assert not at.exception and not at.error
    note = next(i.value for i in at.info if i.value.startswith("Thresholds refitted by eq. (1)"))
    assert "half of each cell's stored cases" in note and "store keeps only TEST trajectories" in note
    assert "held-out cases): escalated" in note and "refitted" in note
    assert _metric(at, "escalation_rate") != escalated  # the refitted thresholds re-score the run
    at.text_input(key="wi_lhigh").input(at.text_input(key="wi_lhigh").value).run()  # same loss: kept on
    assert at.toggle(key="wi_refit").value
    at.button(key="wi_reset").click().run()
    assert not [t for t in at.toggle if t.key == "wi_refit"]
    assert STALE_THRESHOLDS not in [w.value for w in at.warning]


def test_l_high_parsing_and_the_fields_of_a_matrix() -> None:
    assert parse_l_high(" 2.5 ") == 2.5 and parse_l_high("0") == 0.0
    for bad in ("abc", "", None, "inf", "1e999", "-1", "2,5"):
        with pytest.raises(Exception) as info:
            parse_l_high(bad)
        assert getattr(info.value, "field", None) == "l_high"
    ones = three_level_loss(3, [0, 2], 1.0)
    assert three_level_fields(ones, [0, 2], 1.0) == ([0, 2], 1.0, True)  # the classes survive l_high = 1
    assert three_level_fields(ones, [0, 2], 5.0) == ([0, 2], 1.0, True)  # a matrix of ones: l_high 1
    assert three_level_fields(three_level_loss(3, [1], 4.0), [0], 2.0) == ([1], 4.0, True)  # a new form wins
    edited = three_level_loss(3, [1], 4.0)
    edited[0, 2] = 0.25
    assert three_level_fields(edited, [1], 4.0) == ([1], 4.0, False)
