"""One flow across three pages: a stored run's reports loaded without their labels
(Calibration sets), escalations reviewed and their labels given to the set's cases
(Escalation review), the run re-scored with the set (Loss and thresholds).  The set passes
between the pages in session state, as it does in the browser.  The run is the shipped
panel of three (two agents' reports alone are refused: issue 51)."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from dcem.store.database import Store
from dcem.store.demo import TRIO_EXPORT
from dcem.store.run_export import load_run_export
from dcem.store.run_import import import_run_export

ROOT = Path(__file__).resolve().parents[2]
TRIO = load_run_export(TRIO_EXPORT).run_ids[0]
CELL = ("S1", 1)  # 13 of its 100 cases escalated; its estimate without labels passes every check


def _page(name: str) -> AppTest:
    # a wait, not a speed check: the panel of three's estimate runs crowd-kit's EM in the page
    return AppTest.from_file(str(ROOT / "pages" / f"{name}.py"), default_timeout=300)


@pytest.fixture()
def db(run_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "flow.duckdb"
    shutil.copy(run_db, path)
    with Store(path) as store:
        import_run_export(store, TRIO_EXPORT)
    monkeypatch.setenv("DCEM_DB", str(path))
    monkeypatch.setenv("DCEM_DEMO", "0")
    return path


def _review(at: AppTest, case: str, label: str) -> None:
    at.selectbox(key="rv_case").set_value(case).run()
    at.selectbox(key="rv_label").set_value(label)
    at.text_input(key="rv_reviewer").set_value("dr flow")
    at.button(key="FormSubmitter:rv_form-Record review").click().run()
    assert not at.error, [e.value for e in at.error]


def test_reviewed_escalations_label_an_unlabelled_set_that_then_re_scores_the_run(db: Path) -> None:
    calib = _page("calibration")
    calib.session_state["calib_run"] = TRIO
    calib.run()
    calib.radio[0].set_value("Stored run").run()
    next(s for s in calib.selectbox if s.label == "Cell").set_value(CELL).run()
    calib.checkbox(key="calib_run_unlabelled").check().run()
    calib.button[0].click().run()
    assert not calib.error, [e.value for e in calib.error]
    unlabelled = calib.session_state["calib_set"]
    assert unlabelled.estimator == "dawid-skene" and int(unlabelled.class_counts().sum()) == 0
    assert unlabelled.n_agents == 3 and unlabelled.n_cases == 100

    review = _page("review")
    review.session_state["rv_run"] = TRIO
    review.session_state["calib_set"] = unlabelled
    review.run()
    queue = next(d.value for d in review.dataframe if "why" in d.value.columns)
    held = [c for c in queue["case_id"] if c in set(unlabelled.case_ids)][:2]
    assert len(held) == 2  # the set is one cell's cases; the queue has escalations of every cell
    label = unlabelled.labels[1]
    for case in held:
        _review(review, case, label)
    next(b for b in review.button if b.label.startswith("Add reviewed")).click().run()
    assert not review.error, [e.value for e in review.error]
    message = next(s.value for s in review.success if "calibration set has" in s.value)
    assert message.startswith("2 reviewed cases of the set now have the reviewer's label")
    labelled = review.session_state["calib_set"]
    assert labelled.estimator == "dawid-skene" and int(labelled.class_counts().sum()) == 2
    truth = dict(zip(labelled.case_ids, labelled.truth.tolist()))
    assert [labelled.labels[truth[c]] for c in held] == [label, label]
    assert not np.allclose(labelled.confusion(), unlabelled.confusion())  # estimated again with the labels

    whatif = _page("whatif")
    whatif.session_state["wi_run"] = TRIO
    whatif.session_state["calib_set"] = labelled
    whatif.run()
    toggle = whatif.toggle(key="wi_calib")
    assert toggle.label.startswith(f"Use the loaded calibration set (run {TRIO} S1/seed 1: round-1 dcem reports")
    assert toggle.label.endswith(f"+ reviews of run {TRIO})")
    toggle.set_value(True).run()
    assert not whatif.exception and not whatif.error
    assert [m.delta for m in whatif.metric] != ["+0.0 points vs original"] * 4 + ["+0.000 vs original"]
    assert any(c.value.startswith("Confusions and prior estimated without labels by Dawid-Skene (a full matrix per "
                                  "agent) from the reports on") and "the 2 labelled cases are fixed"
               in c.value for c in whatif.caption)
